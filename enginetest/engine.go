package enginetest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/langhost/callbacks/enginetest/internal/engine"
)

// RunCommand runs cmd as a language host runs a program: with the
// environment of [Engine.Env] added to cmd.Env (or to the current
// process's environment when cmd.Env is nil), PULUMI_ROOT_DIRECTORY and
// PULUMI_NODEJS_ROOT_DIRECTORY set to cmd.Dir, and its standard error read
// by the engine (and still copied to cmd.Stderr if set). It waits for the
// program to exit, reports how it ended ([Engine.ProgramFailed]) and
// returns the deployment's [Result].
//
// As under the engine, each line the program writes to standard error that
// is not blank becomes, as it is written, a diagnostic of severity
// "info#err" with no URN and the line (without its newline) as its
// message, whether the program fails or not. A program that exits non-zero
// fails: Result.ProgramErr holds a [*ProgramError] and, unless the program
// exited with status 32 (it has already logged its error), the engine
// emits the one-line error diagnostic "an unhandled error occurred: program
// exited with non-zero exit code: N", with no URN. Before the program
// signalled its end, that failure ends the deployment and no "update
// failed" follows; after it, it fails a deployment that had succeeded (see
// [Engine.ProgramFailed]).
//
// A deployment that fails while the program still runs ends as under the
// engine it plays. 3.274.1 shuts its monitor down, which ends the
// program's pending calls, and the deployment is over once the program has
// exited (or after 30 seconds, when it is interrupted). 3.260 never
// answers them, and the program is interrupted (and killed 5 seconds
// later) and its exit tells nothing more.
//
// The error RunCommand returns is for what is not the program's doing: the
// command could not start, or ctx ended (the program is then interrupted,
// and killed 5 seconds later).
//
// Programs that read their settings from flags rather than the environment
// (the Node.js and Python runners) take the addresses from
// [Engine.MonitorAddr] and [Engine.EngineAddr].
func (e *Engine) RunCommand(ctx context.Context, cmd *exec.Cmd) (*Result, error) {
	return e.e.RunCommand(ctx, cmd)
}

// Project returns the project name.
func (e *Engine) Project() string {
	return e.e.Project()
}

// Stack returns the stack name.
func (e *Engine) Stack() string {
	return e.e.Stack()
}

// ProgramPID returns the process id of the program [Engine.RunCommand]
// started, or 0 before it has started one.
func (e *Engine) ProgramPID() int {
	return e.e.ProgramPID()
}

// Engine is a simulated Pulumi engine serving one deployment. It serves the
// ResourceMonitor and Engine gRPC services on a loopback port, calls the
// program's callbacks (transforms, hooks, error hooks) over gRPC the way the
// real engine does, and runs the deployment's steps against a [FakeProvider].
//
// An Engine is safe for concurrent use. Close it when done.
type Engine struct {
	e *engine.Engine
}

// Start starts an engine listening on 127.0.0.1 on a free port.
func Start(opts ...Option) (*Engine, error) {
	e, err := engine.Start(opts...)
	if err != nil {
		return nil, err
	}
	return &Engine{e: e}, nil
}

// MonitorAddr is the ResourceMonitor address, "127.0.0.1:PORT".
func (e *Engine) MonitorAddr() string {
	return e.e.MonitorAddr()
}

// EngineAddr is the Engine service address; the same server as
// [Engine.MonitorAddr].
func (e *Engine) EngineAddr() string {
	return e.e.EngineAddr()
}

// URN returns the URN a resource registered with this type and name under
// the given parent URN gets ("" for no parent).
func (e *Engine) URN(parent, typ, name string) string {
	return e.e.URN(parent, typ, name)
}

// StackURN returns the URN of the root stack resource as the Go SDK
// registers it ("<project>-<stack>").
func (e *Engine) StackURN() string {
	return e.e.StackURN()
}

// Version returns the engine release the simulator plays ([EngineVersion]).
func (e *Engine) Version() string {
	return e.e.Version()
}

// DryRun reports whether the deployment is a preview.
func (e *Engine) DryRun() bool {
	return e.e.DryRun()
}

// Env returns the environment a language host gives a program so that
// pulumi.Run connects to this engine: the variables the Go SDK reads
// (PULUMI_MONITOR, PULUMI_ENGINE, PULUMI_PROJECT, PULUMI_STACK,
// PULUMI_DRY_RUN, PULUMI_PARALLEL, PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS,
// PULUMI_ORGANIZATION), and the PULUMI_NODEJS_ ones the Node.js SDK reads.
func (e *Engine) Env() []string {
	return e.e.Env()
}

// Wait waits until the deployment is over and returns its result. A
// deployment is over once the program has signalled its end (through
// SignalAndWaitForShutdown, [Engine.Finish] or [Engine.ProgramFailed]) and
// the engine has run the remaining steps (deletes and their hooks), or, as
// in the engine, as soon as the steps running when a step failed have
// finished: a failure does not wait for the program. When [Engine.RunFunc]
// or [Engine.RunCommand] runs the program, a deployment that succeeded is
// over only once the program, released from SignalAndWaitForShutdown, has
// exited, since the engine reports a failure of the program even then.
func (e *Engine) Wait(ctx context.Context) (*Result, error) {
	return e.e.Wait(ctx)
}

// Finish treats the program as finished now, for programs that never call
// SignalAndWaitForShutdown (older SDKs, or a program run as a command that
// exited with status 0), then waits like [Engine.Wait].
func (e *Engine) Finish(ctx context.Context) (*Result, error) {
	return e.e.Finish(ctx)
}

// ProgramFailed tells the engine how the program ended, as a language host
// tells the engine when the program exits or its Run function returns. A
// nil err means the program exited successfully. Otherwise err is the
// language host's report, for example "an unhandled error occurred:
// program exited with non-zero exit code: 1" (the program's standard error
// is not part of it: the engine shows each of its lines as a diagnostic of
// its own, see [Engine.RunCommand]).
//
// Only the first report counts. What it does depends on when it comes, as
// in the engine:
//
//   - Before the program signalled its end: a nil err is the same as
//     [Engine.Finish] without the wait. A failure ends the deployment: err's
//     message becomes an error diagnostic with no URN (none if err wraps
//     [ErrProgramReported]), no step starts afterwards, no delete runs, and
//     the deployment ends as soon as the steps already running have
//     finished, with no "update failed": the program's failure is not a
//     failed deployment.
//   - After it signalled (through SignalAndWaitForShutdown or
//     [Engine.Finish]): the engine reads the program's exit only once the
//     deployment has succeeded and it has released the program. A failure
//     then fails the deployment with the diagnostic err's message, or "BAIL:
//     run bailed" if err wraps [ErrProgramReported] (the engine's wording
//     for a program that exited with status 32 at that point). If the
//     deployment failed, the engine never releases the program and never
//     reads its exit.
//   - After a failure stopped the deployment, or once it is over: nothing.
//     The engine no longer reads the program's outcome.
//
// [Result] reports a failure it took into account in Failed, Err and
// ProgramErr. ProgramFailed does not wait; call [Engine.Wait] for the
// result.
func (e *Engine) ProgramFailed(err error) {
	e.e.ProgramFailed(err)
}

// Close stops the engine: it cancels running hooks and provider calls,
// stops the gRPC server, ends every RPC the engine left unanswered (with
// Unavailable, as a connection that closes) and closes every callbacks
// client. It waits for the goroutines it started. Close is idempotent.
func (e *Engine) Close() error {
	return e.e.Close()
}

// Events returns the events of the given kinds, in order; with no kinds,
// every event so far. The slice is a copy.
func (e *Engine) Events(kinds ...EventKind) []Event {
	return e.e.Events(kinds...)
}

// Trace renders [Engine.Events] as text, one event a line.
func (e *Engine) Trace() string {
	return e.e.Trace()
}

// Diagnostics returns every diagnostic so far, in order.
func (e *Engine) Diagnostics() []Diagnostic {
	return e.e.Diagnostics()
}

// New starts an engine for the test tb, closes it when the test ends and
// fails the test at once if it cannot start.
func New(tb testing.TB, opts ...Option) *Engine {
	tb.Helper()
	return &Engine{e: engine.New(tb, opts...)}
}

// Run runs program in this process against the engine, as `pulumi up` runs
// a program against the real one (see [Engine.RunFunc]), and returns the
// deployment's result with the program's error in Result.ProgramErr. It
// fails the test at once if the deployment cannot be waited for; it waits
// for as long as the test's context lives.
func (e *Engine) Run(tb testing.TB, program func() error) *Result {
	tb.Helper()
	return e.e.Run(tb, program)
}

// RunFunc runs program in this process against the engine and waits for the
// deployment to end. While program runs, the environment holds the
// variables a language host gives a program ([Engine.Env]: PULUMI_MONITOR,
// PULUMI_ENGINE, PULUMI_PROJECT, PULUMI_STACK, …), so that pulumi.Run and
// the callback packages find this engine; RunFunc puts the environment back
// as it was afterwards.
//
// The environment belongs to the whole process, so programs run this way
// never overlap: RunFunc waits for any other RunFunc of the process to end
// first, and tests that use it gain nothing from t.Parallel.
//
// RunFunc reports how program ended to the engine as a language host does
// ([Engine.ProgramFailed]): after a program that succeeded, the engine runs
// what is left (deletes and their hooks after the program's signal); a
// program that failed before it signalled ends the deployment, its error's
// message an error diagnostic, no delete run. If the deployment fails
// while program is still running (a step failed), 3.274.1 ends its pending
// calls as it shuts its monitor down and waits for program to return (see
// the package doc). 3.260 answers none of them: it would kill the program.
// A program in this process cannot be killed, so RunFunc cuts it off
// instead: the calls the engine left unanswered end as a closed
// connection ends them (Unavailable, "connection closed: …"), the answers
// already given are delivered, the engine serves nothing more, and RunFunc
// waits for program to return.
//
// The result reports a program that failed, however it ended, as a failed
// deployment: Failed is true, Err includes the program's error after the
// deployment's own and ProgramErr holds it, even when the deployment had
// already failed on its own and the program's error is only the cut's
// echo (see Result.ProgramErr). err reports only a deployment that could not be waited for (ctx
// ended, or the engine was closed).
func (e *Engine) RunFunc(ctx context.Context, program func() error) (*Result, error) {
	return e.e.RunFunc(ctx, program)
}
