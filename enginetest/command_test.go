package enginetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeFixtures is the npm project holding the Node.js programs; CI installs
// it with `npm ci`.
const nodeFixtures = "../testdata/nodejs"

// The reasons the Node.js tests skip, which say how to include them; test.sh
// at the repository root checks the same two things.
const (
	noNode        = "node is not installed: install Node.js with npm, then run ./test.sh, which runs npm ci in testdata/nodejs"
	noNodeModules = "@pulumi/pulumi is not installed in testdata/nodejs: run npm ci there, or ./test.sh, which does"
)

// needNode skips the test unless node and the pinned @pulumi/pulumi package
// are installed, and returns the fixtures' absolute directory.
func needNode(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip(noNode)
	}
	dir, err := filepath.Abs(nodeFixtures)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@pulumi/pulumi/package.json")); err != nil {
		t.Skip(noNodeModules)
	}
	return dir
}

func TestRunCommandGivesTheLanguageHostEnvironment(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	e := startEngine(t, WithProject("proj"), WithStack("dev"),
		WithOrganization("org"), DryRun(true),
		WithConfig(map[string]string{"proj:a": "1"}, "proj:a"))
	var out strings.Builder
	cmd := exec.Command("sh", "-c", `for v in PULUMI_MONITOR PULUMI_ENGINE PULUMI_PROJECT PULUMI_STACK PULUMI_ORGANIZATION \
		PULUMI_DRY_RUN PULUMI_PARALLEL PULUMI_CONFIG PULUMI_CONFIG_SECRET_KEYS PULUMI_ROOT_DIRECTORY \
		PULUMI_NODEJS_MONITOR PULUMI_NODEJS_ENGINE PULUMI_NODEJS_PROJECT PULUMI_NODEJS_STACK PULUMI_NODEJS_DRY_RUN; do
		eval "echo $v=\$$v"; done`)
	cmd.Dir = t.TempDir()
	cmd.Stdout = &out
	res, err := e.RunCommand(t.Context(), cmd)
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	if res.Err != nil {
		t.Fatalf("Result.Err = %v, want nil", res.Err)
	}
	for _, want := range []string{
		"PULUMI_MONITOR=" + e.MonitorAddr(), "PULUMI_ENGINE=" + e.EngineAddr(),
		"PULUMI_PROJECT=proj", "PULUMI_STACK=dev", "PULUMI_ORGANIZATION=org", "PULUMI_DRY_RUN=true",
		"PULUMI_PARALLEL=16", `PULUMI_CONFIG={"proj:a":"1"}`, `PULUMI_CONFIG_SECRET_KEYS=["proj:a"]`,
		"PULUMI_ROOT_DIRECTORY=" + cmd.Dir,
		"PULUMI_NODEJS_MONITOR=" + e.MonitorAddr(), "PULUMI_NODEJS_ENGINE=" + e.EngineAddr(),
		"PULUMI_NODEJS_PROJECT=proj", "PULUMI_NODEJS_STACK=dev", "PULUMI_NODEJS_DRY_RUN=true",
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("the program's environment lacks %s; it printed:\n%s", want, out.String())
		}
	}
}

// A program that exits non-zero fails as under the engine: the error is the
// one line the language host and the engine make of the exit status, and
// each line of its standard error that is not blank is a diagnostic of its
// own (severity info#err, no URN), the last one even without a newline. No
// "update failed" follows: the program's failure is not a failed
// deployment.
func TestRunCommandReportsNonZeroExitLikeTheEngine(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	e := startEngine(t)
	var copied strings.Builder
	const stderr = "first line\n\n   \n  indented\n\tit broke"
	cmd := exec.Command("sh", "-c", "printf '"+stderr+"' >&2; exit 3")
	cmd.Stderr = &copied
	res, err := e.RunCommand(t.Context(), cmd)
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	want := "an unhandled error occurred: program exited with non-zero exit code: 3"
	var pe *ProgramError
	if !errors.As(res.ProgramErr, &pe) || pe.ExitCode != 3 || pe.Logged {
		t.Fatalf("Result.ProgramErr = %#v, want a ProgramError with exit code 3", res.ProgramErr)
	}
	if !res.Failed || !errors.Is(res.Err, pe) {
		t.Errorf("Failed = %v, Err = %v; want a failed deployment whose error includes the program's", res.Failed, res.Err)
	}
	if pe.Error() != want {
		t.Errorf("error = %q, want %q", pe.Error(), want)
	}
	var got []string
	for _, d := range res.Diagnostics {
		got = append(got, d.String())
	}
	wantEqualStrings(t, "diagnostics", got, []string{
		"info#err: first line", "info#err:   indented", "info#err: \tit broke", "error: " + want,
	})
	for _, d := range res.Diagnostics[:3] {
		if !d.FromProgram {
			t.Errorf("%v is not marked as the program's", d)
		}
	}
	if copied.String() != stderr {
		t.Errorf("cmd.Stderr got %q, want the program's stderr", copied.String())
	}
}

// A program that succeeds still has its standard error shown, line by line.
func TestRunCommandShowsTheStderrOfAProgramThatSucceeds(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	e := startEngine(t)
	res, err := e.RunCommand(t.Context(), exec.Command("sh", "-c", "echo 'a warning' >&2"))
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	if res.Failed || res.Err != nil {
		t.Fatalf("Failed = %v, Err = %v; want a deployment that succeeded", res.Failed, res.Err)
	}
	wantDiag(t, res.Diagnostics, severityInfoErr, "", "a warning")
}

func TestRunCommandFailsToStartWithAnError(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	_, err := e.RunCommand(t.Context(), exec.Command(filepath.Join(t.TempDir(), "no-such-program")))
	if err == nil {
		t.Fatal("RunCommand of a missing program returned no error")
	}
}

func TestNodeProgramWithStackTransformAndHook(t *testing.T) {
	t.Parallel()
	dir := needNode(t)
	e := startEngine(t)
	var stderr strings.Builder
	cmd := exec.Command("node", e.nodeArgs(dir, "transform-and-hook.js")...)
	cmd.Dir = dir
	cmd.Stderr = &stderr
	res, err := e.RunCommand(t.Context(), cmd)
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	if res.Err != nil {
		t.Fatalf("the deployment failed: %v\nstderr:\n%s\ntrace:\n%s", res.Err, stderr.String(), e.Trace())
	}
	thingURN := e.URN(e.URN("", rootStackType, "project-stack"), "test:index:Thing", "thing")
	var thing *ResourceState
	for _, r := range res.State.Resources {
		if r.URN == thingURN {
			thing = r
		}
	}
	if thing == nil {
		t.Fatalf("no %s in the state:\n%s", thingURN, e.Trace())
	}
	if got := thing.Inputs.GetFields()["added"].GetStringValue(); got != "by-transform" {
		t.Errorf("inputs.added = %q, want the stack transform's %q", got, "by-transform")
	}
	var transformed, hooked bool
	for _, ev := range e.Events() {
		switch {
		case ev.Kind == KindCallback && ev.Callback == callbackResourceTransform &&
			ev.URN == thingURN && ev.Err == "":
			transformed = true
		case ev.Kind == KindHook && ev.Name == "audit" && ev.Point == "after_create" &&
			ev.URN == thingURN && ev.Err == "":
			hooked = true
		}
	}
	if !transformed || !hooked {
		t.Errorf("transform called: %v, after-create hook called: %v; trace:\n%s", transformed, hooked, e.Trace())
	}
	wantLog := "audit saw " + thingURN + " with id "
	var logged bool
	for _, d := range res.Diagnostics {
		if d.FromProgram && strings.Contains(d.Message, wantLog) && strings.Contains(d.Message, "added=by-transform") {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no diagnostic from the hook containing %q: %v", wantLog, res.Diagnostics)
	}
}

func TestRunCommandProgramThatLoggedItsErrorGetsNoDiagnostic(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	e := startEngine(t)
	res, err := e.RunCommand(t.Context(), exec.Command("sh", "-c", "echo noise >&2; exit 32"))
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	var pe *ProgramError
	if !errors.As(res.ProgramErr, &pe) || pe.ExitCode != 32 || !pe.Logged || !res.Failed {
		t.Fatalf("Result.ProgramErr = %v, Failed = %v, want the program's logged-error exit (32)", res.ProgramErr, res.Failed)
	}
	var got []string
	for _, d := range res.Diagnostics {
		got = append(got, d.String())
	}
	// Its stderr is shown; the engine adds nothing of its own.
	wantEqualStrings(t, "diagnostics", got, []string{"info#err: noise"})
}

func TestRunCommandNodeProgramThatThrows(t *testing.T) {
	t.Parallel()
	dir := needNode(t)
	e := startEngine(t)
	cmd := exec.Command("node", e.nodeArgs(dir, "throws.js")...)
	cmd.Dir = dir
	res, err := e.RunCommand(t.Context(), cmd)
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	// The SDK reports the exception itself and exits with the status that
	// says so: the engine adds nothing of its own.
	var pe *ProgramError
	if !errors.As(res.ProgramErr, &pe) || pe.ExitCode != 32 || !pe.Logged || !res.Failed {
		t.Fatalf("Result.ProgramErr = %v, Failed = %v; want the SDK's logged-error exit (32)", res.ProgramErr, res.Failed)
	}
	var reported bool
	for _, d := range res.Diagnostics {
		if d.FromProgram && d.Severity == severityError && strings.Contains(d.Message, "the program's own failure") {
			reported = true
		}
		if !d.FromProgram && strings.Contains(d.Message, "non-zero exit code") {
			t.Errorf("the engine reported an exit the program had logged: %v", d)
		}
	}
	if !reported {
		t.Errorf("no error diagnostic from the program with its exception: %v", res.Diagnostics)
	}
	// What the program registered before failing was still created.
	thing := e.URN("", "test:index:Thing", "kept")
	var created bool
	for _, st := range res.Steps {
		created = created || st.URN == thing && st.Op == opCreate && st.Err == nil
	}
	if !created {
		t.Errorf("%s was not created; trace:\n%s", thing, e.Trace())
	}
}

// A deployment that fails while the program runs ends without it: 3.260
// never answers the failed registration and stops the program instead,
// which dies of the interrupt rather than of an answer. (3.274.1 ends the
// registration as it shuts its monitor down; TestGoSDKProgramFailedStep.)
func TestRunCommandStopsTheProgramOfAFailedDeployment(t *testing.T) {
	t.Parallel()
	dir := needNode(t)
	e := startEngine(t, EngineVersion(engine3_260), WithProvider(&FakeProvider{
		OnCreate: func(context.Context, *CreateRequest) (*CreateResponse, error) {
			return nil, errors.New("quota exceeded")
		},
	}))
	cmd := exec.Command("node", e.nodeArgs(dir, "step-fails.js")...)
	cmd.Dir = dir
	// The program would run for 10 minutes; an engine that waited for it
	// fails the test here instead.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := e.RunCommand(ctx, cmd)
	if err != nil {
		t.Fatalf("RunCommand: %v", err)
	}
	if !res.Failed || res.ProgramErr != nil || !strings.Contains(errText(res.Err), "quota exceeded") {
		t.Errorf("Failed = %v, ProgramErr = %v, Err = %v; want the step's failure and no program error",
			res.Failed, res.ProgramErr, res.Err)
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the program ended with %v, want killed by the interrupt", cmd.ProcessState)
	}
	doomed := e.URN(e.URN("", rootStackType, "project-stack"), "test:index:Thing", "doomed")
	wantEndedByProgram(t, e, kindRegisterResource, byURN(doomed))
}

// nodeArgs returns the arguments with which the Node.js language host runs
// program (a file or directory, relative to dir) with `node`: through the
// runner of the @pulumi/pulumi package installed in dir, which takes the
// engine's addresses and the stack's names as flags.
func (e *Engine) nodeArgs(dir, program string) []string {
	args := []string{
		dir + "/node_modules/@pulumi/pulumi/cmd/run",
		"--monitor=" + e.addr,
		"--engine=" + e.addr,
		"--project=" + e.cfg.project,
		"--stack=" + e.cfg.stack,
		"--parallel=" + strconv.Itoa(int(e.cfg.parallel)),
		"--pwd=" + dir,
	}
	if e.cfg.organization != "" {
		args = append(args, "--organization="+e.cfg.organization)
	}
	if e.cfg.dryRun {
		args = append(args, "--dry-run")
	}
	return append(args, program)
}
