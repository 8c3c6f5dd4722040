package main

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

// simulate runs the program twice against the simulator: first with
// old-pet, then, over the first run's state, without it, so that the engine
// deletes old-pet and calls its after-delete hook after the program's
// signal. It fails if anything the program is meant to do did not happen.
func simulate(ctx context.Context, w io.Writer) error {
	fmt.Fprintln(w, "langhost: no Pulumi engine in the environment (PULUMI_MONITOR is unset), so the program")
	fmt.Fprintln(w, "runs twice on the simulator, the second time over the first run's state.")

	calls := &callLog{}
	first, err := simulatedRun(ctx, w, calls, "Run 1, keepOld unset (old-pet is declared)", nil)
	if err != nil {
		return err
	}
	second, err := simulatedRun(ctx, w, calls, "Run 2, keepOld=false (old-pet leaves the program)",
		first.res.State, enginetest.WithConfig(map[string]string{"langhost:keepOld": "false"}))
	if err != nil {
		return err
	}

	problems := append(checkFirst(first), checkSecond(second)...)
	calls.mu.Lock()
	problems = append(problems, calls.fails...)
	calls.mu.Unlock()
	if len(problems) > 0 {
		fmt.Fprintln(w, "\nlanghost: FAILED")
		for _, p := range problems {
			fmt.Fprintln(w, "  -", p)
		}
		return fmt.Errorf("%d expectation(s) not met", len(problems))
	}
	fmt.Fprintf(w, "\nlanghost: ok (2 runs, %d callback calls)\n", calls.count())
	return nil
}

// runResult is one simulated run: the engine, which the caller must not use
// after simulate returns, and the deployment's result.
type runResult struct {
	engine *enginetest.Engine
	res    *enginetest.Result
}

func simulatedRun(ctx context.Context, w io.Writer, calls *callLog, title string, prior *enginetest.State, opts ...enginetest.Option) (*runResult, error) {
	opts = append([]enginetest.Option{enginetest.WithProject("langhost"), enginetest.WithStack("dev")}, opts...)
	if prior != nil {
		opts = append(opts, enginetest.WithState(prior))
	}
	engine, err := enginetest.Start(opts...)
	if err != nil {
		return nil, err
	}
	defer engine.Close()

	restore := setenv(engine.Env())
	progErr := deploy(ctx, callbacks.WithObserver(calls))
	restore()

	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var res *enginetest.Result
	if progErr != nil {
		res, err = engine.Finish(waitCtx) // a failed program never signals
	} else {
		res, err = engine.Wait(waitCtx)
	}
	if err != nil {
		return nil, errors.Join(progErr, err)
	}

	fmt.Fprintf(w, "\n%s:\n", title)
	var rows [][]string
	for _, ev := range engine.Record() {
		if ev.URN == engine.StackURN() {
			continue
		}
		if row := describe(ev, calls); row != nil {
			rows = append(rows, row)
		}
	}
	table(w, rows)
	fmt.Fprintf(w, "  monitor.Finish returned: the engine was done, the callback server is shut down\n")
	var pets []string
	for _, r := range res.State.Resources {
		if r.Type == petType {
			pets = append(pets, fmt.Sprintf("%s (length %v)", r.Name, r.Inputs.GetFields()["length"].AsInterface()))
		}
	}
	fmt.Fprintf(w, "  state: %s\n", strings.Join(pets, ", "))

	if progErr != nil {
		return nil, fmt.Errorf("%s: the program failed: %w", title, progErr)
	}
	if res.Err != nil {
		return nil, fmt.Errorf("%s: the deployment failed: %w", title, res.Err)
	}
	return &runResult{engine: engine, res: res}, nil
}

// checkFirst: both pets exist, got the transform's default and are bound to
// the raw hook, which did not run (nothing was deleted).
func checkFirst(r *runResult) []string {
	var problems []string
	for _, name := range []string{"pet", "old-pet"} {
		st := r.res.State.Get(r.engine.URN(r.engine.StackURN(), petType, name))
		switch {
		case st == nil:
			problems = append(problems, "run 1: "+name+" is not in the state")
		case st.Inputs.GetFields()["length"].GetNumberValue() != 3:
			problems = append(problems, "run 1: the pet-defaults transform did not give "+name+" a length")
		case len(st.Hooks.GetAfterDelete()) != 1 || st.Hooks.GetAfterDelete()[0] != farewellHook:
			problems = append(problems, fmt.Sprintf("run 1: %s is bound to %v after delete, want [%s]", name, st.Hooks.GetAfterDelete(), farewellHook))
		}
	}
	if n := len(r.engine.Events(enginetest.KindHook)); n != 0 {
		problems = append(problems, fmt.Sprintf("run 1: %d hook calls, want none", n))
	}
	return problems
}

// checkSecond: old-pet was deleted after the signal, and the raw hook ran for
// it then, before Finish returned.
func checkSecond(r *runResult) []string {
	var problems []string
	oldURN := r.engine.URN(r.engine.StackURN(), petType, "old-pet")
	if r.res.State.Get(oldURN) != nil {
		problems = append(problems, "run 2: old-pet is still in the state")
	}
	if r.res.State.Get(r.engine.URN(r.engine.StackURN(), petType, "pet")) == nil {
		problems = append(problems, "run 2: pet is not in the state")
	}
	signal, hookSeq, logSeq := 0, 0, 0
	for _, ev := range r.engine.Record() {
		switch {
		case ev.Kind == enginetest.KindSignalAndWaitForShutdown && signal == 0:
			signal = ev.Seq
		case ev.Kind == enginetest.KindHook && ev.Name == farewellHook:
			if ev.URN != oldURN || ev.Point != "after_delete" || ev.Err != "" || hookSeq != 0 {
				problems = append(problems, "run 2: unexpected hook call: "+ev.String())
			}
			hookSeq = ev.Seq
		case ev.Kind == enginetest.KindLog && ev.URN == oldURN && strings.Contains(ev.Detail, "farewell, old-pet (id old-pet-id, 3 words)"):
			logSeq = ev.Seq
		}
	}
	switch {
	case hookSeq == 0:
		problems = append(problems, "run 2: the farewell hook was not called for old-pet")
	case signal == 0 || hookSeq < signal:
		problems = append(problems, "run 2: the farewell hook ran before the program signalled")
	case logSeq == 0:
		problems = append(problems, "run 2: the farewell hook's message did not reach the engine under old-pet")
	}
	return problems
}

// describe renders one event of the record as a table row, or nil for the
// events the report leaves out (feature checks, dials, RPC bookkeeping).
func describe(ev enginetest.Event, calls *callLog) []string {
	who := enginetest.URNName(ev.URN)
	outcome := ev.Detail
	if ev.Err != "" {
		outcome = "error: " + ev.Err
	}
	switch ev.Kind {
	case enginetest.KindRegisterResourceHook:
		return []string{fmt.Sprintf("register resource hook %q", ev.Name), "", "(a raw callback)"}
	case enginetest.KindStep:
		if typ := enginetest.QualifiedType(ev.URN); strings.HasPrefix(typ, "pulumi:providers:") {
			who = "provider " + strings.TrimPrefix(typ, "pulumi:providers:") + " (" + who + ")"
		}
		return []string{"step " + string(ev.Op), who}
	case enginetest.KindCallback:
		return []string{"transform " + calls.name(ev.Token), who, outcome}
	case enginetest.KindHook:
		return []string{fmt.Sprintf("hook %s %q", ev.Point, ev.Name), who, outcome}
	case enginetest.KindProviderCreate, enginetest.KindProviderDelete:
		return []string{"provider " + strings.ToLower(strings.TrimPrefix(string(ev.Kind), "Provider")), who, outcome}
	case enginetest.KindLog:
		return []string{"message from a callback", who, outcome}
	case enginetest.KindSignalAndWaitForShutdown:
		return []string{"program signals it is done", "", "the engine runs what is left"}
	}
	return nil
}

// callLog is a callbacks.Observer that counts the calls the servers answered
// and remembers the registration name behind each token.
type callLog struct {
	mu    sync.Mutex
	names map[string]string
	total int
	fails []string
}

func (l *callLog) CallStarted(context.Context, callbacks.CallInfo) {}

func (l *callLog) CallFinished(_ context.Context, info callbacks.CallInfo, code codes.Code, _ time.Duration) {
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

func (l *callLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

func (l *callLog) name(token string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.names[token]; ok {
		return fmt.Sprintf("%q", n)
	}
	return "(never called)"
}

// setenv sets the variables of env ("KEY=value") and returns a function that
// puts the environment back as it was.
func setenv(env []string) (restore func()) {
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

// table prints rows indented, with columns aligned and no trailing blanks.
func table(w io.Writer, rows [][]string) {
	var width []int
	for _, row := range rows {
		for i, cell := range row[:max(len(row)-1, 0)] {
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
