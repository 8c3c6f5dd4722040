package enginetest

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

// New starts an engine for the test tb, closes it when the test ends and
// fails the test at once if it cannot start.
func New(tb testing.TB, opts ...Option) *Engine {
	tb.Helper()
	e, err := Start(opts...)
	if err != nil {
		tb.Fatalf("enginetest: %v", err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Errorf("enginetest: closing the engine: %v", err)
		}
	})
	return e
}

// Run runs program in this process against the engine, as `pulumi up` runs
// a program against the real one (see [Engine.RunFunc]), and returns the
// deployment's result with the program's error in [Result.ProgramErr]. It
// fails the test at once if the deployment cannot be waited for; it waits
// for as long as the test's context lives.
func (e *Engine) Run(tb testing.TB, program func() error) *Result {
	tb.Helper()
	res, err := e.RunFunc(tb.Context(), program)
	if err != nil {
		tb.Fatalf("enginetest: %v\n%s", err, e.Trace())
	}
	return res
}

// envMu serialises the programs [Engine.RunFunc] runs: the environment is
// the process's.
var envMu sync.Mutex

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
// echo (see [Result.ProgramErr]). err reports only a deployment that could not be waited for (ctx
// ended, or the engine was closed).
func (e *Engine) RunFunc(ctx context.Context, program func() error) (*Result, error) {
	if program == nil {
		return nil, errors.New("enginetest: RunFunc: nil program")
	}
	e.attachRunner()
	ran := make(chan error, 1)
	go func() { ran <- e.runWithEnv(program) }()
	var progErr error
	select {
	case progErr = <-ran:
	case <-e.done:
		if e.overAndFailed() {
			e.cutOff()
		}
		progErr = <-ran
	}
	e.ProgramFailed(progErr)
	res, err := e.Wait(ctx)
	if err != nil {
		return nil, errors.Join(progErr, err)
	}
	return withProgramErr(res, progErr), nil
}

// withProgramErr returns res as the result of a program that ended with
// progErr: a failed program makes a failed deployment, whether or not the
// engine took its failure into account.
func withProgramErr(res *Result, progErr error) *Result {
	out := *res
	if progErr == nil {
		return &out
	}
	out.ProgramErr = progErr
	out.Failed = true
	if !errors.Is(out.Err, progErr) {
		out.Err = errors.Join(out.Err, progErr)
	}
	return &out
}

// runWithEnv runs program with the engine's variables in the environment.
func (e *Engine) runWithEnv(program func() error) error {
	envMu.Lock()
	defer envMu.Unlock()
	type saved struct {
		key, value string
		set        bool
	}
	var old []saved
	defer func() {
		for _, s := range old {
			if s.set {
				_ = os.Setenv(s.key, s.value)
			} else {
				_ = os.Unsetenv(s.key)
			}
		}
	}()
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		prev, set := os.LookupEnv(k)
		old = append(old, saved{k, prev, set})
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return program()
}
