// Package clitest drives the real Pulumi CLI from Go tests, hermetically.
//
// Each [Stack] lives in an environment of its own: a temporary PULUMI_HOME,
// a file:// backend in a temporary directory, a passphrase for its secrets,
// no update check and no plugin download. Its project directory holds a
// Pulumi.yaml that runs a prebuilt Go program (runtime.options.binary) and
// loads provider plugins from local directories (plugins.providers), so a
// CLI run compiles nothing and downloads nothing. Every command returns what
// the user sees (stdout, stderr, exit code) and [Stack.Export] returns the
// state; the test decides what counts as success.
//
// Programs and providers are built once per test binary with [Builds], the
// way pulumi-language-go builds a Go program (-trimpath -ldflags "-w -s").
//
// The CLI and the Go language host are found on PATH, as on a user's
// machine; [RequireCLI] skips a test when they are absent.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// InstallHint says how to put the Pulumi CLI and its Go language host
// (pulumi-language-go, shipped with the CLI) on PATH: on a fresh clone,
// with Pulumi's official installer; in this repository's CI, with the
// install script that exists only beside CI's checkout.
const InstallHint = `install the Pulumi CLI (3.274.1 or later) with ` +
	`"curl -fsSL https://get.pulumi.com | sh -s -- --version 3.274.1" and run "export PATH=$HOME/.pulumi/bin:$PATH" ` +
	`(see https://www.pulumi.com/docs/install/); in this repository's CI, from the repository root: ` +
	`export PATH="$(../shared/engine/install.sh "$HOME/.cache/pulumi-engine-3.274.1" 3.274.1):$PATH"`

// commandLimit bounds one CLI command, so that a hang fails the test with
// the command's output instead of stopping the whole test binary. A command
// takes about a second; the bound is far beyond any machine's variation.
const commandLimit = 5 * time.Minute

// RequireCLI skips tb unless both `pulumi` and `pulumi-language-go` are on
// PATH, and says how to put them there.
func RequireCLI(tb testing.TB) {
	tb.Helper()
	for _, name := range []string{"pulumi", "pulumi-language-go"} {
		if _, err := exec.LookPath(name); err != nil {
			tb.Skipf("%s is not on PATH, so the tests that run the real engine skip; to run them, %s", name, InstallHint)
		}
	}
}

// Project is what a stack's Pulumi.yaml says.
type Project struct {
	// Name is the project's name.
	Name string
	// Program is the path of the prebuilt program binary.
	Program string
	// Providers maps a provider plugin's name to the directory holding its
	// binary, pulumi-resource-<name>.
	Providers map[string]string
	// Env holds extra NAME=value variables for every command of the stack.
	// The engine starts its plugins with its own environment, so these
	// reach the providers and the program too.
	Env []string
}

// Stack is one stack of a project, in an environment of its own that is
// removed when the test ends.
type Stack struct {
	// Name is the stack's name.
	Name string
	// Dir is the project directory, which holds Pulumi.yaml.
	Dir string

	tb      testing.TB
	project Project
	env     []string
}

// NewStack writes the project into a new temporary directory, sets up an
// environment of its own and creates the stack "dev" in it. It fails tb if
// any of that fails.
func NewStack(tb testing.TB, p Project) *Stack {
	tb.Helper()
	RequireCLI(tb)
	root := tb.TempDir()
	s := &Stack{Name: "dev", Dir: filepath.Join(root, "project"), tb: tb}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	s.env = append(hostEnv(), Env(tb)...)
	s.SetProject(p)
	s.Run("stack", "init", s.Name, "--non-interactive").MustSucceed(tb)
	return s
}

// Env returns the NAME=value settings that make the CLI hermetic: a
// PULUMI_HOME and a file backend in new temporary directories, a
// passphrase, no update check and no plugin download. A test that drives
// the CLI through the Automation API, which passes the process's own
// environment on, sets them with t.Setenv.
func Env(tb testing.TB) []string {
	tb.Helper()
	root := tb.TempDir()
	home := filepath.Join(root, "home")
	state := filepath.Join(root, "state")
	for _, dir := range []string{home, state} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return []string{
		"PULUMI_HOME=" + home,
		"PULUMI_BACKEND_URL=file://" + filepath.ToSlash(state),
		"PULUMI_CONFIG_PASSPHRASE=integration-tests",
		"PULUMI_SKIP_UPDATE_CHECK=1",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true",
	}
}

// hostEnv is this process's environment without any PULUMI_ variable, so
// that the user's own settings (a token, a backend, a home) never reach the
// stack.
func hostEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PULUMI_") {
			env = append(env, kv)
		}
	}
	return env
}

// SetProject rewrites Pulumi.yaml, for instance to run another program in
// the next update of the same stack.
func (s *Stack) SetProject(p Project) {
	s.tb.Helper()
	s.project = p
	var y strings.Builder
	fmt.Fprintf(&y, "name: %s\n", p.Name)
	fmt.Fprintf(&y, "runtime:\n  name: go\n  options:\n    binary: %s\n", quote(p.Program))
	if len(p.Providers) > 0 {
		y.WriteString("plugins:\n  providers:\n")
		for _, name := range sortedKeys(p.Providers) {
			fmt.Fprintf(&y, "    - name: %s\n      path: %s\n", name, quote(p.Providers[name]))
		}
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "Pulumi.yaml"), []byte(y.String()), 0o644); err != nil {
		s.tb.Fatal(err)
	}
}

// quote writes s as a YAML (and JSON) double-quoted string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Result is what one CLI command showed.
type Result struct {
	// Args are the command's arguments after "pulumi".
	Args []string
	// Stdout and Stderr are what the command printed.
	Stdout, Stderr string
	// ExitCode is the command's exit status (-1 if it did not exit).
	ExitCode int
	// Err is set when the command could not be run or did not exit.
	Err error
}

// Output is Stdout followed by Stderr.
func (r *Result) Output() string { return r.Stdout + r.Stderr }

// String describes the command and everything it printed, for failure
// messages.
func (r *Result) String() string {
	return fmt.Sprintf("pulumi %s: exit code %d, error %v\n--- stdout\n%s--- stderr\n%s---",
		strings.Join(r.Args, " "), r.ExitCode, r.Err, r.Stdout, r.Stderr)
}

// MustSucceed fails tb, showing the output, unless the command exited 0.
// It returns r.
func (r *Result) MustSucceed(tb testing.TB) *Result {
	tb.Helper()
	if r.Err != nil || r.ExitCode != 0 {
		tb.Fatalf("command failed: %s", r)
	}
	return r
}

// MustFail fails tb, showing the output, unless the command ran and exited
// with a non-zero status. It returns r.
func (r *Result) MustFail(tb testing.TB) *Result {
	tb.Helper()
	if r.Err != nil || r.ExitCode == 0 {
		tb.Fatalf("command did not fail as expected: %s", r)
	}
	return r
}

// Run runs `pulumi args...` in the project directory with the stack's
// environment. It fails nothing: the caller judges the result.
func (s *Stack) Run(args ...string) *Result {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pulumi", args...)
	cmd.Dir = s.Dir
	cmd.Env = append(append([]string(nil), s.env...), s.project.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // plugins that keep the pipes open after a kill
	err := cmd.Run()
	r := &Result{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		r.Err = err
	}
	if ctx.Err() != nil {
		r.Err = fmt.Errorf("stopped after %v: %w", commandLimit, ctx.Err())
	}
	s.tb.Logf("pulumi %s: exit code %d", strings.Join(args, " "), r.ExitCode)
	return r
}

// Up runs `pulumi up` without a preview, as a script would.
func (s *Stack) Up(extra ...string) *Result {
	s.tb.Helper()
	return s.Run(append([]string{"up", "--yes", "--non-interactive", "--skip-preview"}, extra...)...)
}

// Preview runs `pulumi preview`.
func (s *Stack) Preview(extra ...string) *Result {
	s.tb.Helper()
	return s.Run(append([]string{"preview", "--non-interactive"}, extra...)...)
}

// Destroy runs `pulumi destroy`; pass "--run-program" to run the program,
// which delete hooks need.
func (s *Stack) Destroy(extra ...string) *Result {
	s.tb.Helper()
	return s.Run(append([]string{"destroy", "--yes", "--non-interactive"}, extra...)...)
}

// SetConfig runs `pulumi config set key value` and fails tb if it fails.
func (s *Stack) SetConfig(key, value string) {
	s.tb.Helper()
	s.Run("config", "set", key, value).MustSucceed(s.tb)
}

// Export runs `pulumi stack export` and returns the deployment it shows. It
// fails tb if the command fails or its output does not parse.
func (s *Stack) Export() *Deployment {
	s.tb.Helper()
	r := s.Run("stack", "export").MustSucceed(s.tb)
	var exp struct {
		Version    int        `json:"version"`
		Deployment Deployment `json:"deployment"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &exp); err != nil {
		s.tb.Fatalf("parsing the output of pulumi stack export: %v\n%s", err, r.Stdout)
	}
	return &exp.Deployment
}

// Diagnostics returns the lines the CLI printed under the resource named
// name in the "Diagnostics:" sections of Stdout, in order, without their
// indentation or blank lines. A section heads each resource with its type
// and name, as in "random:index:RandomPet (pet):", and indents its messages
// under it. A command that runs two passes, such as `pulumi destroy`
// (preview, then destroy), prints a section for each.
func (r *Result) Diagnostics(name string) []string {
	var lines []string
	in, mine := false, false
	for _, line := range strings.Split(r.Stdout, "\n") {
		switch {
		case line == "Diagnostics:":
			in = true
		case !in || strings.TrimSpace(line) == "":
		case !strings.HasPrefix(line, "  "):
			in, mine = false, false
		case !strings.HasPrefix(line, "    "):
			mine = strings.HasSuffix(line, "("+name+"):")
		case mine:
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

// Command returns `pulumi args...` set up as [Stack.Run] runs it (the
// project directory, the stack's environment) but not started, for a test
// that must act while the command runs: signal it, kill it, watch what it
// starts. The caller starts it, waits for it, and bounds it with ctx.
func (s *Stack) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "pulumi", args...)
	cmd.Dir = s.Dir
	cmd.Env = append(append([]string(nil), s.env...), s.project.Env...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
