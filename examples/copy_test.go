// Package examples holds no code: each directory below it is a complete
// program, and this test checks that each one builds when copied alone into a
// new module whose only dependency is github.com/langhost/callbacks.
package examples

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryExampleBuildsWhenCopiedAlone copies each example directory into a
// temporary module that depends on this module (through a replace of the
// repository root, with its go.sum) and builds and vets it, tests included.
// An example that imports an internal package of this module fails here.
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
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
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
				"require github.com/langhost/callbacks v0.0.0\n\n" +
				"replace github.com/langhost/callbacks => " + root + "\n"
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
				t.Fatal(err)
			}
			// Built as pulumi-language-go builds programs, and vetted
			// with the same -trimpath, so that the dependencies are
			// compiled once, for this test, examples/readme's and the
			// conformance kit's, which build the same way.
			for _, args := range [][]string{{"build", "-trimpath", "-ldflags", "-w -s", "./..."}, {"vet", "-trimpath", "./..."}} {
				cmd := exec.Command(goBin, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("go %s in a copy of examples/%s: %v\n%s", strings.Join(args, " "), name, err, out)
				}
			}
		})
	}
	if found < 4 {
		t.Errorf("found %d examples, want at least 4", found)
	}
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
