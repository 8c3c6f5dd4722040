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
//	export PATH="$(../shared/engine/install.sh "$HOME/.cache/pulumi-engine"):$PATH"
//
// puts the ones shipped beside the repository there. Each test runs in an
// environment of its own (package clitest) and downloads nothing.
package integration
