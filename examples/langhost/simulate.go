package main

import (
	"context"
	"fmt"
	"io"
	"strings"

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
	problems = append(problems, calls.Fails()...)
	if err := verdict(w, "langhost", problems); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nlanghost: ok (2 runs, %d callback calls)\n", calls.Count())
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

	res, err := engine.RunFunc(ctx, func() error {
		return deploy(ctx, callbacks.WithObserver(calls))
	})
	if err != nil {
		return nil, err
	}
	progErr := res.ProgramErr

	fmt.Fprintf(w, "\n%s:\n", title)
	printRecord(w, engine, func(ev enginetest.Event) []string { return describe(ev, calls) })
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
	for _, ev := range r.engine.Events() {
		switch {
		case ev.Kind == "SignalAndWaitForShutdown" && signal == 0:
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
	switch ev.Kind {
	case "RegisterResourceHook":
		return []string{fmt.Sprintf("register resource hook %q", ev.Name), "", "(a raw callback)"}
	case "ProviderDelete":
		return []string{"provider delete", enginetest.URNName(ev.URN), outcome(ev)}
	case enginetest.KindLog:
		return []string{"message from a callback", enginetest.URNName(ev.URN), outcome(ev)}
	}
	return describeCommon(ev, calls)
}
