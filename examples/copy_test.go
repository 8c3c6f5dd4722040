// Package examples holds no code: each directory below it is a complete
// program, and this test checks that each one builds when copied alone into a
// new module whose only dependency is github.com/langhost/callbacks.
package examples

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExampleBuildsWhenCopiedAlone copies each example directory into a
// new module and builds and vets it, tests included, as a new user's program
// would be, and runs the tests of those in runOnNewest. The copy's go.mod
// starts empty but for a replace of this module by the repository root
// (which stands in for the published module), `go get
// github.com/pulumi/pulumi/sdk/v3` adds the SDK with no version, so the
// newest release the module proxy serves, and `go mod tidy` adds this module
// and everything else. Nothing pins the SDK to this module's floor, so an
// SDK release this module does not compile against, or whose unexported
// state program reads otherwise, fails here. An example that imports an
// internal package of this module fails here too.
//
// The go commands reach the module proxy and the checksum database, as a
// user's do; the test skips if the proxy cannot answer which SDK release is
// the newest.
//
// The builds are separate go commands, which the race detector does not
// reach: under -race the test would check nothing more, while a cold build
// cache makes it the slowest test of the module. It runs without -race
// (see skipUnderRace).
func TestEveryExampleBuildsWhenCopiedAlone(t *testing.T) {
	skipUnderRace(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	newest, err := goOutput(goBin, ".", env, "list", "-m", "-f", "{{.Version}}", sdkModule+"@latest")
	if err != nil {
		t.Skipf("the module proxy cannot say which release of %s is the newest, so a new user's go get cannot be played: %v", sdkModule, err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" || e.Name() == "testdata" {
			continue
		}
		found++
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(name)); err != nil {
				t.Fatal(err)
			}
			mod := "module example.com/" + name + "\n\ngo 1.26\n\n" +
				"replace github.com/langhost/callbacks => " + root + "\n"
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"get", sdkModule}, {"mod", "tidy"}} {
				if _, err := goOutput(goBin, dir, env, args...); err != nil {
					t.Fatalf("go %s in a copy of examples/%s: %v", strings.Join(args, " "), name, err)
				}
			}
			got, err := goOutput(goBin, dir, env, "list", "-m", "-f", "{{.Version}}", sdkModule)
			if err != nil {
				t.Fatal(err)
			}
			if got != newest {
				t.Fatalf("a copy of examples/%s resolves %s %s, want the newest release, %s", name, sdkModule, got, newest)
			}
			// Built as pulumi-language-go builds programs, and vetted
			// with the same -trimpath, so that the dependencies are
			// compiled once, for this test, examples/readme's and the
			// conformance kit's, which build the same way.
			steps := [][]string{{"build", "-trimpath", "-ldflags", "-w -s", "./..."}, {"vet", "-trimpath", "./..."}}
			if runOnNewest[name] {
				steps = append(steps, []string{"test", "-trimpath", "-count=1", "./..."})
			}
			for _, args := range steps {
				if _, err := goOutput(goBin, dir, env, args...); err != nil {
					t.Fatalf("go %s in a copy of examples/%s (%s %s): %v", strings.Join(args, " "), name, sdkModule, newest, err)
				}
			}
		})
	}
	if found < 4 {
		t.Errorf("found %d examples, want at least 4", found)
	}
}

// runOnNewest are the examples whose tests are also run in their copies, on
// the newest SDK: between them they run every access of program's to the
// SDK's unexported state (program/sdkstate.go) against the simulator:
// readme a context's run information (program.Monitor) and a hook's
// registration record (program.Hooks), migrations the SDK's callback server
// (program.Migrations). The others need the real engine, or add nothing to
// what the SDK is asked.
var runOnNewest = map[string]bool{"readme": true, "migrations": true}

// sdkModule is the Pulumi Go SDK, which a user's program requires beside
// this module.
const sdkModule = "github.com/pulumi/pulumi/sdk/v3"

// goOutput runs the go command with args in dir and returns its standard
// output, trimmed; its error includes what it printed.
func goOutput(goBin, dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// runWithoutRace is the command that runs the tests skipUnderRace skips.
const runWithoutRace = "go test -run '^TestEveryExampleBuildsWhenCopiedAlone$' ./examples"

// skipUnderRace skips a test whose work happens in other go commands, which
// the race detector does not reach, when the tests were built with it.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skipf("its builds run in go commands of their own, which -race does not reach; it runs without -race: %s", runWithoutRace)
	}
}

// TestReadmeShowsTheReadmeExample keeps the README's first example identical
// to examples/readme/main.go, which the tests compile and run.
func TestReadmeShowsTheReadmeExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("readme", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	const section, open, end = "\n## A small example\n", "\n```go\n", "\n```\n"
	_, rest, ok := bytes.Cut(readme, []byte(section))
	if !ok {
		t.Fatalf("README.md has no section %q", section)
	}
	_, rest, ok = bytes.Cut(rest, []byte(open))
	if !ok {
		t.Fatal("the README's section \"A small example\" has no Go block")
	}
	block, _, ok := bytes.Cut(rest, []byte(end))
	if !ok {
		t.Fatal("the README's first Go block does not end")
	}
	if got := append(block, '\n'); !bytes.Equal(got, want) {
		t.Errorf("the README's first example differs from examples/readme/main.go:\n--- README\n%s\n--- examples/readme/main.go\n%s", got, want)
	}
}
