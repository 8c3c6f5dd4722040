// Package integration tests this module's callbacks under the real Pulumi
// CLI: `pulumi up`, `preview` and `destroy` run programs of this module
// (programs/*, and the README's example as written), with a stand-in for
// the pulumi-random provider (providers/random), and the tests assert on
// what a user sees: the CLI's output and the state `pulumi stack export`
// shows.
//
// The tests need `pulumi` and `pulumi-language-go` on PATH and skip without
// them; from the repository root,
//
//	export PATH="$(../shared/engine/install.sh "$HOME/.cache/pulumi-engine-3.274.1" 3.274.1):$PATH"
//
// puts the newest release shipped beside the repository there (without
// the directory and version, install.sh installs 3.260.0). They pass under
// either: where the engines differ, a test reads the CLI's release
// ([clitest.EngineVersion]) and says which behaves how, and the
// differential test plays that release on the simulator. Each test runs in an
// environment of its own (package clitest) and downloads nothing.
package integration
