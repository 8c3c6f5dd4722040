package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Builds builds Go main packages once per test binary, into a directory it
// removes on Close (from TestMain, after the tests). A program binary is
// built the way pulumi-language-go builds one, so the tests run what
// `pulumi up` would run. The zero value is ready to use and safe for
// parallel tests.
type Builds struct {
	mu   sync.Mutex
	dir  string
	done map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Program builds the main package pkg (an import path or a path relative to
// the test's directory) and returns the binary's path.
func (b *Builds) Program(tb testing.TB, pkg string) string {
	tb.Helper()
	path, err := b.build(pkg, "program")
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// Provider builds the provider plugin in package pkg as
// pulumi-resource-<name> and returns the directory holding it, for
// Project.Providers.
func (b *Builds) Provider(tb testing.TB, pkg, name string) string {
	tb.Helper()
	path, err := b.build(pkg, "pulumi-resource-"+name)
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Dir(path)
}

// build builds pkg once, as name in a directory of its own.
func (b *Builds) build(pkg, name string) (string, error) {
	b.mu.Lock()
	if b.dir == "" {
		dir, err := os.MkdirTemp("", "clitest-builds-")
		if err != nil {
			b.mu.Unlock()
			return "", err
		}
		b.dir = dir
		b.done = map[string]*build{}
	}
	key := pkg + "\x00" + name
	bd, ok := b.done[key]
	if !ok {
		bd = &build{path: filepath.Join(b.dir, fmt.Sprint(len(b.done)), name)}
		b.done[key] = bd
	}
	b.mu.Unlock()

	bd.once.Do(func() {
		// The flags of pulumi-language-go: no file paths, no debug information.
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-w -s", "-o", bd.path, pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			bd.err = fmt.Errorf("go build %s: %w\n%s", pkg, err, strings.TrimSpace(string(out)))
		}
	})
	return bd.path, bd.err
}

// Close removes every binary built.
func (b *Builds) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dir == "" {
		return nil
	}
	err := os.RemoveAll(b.dir)
	b.dir, b.done = "", nil
	return err
}
