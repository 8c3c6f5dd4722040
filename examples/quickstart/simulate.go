package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
)

// Stand-ins for what the random provider would return.
const (
	fakePetName = "brave-otter"
	fakeSuffix  = "k3v9x2qa"
)

// simulate deploys the program against the simulator and reports to w what
// happened. It fails if the deployment failed or if anything the program is
// meant to do did not happen.
func simulate(ctx context.Context, w io.Writer) error {
	engine, err := enginetest.Start(
		enginetest.WithProject("quickstart"),
		enginetest.WithStack("dev"),
		enginetest.WithProvider(&enginetest.FakeProvider{OnCreate: fakeCreate}),
	)
	if err != nil {
		return err
	}
	defer engine.Close()

	fmt.Fprintln(w, "quickstart: no Pulumi engine in the environment (PULUMI_MONITOR is unset), so the program")
	fmt.Fprintf(w, "deploys project %q, stack %q on the simulator, whose provider throttles the first\n",
		engine.Project(), engine.Stack())
	fmt.Fprintln(w, "create of \"suffix\".")

	calls := &callLog{}
	res, err := engine.RunFunc(ctx, func() error {
		return pulumi.RunErr(deploy(callbacks.WithObserver(calls)))
	})
	if err != nil {
		return err
	}
	progErr := res.ProgramErr

	report(w, engine, res, calls)
	problems := check(engine, res, calls)
	if progErr != nil {
		problems = append([]string{"the program failed: " + progErr.Error()}, problems...)
	}
	if res.Err != nil {
		problems = append(problems, "the deployment failed: "+res.Err.Error())
	}
	if err := verdict(w, "quickstart", problems); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nquickstart: ok (%d resources, %d callback calls)\n", len(res.State.Resources), calls.Count())
	return nil
}

// fakeCreate plays the random provider: the first create of the suffix is
// throttled, as a cloud API under load would answer.
func fakeCreate(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
	outputs := &structpb.Struct{Fields: maps.Clone(req.Inputs.GetFields())}
	if outputs.Fields == nil {
		outputs.Fields = map[string]*structpb.Value{}
	}
	var id string
	switch req.Type {
	case petType:
		id = fakePetName
	case stringType:
		if req.Attempt == 1 {
			return nil, errors.New("throttled: rate exceeded, try again")
		}
		id = fakeSuffix
		outputs.Fields["result"] = structpb.NewStringValue(id)
	default:
		id = req.Name + "-id"
	}
	if req.Preview {
		id = ""
	}
	return &enginetest.CreateResponse{ID: id, Outputs: outputs}, nil
}

// report prints what the engine did, the final state and the diagnostics.
func report(w io.Writer, engine *enginetest.Engine, res *enginetest.Result, calls *callLog) {
	stack := engine.StackURN()
	fmt.Fprintln(w, "\nWhat the engine did (the stack's own events left out):")
	printRecord(w, engine, func(ev enginetest.Event) []string { return describe(ev, calls) })

	fmt.Fprintf(w, "\nFinal state (%d resources):\n", len(res.State.Resources))
	var rows [][]string
	for _, r := range res.State.Resources {
		row := []string{r.Type, r.Name}
		switch {
		case r.URN == stack:
			row = append(row, "outputs: "+flat(r.Outputs))
		case r.Custom && strings.HasPrefix(r.Type, "pulumi:providers:"):
			row = append(row, "(default provider)")
		default:
			row = append(row, fmt.Sprintf("id %s, tags (keepers): %s", r.ID, flat(r.Inputs.GetFields()["keepers"].GetStructValue())))
		}
		rows = append(rows, row)
	}
	table(w, rows)

	fmt.Fprintln(w, "\nDiagnostics:")
	rows = nil
	for _, d := range res.Diagnostics {
		from := "(engine)"
		if d.FromProgram {
			from = "(callback)"
		}
		rows = append(rows, []string{d.Severity, enginetest.URNName(d.URN), d.Message, from})
	}
	table(w, rows)
}

// describe renders one event of the record as a table row, or nil for the
// events the report leaves out (feature checks, dials, RPC bookkeeping).
func describe(ev enginetest.Event, calls *callLog) []string {
	switch ev.Kind {
	case "RegisterStackTransform":
		return []string{"register stack transform " + calls.Name(ev.Token)}
	case "RegisterStackInvokeTransform":
		return []string{"register invoke transform " + calls.Name(ev.Token)}
	case "RegisterResourceHook":
		return []string{fmt.Sprintf("register resource hook %q", ev.Name)}
	case "RegisterErrorHook":
		return []string{fmt.Sprintf("register error hook %q", ev.Name)}
	case enginetest.KindCallback:
		if ev.Callback == "invoke-transform" {
			return []string{"invoke transform " + calls.Name(ev.Token), ev.Name, argsChange(ev)}
		}
	case enginetest.KindErrorHook:
		outcome := outcome(ev)
		if r, ok := ev.Response.(*pulumirpc.ErrorHookResponse); ok && ev.Err == "" && r.GetRetry() {
			outcome = "asks for a retry"
		}
		return []string{fmt.Sprintf("error hook %q", ev.Name), enginetest.URNName(ev.URN), outcome}
	case "Invoke":
		return []string{"invoke", ev.Name, outcome(ev)}
	}
	return describeCommon(ev, calls)
}

// argsChange says which arguments an invoke transform added.
func argsChange(ev enginetest.Event) string {
	req, _ := ev.Request.(*pulumirpc.TransformInvokeRequest)
	res, _ := ev.Response.(*pulumirpc.TransformInvokeResponse)
	if ev.Err != "" {
		return "error: " + ev.Err
	}
	if res.GetArgs() == nil {
		return "no change"
	}
	var added []string
	for k := range res.GetArgs().GetFields() {
		if _, ok := req.GetArgs().GetFields()[k]; !ok {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	return "added argument " + strings.Join(added, ", ")
}

// flat renders a struct of plain values as sorted key=value pairs.
func flat(s *structpb.Struct) string {
	keys := slices.Sorted(maps.Keys(s.GetFields()))
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := s.GetFields()[k]
		parts[i] = k + "=" + fmt.Sprint(v.AsInterface())
	}
	return strings.Join(parts, " ")
}

// check lists what the program was meant to do and did not.
func check(engine *enginetest.Engine, res *enginetest.Result, calls *callLog) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	problems = append(problems, calls.Fails()...)

	// Every custom resource carries the transform's tags next to its own.
	want := map[string]string{"managed-by": "pulumi", "project": engine.Project(), "stack": engine.Stack()}
	for name, typ := range map[string]string{"pet": petType, "suffix": stringType} {
		r := res.State.Get(engine.URN(engine.StackURN(), typ, name))
		if r == nil {
			fail("%s is not in the state", name)
			continue
		}
		tags := r.Inputs.GetFields()["keepers"].GetStructValue().GetFields()
		for k, v := range want {
			if tags[k].GetStringValue() != v {
				fail("%s: tag %s is %q, want %q", name, k, tags[k].GetStringValue(), v)
			}
		}
		if name == "pet" && tags["owner"].GetStringValue() != "pets-team" {
			fail("pet: the program's own owner tag was lost")
		}
	}

	// The hooks ran once per resource, the error hook once, for the suffix.
	hookCalls := map[string]int{}
	for _, ev := range engine.Events(enginetest.KindHook) {
		if ev.Err == "" && ev.Detail == "ok" {
			hookCalls[ev.Point+" "+ev.Name+" "+enginetest.URNName(ev.URN)]++
		}
	}
	for _, name := range []string{"pet", "suffix"} {
		for _, h := range []string{"before_create audit", "after_create record"} {
			if n := hookCalls[h+" "+name]; n != 1 {
				fail("hook %s ran %d times for %s, want 1", h, n, name)
			}
		}
	}
	errorHooks := engine.Events(enginetest.KindErrorHook)
	if len(errorHooks) != 1 {
		fail("the error hook ran %d times, want 1", len(errorHooks))
	} else {
		req, _ := errorHooks[0].Request.(*pulumirpc.ErrorHookRequest)
		resp, _ := errorHooks[0].Response.(*pulumirpc.ErrorHookResponse)
		if enginetest.URNName(req.GetUrn()) != "suffix" || req.GetFailedOperation() != "create" || !resp.GetRetry() {
			fail("the error hook got %s of %s and answered retry=%t, want a retried create of suffix",
				req.GetFailedOperation(), req.GetUrn(), resp.GetRetry())
		}
	}
	creates := 0
	for _, ev := range engine.Events("ProviderCreate") {
		if enginetest.URNName(ev.URN) == "suffix" {
			creates++
		}
	}
	if creates != 2 {
		fail("the provider was asked to create suffix %d times, want 2", creates)
	}

	// The hook's warning reached the engine, attached to the suffix.
	warned := false
	for _, d := range res.Diagnostics {
		if d.FromProgram && d.Severity == "warning" && enginetest.URNName(d.URN) == "suffix" {
			warned = true
		}
	}
	if !warned {
		fail("no warning from the audit hook under suffix")
	}

	// The invoke transform labelled the lookup, and the lookup found the suffix.
	var labelled bool
	for _, ev := range engine.Events(enginetest.KindCallback) {
		if r, ok := ev.Response.(*pulumirpc.TransformInvokeResponse); ok && ev.Name == getResTok {
			labelled = r.GetArgs().GetFields()["requestedBy"].GetStringValue() == engine.Project()
		}
	}
	if !labelled {
		fail("the invoke transform did not label the %s call", getResTok)
	}
	if st := res.State.Get(engine.StackURN()); st.Outputs.GetFields()["suffixViaLookup"].GetStringValue() != fakeSuffix {
		fail("the stack output suffixViaLookup is %v, want %q", st.Outputs.GetFields()["suffixViaLookup"], fakeSuffix)
	}
	return problems
}
