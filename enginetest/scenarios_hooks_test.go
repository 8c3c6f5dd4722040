package enginetest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

type binding = pulumirpc.RegisterResourceRequest_ResourceHooksBinding

func withHooks(b *binding) func(*pulumirpc.RegisterResourceRequest) {
	return func(r *pulumirpc.RegisterResourceRequest) { r.Hooks = b }
}

func TestScenario21_HookRegistryNames(t *testing.T) {
	t.Parallel()
	type reg struct {
		name  string
		error bool // an error hook rather than a resource hook
	}
	tests := []struct {
		name string
		regs []reg
		want string // error of the last registration
	}{
		{"resource-twice", []reg{{"h", false}, {"h", false}}, `resource hook already registered for name "h"`},
		{"error-after-resource", []reg{{"h", false}, {"h", true}}, `resource hook already registered for name "h"`},
		{"resource-after-error", []reg{{"h", true}, {"h", false}}, `resource hook already registered for name "h"`},
		{"error-twice", []reg{{"h", true}, {"h", true}}, `resource hook already registered for name "h"`},
		{"empty-resource", []reg{{"", false}}, "resource hook name cannot be empty"},
		{"empty-error", []reg{{"", true}}, "resource hook name cannot be empty"},
		{"distinct", []reg{{"a", false}, {"b", true}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var err error
			for i, r := range tt.regs {
				if r.error {
					_, err = p.mon.RegisterErrorHook(p.ctx(), &pulumirpc.RegisterErrorHookRequest{
						Name: r.name, Callback: cbs.errorHook(nil),
					})
				} else {
					_, err = p.mon.RegisterResourceHook(p.ctx(), &pulumirpc.RegisterResourceHookRequest{
						Name: r.name, Callback: cbs.hook(nil),
					})
				}
				if i < len(tt.regs)-1 && err != nil {
					t.Fatalf("registration %d: %v", i, err)
				}
			}
			if errMessage(err) != tt.want {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestScenario22_BeforeCreateRequest(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var calls hookCalls
	p.resourceHook("h", cbs.hook(calls.fn(nil, nil)), false, false)
	r := p.custom("r", map[string]any{"foo": "bar"}, withHooks(&binding{BeforeCreate: []string{"h"}}),
		func(r *pulumirpc.RegisterResourceRequest) { r.IgnoreChanges = []string{"x"} })
	p.finish()

	got := calls.all()
	if len(got) != 1 {
		t.Fatalf("got %d calls, want 1", len(got))
	}
	req := got[0]
	if req.GetUrn() != r.GetUrn() || req.GetId() != "" || req.GetName() != "r" || req.GetType() != thingType {
		t.Errorf("urn=%q id=%q name=%q type=%q", req.GetUrn(), req.GetId(), req.GetName(), req.GetType())
	}
	wantProto(t, "new_inputs", req.GetNewInputs(), mustStruct(t, map[string]any{"foo": "bar"}))
	if req.OldInputs != nil || req.NewOutputs != nil || req.OldOutputs != nil || req.OldOptions != nil {
		t.Errorf("unexpected fields in %v", req)
	}
	o := req.GetNewOptions()
	if o == nil || o.Protect == nil || o.RetainOnDelete == nil || o.GetProtect() || o.GetRetainOnDelete() {
		t.Fatalf("new_options %v, want protect and retain_on_delete present and false", o)
	}
	wantEqualStrings(t, "ignore_changes", o.GetIgnoreChanges(), []string{"x"})
	wantEqualStrings(t, "hooks", o.GetHooks().GetBeforeCreate(), []string{"h"})
	if o.GetProvider() == "" {
		t.Error("new_options carries no provider reference")
	}
}

func TestScenario23_AfterCreateRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		preview     bool
		wantID      string
		wantUnknown bool
	}{
		{name: "up", wantID: "r-id"},
		{name: "preview", preview: true, wantID: "", wantUnknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, DryRun(tt.preview))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var calls hookCalls
			p.resourceHook("h", cbs.hook(calls.fn(nil, nil)), true, false)
			props := map[string]any{"foo": "bar"}
			if tt.preview {
				props["later"] = unknownValue()
			}
			r := p.custom("r", props, withHooks(&binding{AfterCreate: []string{"h"}}))
			res := p.finish()

			got := calls.all()
			if len(got) != 1 {
				t.Fatalf("got %d calls, want 1", len(got))
			}
			req := got[0]
			if req.GetId() != tt.wantID || r.GetId() != tt.wantID {
				t.Errorf("hook id %q, response id %q, want %q", req.GetId(), r.GetId(), tt.wantID)
			}
			wantProto(t, "new_outputs", req.GetNewOutputs(), res.State.Get(r.GetUrn()).Outputs)
			if req.GetNewInputs() == nil || req.OldInputs != nil || req.OldOutputs != nil || req.GetNewOptions() == nil {
				t.Errorf("fields of %v", req)
			}
			if tt.wantUnknown && field(req.GetNewOutputs(), "later").GetStringValue() != unknownSentinel {
				t.Errorf("new_outputs %v, want an unknown", req.GetNewOutputs())
			}
		})
	}
}

func TestScenario24_BeforeUpdateRequest(t *testing.T) {
	t.Parallel()
	// First deployment: the binding names the hook "old".
	e1 := startEngine(t)
	cbs1 := newCallbackServer(t)
	p1 := newProgram(t, e1)
	p1.resourceHook("old", cbs1.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, nil
	}), false, false)
	p1.custom("r", map[string]any{"v": 1.0}, withHooks(&binding{BeforeUpdate: []string{"old"}}))
	res1 := p1.finish()
	old := res1.State.Get(e1.URN("", thingType, "r"))

	// Second deployment: the binding names "new"; both are registered.
	e2 := startEngine(t, WithState(res1.State))
	cbs2 := newCallbackServer(t)
	p2 := newProgram(t, e2)
	var oldCalls, newCalls hookCalls
	p2.resourceHook("old", cbs2.hook(oldCalls.fn(nil, nil)), false, false)
	p2.resourceHook("new", cbs2.hook(newCalls.fn(nil, nil)), false, false)
	p2.custom("r", map[string]any{"v": 2.0}, withHooks(&binding{BeforeUpdate: []string{"new"}}),
		func(r *pulumirpc.RegisterResourceRequest) { r.Protect = boolPtr(true) })
	res2 := p2.finish()
	if res2.Err != nil {
		t.Fatal(res2.Err)
	}

	if n := len(oldCalls.all()); n != 0 {
		t.Fatalf("the old binding's hook ran %d times", n)
	}
	got := newCalls.all()
	if len(got) != 1 {
		t.Fatalf("got %d calls, want 1\n%s", len(got), e2.Trace())
	}
	req := got[0]
	if req.GetId() != old.ID || req.GetId() == "" {
		t.Errorf("id %q, want %q", req.GetId(), old.ID)
	}
	wantProto(t, "new_inputs", req.GetNewInputs(), mustStruct(t, map[string]any{"v": 2.0}))
	wantProto(t, "old_inputs", req.GetOldInputs(), old.Inputs)
	wantProto(t, "old_outputs", req.GetOldOutputs(), old.Outputs)
	if req.NewOutputs != nil {
		t.Errorf("new_outputs set: %v", req.NewOutputs)
	}
	if req.GetOldOptions().GetProtect() || !req.GetNewOptions().GetProtect() {
		t.Errorf("old_options %v new_options %v, want protect false then true", req.GetOldOptions(), req.GetNewOptions())
	}
	wantEqualStrings(t, "old binding", req.GetOldOptions().GetHooks().GetBeforeUpdate(), []string{"old"})
	if ops := stepOps(res2); ops[old.URN] != opUpdate {
		t.Fatalf("steps %v, want an update", res2.Steps)
	}
}

func stepOps(r *Result) map[string]string {
	out := map[string]string{}
	for _, s := range r.Steps {
		out[s.URN] = s.Op
	}
	return out
}

func TestScenario25_AfterDeleteAfterShutdownSignal(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	cbs1 := newCallbackServer(t)
	p1 := newProgram(t, e1)
	p1.resourceHook("cleanup", cbs1.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, nil
	}), false, false)
	p1.custom("r", map[string]any{"v": "x"}, withHooks(&binding{AfterDelete: []string{"cleanup"}}))
	res1 := p1.finish()
	old := res1.State.Get(e1.URN("", thingType, "r"))

	// The second program drops the resource but registers the hook again,
	// on a new server and token.
	e2 := startEngine(t, WithState(res1.State))
	cbs2 := newCallbackServer(t)
	p2 := newProgram(t, e2)
	var calls hookCalls
	p2.resourceHook("cleanup", cbs2.hook(calls.fn(nil, nil)), false, false)
	if n := len(calls.all()); n != 0 {
		t.Fatalf("delete hook ran before the program was done")
	}
	if err := p2.signal(); err != nil {
		t.Fatal(err)
	}
	// SignalAndWaitForShutdown returned: the hook has run.
	callbacksAtSignal := len(e2.Events(KindHook, KindErrorHook, KindCallback))
	got := calls.all()
	if len(got) != 1 {
		t.Fatalf("got %d calls, want 1", len(got))
	}
	req := got[0]
	wantProto(t, "old_inputs", req.GetOldInputs(), old.Inputs)
	wantProto(t, "old_outputs", req.GetOldOutputs(), old.Outputs)
	if req.GetId() != old.ID || req.NewInputs != nil || req.NewOptions != nil || req.GetOldOptions() == nil {
		t.Errorf("request %v", req)
	}
	res2 := wait(t, e2)
	if res2.State.Get(old.URN) != nil {
		t.Fatal("resource still in state")
	}
	if n := len(e2.Events(KindHook, KindErrorHook, KindCallback)); n != callbacksAtSignal {
		t.Fatalf("%d callback calls after SignalAndWaitForShutdown returned", n-callbacksAtSignal)
	}
}

func TestScenario26_OnDryRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		onDryRun, preview, wantCall bool
	}{
		{onDryRun: false, preview: true, wantCall: false},
		{onDryRun: false, preview: false, wantCall: true},
		{onDryRun: true, preview: true, wantCall: true},
		{onDryRun: true, preview: false, wantCall: true},
	}
	for _, tt := range tests {
		name := map[bool]string{true: "on_dry_run", false: "no_dry_run"}[tt.onDryRun] + "/" +
			map[bool]string{true: "preview", false: "up"}[tt.preview]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, DryRun(tt.preview))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var calls hookCalls
			p.resourceHook("h", cbs.hook(calls.fn(nil, nil)), tt.onDryRun, false)
			p.custom("r", nil, withHooks(&binding{BeforeCreate: []string{"h"}, AfterCreate: []string{"h"}}))
			p.finish()
			want := 0
			if tt.wantCall {
				want = 2
			}
			if n := len(calls.all()); n != want {
				t.Fatalf("got %d calls, want %d", n, want)
			}
		})
	}
}

func TestScenario27_BeforeCreateErrorBails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		resp    *pulumirpc.ResourceHookResponse
		err     error
		wantMsg string
	}{
		{"response-error", &pulumirpc.ResourceHookResponse{Error: "Oh no"}, nil, `before hook "myHook" failed: Oh no`},
		{"grpc-error", nil, errors.New("Oh no"), `before hook "myHook" failed: rpc error: code = Unknown desc = Oh no`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var calls hookCalls
			p.resourceHook("myHook", cbs.hook(calls.fn(tt.resp, tt.err)), false, false)
			urn := e.URN("", thingType, "r")
			result := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, mod: withHooks(&binding{BeforeCreate: []string{"myHook"}})})
			// The deployment bailed: nothing later runs or is answered.
			p.registerAfterEnd(res{typ: thingType, name: "later", custom: true}).stop()

			wantFailed(t, result, urn, tt.wantMsg)
			if n := len(e.Events(kindProviderCreate)); n != 0 {
				t.Fatalf("provider Create called %d times", n)
			}
			if result.State.Get(urn) != nil || result.State.Get(e.URN("", thingType, "later")) != nil {
				t.Fatalf("state %v, want neither resource", result.State.URNs())
			}
		})
	}
}

func TestScenario28_AfterCreateErrorFailsFast(t *testing.T) {
	t.Parallel()
	for _, continueOnError := range []bool{false, true} {
		name := map[bool]string{false: "fail-fast", true: "continue-on-error"}[continueOnError]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, ContinueOnError(continueOnError))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			p.resourceHook("myHook", cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				return &pulumirpc.ResourceHookResponse{Error: "Oh no"}, nil
			}), false, false)
			// The after hook's failure does not fail the RPC.
			r := p.custom("r", map[string]any{"v": 1.0}, withHooks(&binding{AfterCreate: []string{"myHook"}}))
			later := res{typ: thingType, name: "later", custom: true}
			var res *Result
			var laterErr error
			if continueOnError {
				_, laterErr = p.register(later)
				// A failed deployment never answers the signal.
				res = p.finishFailed()
			} else {
				// The deployment ended at the failure: the later
				// registration is never answered.
				res = wait(t, e)
				p.registerAfterEnd(later).stop()
			}

			msg := `after hook "myHook" failed: Oh no`
			if st := res.State.Get(r.GetUrn()); st == nil || st.ID != "r-id" {
				t.Fatalf("resource not committed: %v", st)
			}
			wantFailed(t, res, r.GetUrn(), msg)
			laterState := res.State.Get(e.URN("", thingType, "later"))
			if continueOnError {
				if laterErr != nil || laterState == nil {
					t.Fatalf("later: err=%v state=%v, want created", laterErr, laterState)
				}
			} else if laterState != nil {
				t.Fatalf("later: state=%v, want not created", laterState)
			}
		})
	}
}

func TestScenario29_IgnoreErrors(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	p.resourceHook("myHook", cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return &pulumirpc.ResourceHookResponse{Error: "Oh no"}, nil
	}), false, true)
	var second hookCalls
	p.resourceHook("second", cbs.hook(second.fn(nil, nil)), false, false)
	r := p.custom("r", nil, withHooks(&binding{BeforeCreate: []string{"myHook", "second"}}))
	res := p.finish()
	if res.Err != nil {
		t.Fatalf("deployment failed: %v", res.Err)
	}
	wantDiag(t, res.Diagnostics, severityWarning, r.GetUrn(), `BeforeCreate hook "myHook" failed: Oh no`)
	if len(second.all()) != 1 {
		t.Fatal("the next hook did not run")
	}
	if res.State.Get(r.GetUrn()) == nil {
		t.Fatal("resource not created")
	}
}

func TestScenario30_UnregisteredHookName(t *testing.T) {
	t.Parallel()
	for _, preview := range []bool{false, true} {
		t.Run(map[bool]string{false: "up", true: "preview"}[preview], func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, DryRun(preview))
			p := newProgram(t, e)
			res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, mod: withHooks(&binding{BeforeCreate: []string{"x"}})})
			wantFailed(t, res, e.URN("", thingType, "r"), `hook "x" was not registered`)
			want := map[bool]string{false: "update failed", true: "preview failed"}[preview]
			if d := res.Diagnostics[len(res.Diagnostics)-1]; d.Message != want {
				t.Fatalf("got %v, want %q", d, want)
			}
		})
	}
}

func TestScenario31_ComponentHooks(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var outputsSent, outputsReturned atomic.Bool
	var before, after hookCalls
	var afterWhilePending atomic.Bool
	p.resourceHook("before", cbs.hook(before.fn(nil, nil)), false, false)
	afterFn := after.fn(nil, nil)
	p.resourceHook("after", cbs.hook(func(ctx context.Context, req *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		afterWhilePending.Store(outputsSent.Load() && !outputsReturned.Load())
		return afterFn(ctx, req)
	}), false, false)
	comp := p.mustRegister(res{typ: "test:index:Component", name: "comp", props: map[string]any{"in": "x"},
		mod: withHooks(&binding{BeforeCreate: []string{"before"}, AfterCreate: []string{"after"}})})
	if len(before.all()) != 1 {
		t.Fatal("before_create did not run with the component's registration")
	}
	p.custom("child", nil, func(r *pulumirpc.RegisterResourceRequest) { r.Parent = comp.GetUrn() })
	if len(after.all()) != 0 {
		t.Fatal("after_create ran before RegisterResourceOutputs")
	}
	outs := mustStruct(t, map[string]any{"out": "y"})
	outputsSent.Store(true)
	if _, err := p.mon.RegisterResourceOutputs(p.ctx(), &pulumirpc.RegisterResourceOutputsRequest{
		Urn: comp.GetUrn(), Outputs: outs,
	}); err != nil {
		t.Fatal(err)
	}
	outputsReturned.Store(true)
	res := p.finish()

	got := after.all()
	if len(got) != 1 || !afterWhilePending.Load() {
		t.Fatalf("after_create calls %d, while RegisterResourceOutputs pending: %t", len(got), afterWhilePending.Load())
	}
	wantProto(t, "new_outputs", got[0].GetNewOutputs(), outs)
	wantProto(t, "new_inputs", got[0].GetNewInputs(), mustStruct(t, map[string]any{"in": "x"}))
	if got[0].GetId() != "" {
		t.Errorf("component id %q", got[0].GetId())
	}
	wantProto(t, "state outputs", res.State.Get(comp.GetUrn()).Outputs, outs)
}
