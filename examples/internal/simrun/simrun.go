// Package simrun holds what the examples share when they run without a
// Pulumi engine around: running the program against the enginetest
// simulator as `pulumi up` would start it, and reporting what the engine did
// in aligned tables.
package simrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
)

// waitLimit bounds how long Deploy waits for the deployment to end.
const waitLimit = 30 * time.Second

// RunProgram runs program against engine as `pulumi up` would start it: with
// the engine's variables (PULUMI_MONITOR, PULUMI_ENGINE, ...) set in the
// environment, which it puts back as it was afterwards.
func RunProgram(ctx context.Context, engine *enginetest.Engine, program func(context.Context) error) error {
	restore := Setenv(engine.Env())
	defer restore()
	return program(ctx)
}

// Deploy runs program against engine (see [RunProgram]), then waits for the
// deployment to end: for the engine's remaining steps after a program that
// succeeded; after one that failed, the program's failure is reported to the
// engine as a language host reports it (no deletes run, the deployment
// fails), unless the deployment had already failed and ended on its own.
// It returns the deployment's result
// and the program's error; err reports a deployment that could not be waited
// for, joined with the program's error.
func Deploy(ctx context.Context, engine *enginetest.Engine, program func(context.Context) error) (res *enginetest.Result, progErr, err error) {
	progErr = RunProgram(ctx, engine, program)
	waitCtx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if progErr != nil {
		engine.ProgramFailed(fmt.Errorf("an unhandled error occurred: program failed: %w", progErr))
	}
	res, err = engine.Wait(waitCtx)
	if err != nil {
		return nil, progErr, errors.Join(progErr, err)
	}
	return res, progErr, nil
}

// Setenv sets the variables of env ("KEY=value") and returns a function that
// puts the environment back as it was.
func Setenv(env []string) (restore func()) {
	type saved struct {
		key, value string
		set        bool
	}
	var old []saved
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		prev, set := os.LookupEnv(k)
		old = append(old, saved{k, prev, set})
		_ = os.Setenv(k, v)
	}
	return func() {
		for _, s := range old {
			if s.set {
				_ = os.Setenv(s.key, s.value)
			} else {
				_ = os.Unsetenv(s.key)
			}
		}
	}
}

// Verdict prints the problems found, if any, under "<name>: FAILED" and
// returns an error that counts them; with no problems it prints nothing and
// returns nil.
func Verdict(w io.Writer, name string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s: FAILED\n", name)
	for _, p := range problems {
		fmt.Fprintln(w, "  -", p)
	}
	return fmt.Errorf("%d expectation(s) not met", len(problems))
}

// Table prints rows indented, with columns aligned and no trailing blanks.
func Table(w io.Writer, rows [][]string) {
	var width []int
	for _, row := range rows {
		for i, cell := range row[:max(len(row)-1, 0)] { // a last cell needs no padding
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len(cell))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-len(cell)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// PrintRecord prints the engine's record as a table, one row per event that
// describe renders (it returns nil for the others), leaving out the stack's
// own events.
func PrintRecord(w io.Writer, engine *enginetest.Engine, describe func(enginetest.Event) []string) {
	stack := engine.StackURN()
	var rows [][]string
	for _, ev := range engine.Record() {
		if ev.URN == stack {
			continue
		}
		if row := describe(ev); row != nil {
			rows = append(rows, row)
		}
	}
	Table(w, rows)
}

// Describe renders the events the examples all report alike as a table row:
// steps, resource transform calls, hook calls, provider creates and the
// program's signal. It returns nil for any other event.
func Describe(ev enginetest.Event, calls *CallLog) []string {
	who := enginetest.URNName(ev.URN)
	switch ev.Kind {
	case enginetest.KindStep:
		if typ := enginetest.QualifiedType(ev.URN); strings.HasPrefix(typ, "pulumi:providers:") {
			who = "provider " + strings.TrimPrefix(typ, "pulumi:providers:") + " (" + who + ")"
		}
		return []string{"step " + string(ev.Op), who}
	case enginetest.KindCallback:
		return []string{"transform " + calls.Name(ev.Token), who, Outcome(ev)}
	case enginetest.KindHook:
		return []string{fmt.Sprintf("hook %s %q", ev.Point, ev.Name), who, Outcome(ev)}
	case enginetest.KindProviderCreate:
		return []string{"provider create", who, Outcome(ev)}
	case enginetest.KindSignalAndWaitForShutdown:
		return []string{"program signals it is done", "", "the engine runs what is left"}
	}
	return nil
}

// Outcome is how an event ended: its error, or else its detail.
func Outcome(ev enginetest.Event) string {
	if ev.Err != "" {
		return "error: " + ev.Err
	}
	return ev.Detail
}

// CallLog is a callbacks.Observer that counts the calls the servers answered
// and remembers the registration name behind each token. Its zero value is
// ready to use.
type CallLog struct {
	mu    sync.Mutex
	names map[string]string // token -> registration name
	total int
	fails []string
}

// CallStarted implements callbacks.Observer.
func (l *CallLog) CallStarted(context.Context, callbacks.CallInfo) {}

// CallFinished implements callbacks.Observer.
func (l *CallLog) CallFinished(_ context.Context, info callbacks.CallInfo, code codes.Code, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.names == nil {
		l.names = map[string]string{}
	}
	l.total++
	l.names[info.Token] = info.Name
	if code != codes.OK {
		l.fails = append(l.fails, fmt.Sprintf("%s %q failed with %s", info.Kind, info.Name, code))
	}
}

// Count returns how many calls were answered.
func (l *CallLog) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Name returns the quoted registration name behind token, or "(never
// called)" for a token no call used.
func (l *CallLog) Name(token string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.names[token]; ok {
		return fmt.Sprintf("%q", n)
	}
	return "(never called)"
}

// Fails describes the calls that did not succeed.
func (l *CallLog) Fails() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.fails...)
}
