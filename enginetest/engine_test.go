package enginetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestEnv(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithProject("p"), WithStack("s"), DryRun(true),
		WithConfig(map[string]string{"p:k": "v"}, "p:k"))
	env := e.Env()
	for _, want := range []string{
		"PULUMI_MONITOR=" + e.MonitorAddr(),
		"PULUMI_ENGINE=" + e.EngineAddr(),
		"PULUMI_PROJECT=p",
		"PULUMI_STACK=s",
		"PULUMI_DRY_RUN=true",
		"PULUMI_PARALLEL=16",
		`PULUMI_CONFIG={"p:k":"v"}`,
		`PULUMI_CONFIG_SECRET_KEYS=["p:k"]`,
	} {
		if !slices.Contains(env, want) {
			t.Errorf("Env() lacks %q: %q", want, env)
		}
	}
	if !strings.HasPrefix(e.MonitorAddr(), "127.0.0.1:") {
		t.Errorf("MonitorAddr %q is not on loopback", e.MonitorAddr())
	}
}

func TestTrace(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return &pulumirpc.TransformResponse{Properties: req.GetProperties()}, nil
	}))
	p.resourceHook("h", cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return &pulumirpc.ResourceHookResponse{Error: "nope"}, nil
	}), false, true)
	r := p.custom("r", nil, withHooks(&binding{AfterCreate: []string{"h"}}))
	p.finish()
	trace := e.Trace()
	for _, want := range []string{
		"Dial target=" + cbs.target,
		"callback resource-transform token=tok-1 urn=" + r.GetUrn() + " -> ok (props replaced)",
		"step create urn=" + r.GetUrn(),
		"ProviderCreate urn=" + r.GetUrn() + " -> attempt 1 id=r-id",
		`hook after_create "h" token=tok-2 urn=` + r.GetUrn() + " -> error: nope",
		`Diagnostic urn=` + r.GetUrn() + ` -> warning: AfterCreate hook "h" failed: nope`,
		"SignalAndWaitForShutdown -> waiting",
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, trace)
		}
	}
	if n := strings.Count(trace, "\n"); n != len(e.Events()) {
		t.Errorf("trace has %d lines for %d events", n, len(e.Events()))
	}
}

func TestSecondDeploymentSteps(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	p1.custom("same", map[string]any{"v": 1.0})
	p1.custom("update", map[string]any{"v": 1.0})
	p1.custom("replace", map[string]any{"v": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.ReplaceOnChanges = []string{"v"}
	})
	p1.custom("dbr", map[string]any{"v": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.ReplaceOnChanges = []string{"v"}
		r.DeleteBeforeReplace = true
	})
	p1.custom("gone", map[string]any{"v": 1.0})
	p1.custom("ignored", map[string]any{"v": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.IgnoreChanges = []string{"v"}
	})
	res1 := p1.finish()
	if res1.Err != nil {
		t.Fatal(res1.Err)
	}

	e2 := startEngine(t, WithState(res1.State))
	p2 := newProgram(t, e2)
	p2.custom("same", map[string]any{"v": 1.0})
	p2.custom("update", map[string]any{"v": 2.0})
	p2.custom("replace", map[string]any{"v": 2.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.ReplaceOnChanges = []string{"v"}
	})
	p2.custom("dbr", map[string]any{"v": 2.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.ReplaceOnChanges = []string{"v"}
		r.DeleteBeforeReplace = true
	})
	p2.custom("ignored", map[string]any{"v": 2.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.IgnoreChanges = []string{"v"}
	})
	res2 := p2.finish()
	if res2.Err != nil {
		t.Fatal(res2.Err)
	}
	var got []string
	for _, s := range res2.Steps {
		if s.URN != e2.URN("", "pulumi:providers:test", "default") {
			got = append(got, s.Op+":"+URNName(s.URN))
		}
	}
	wantEqualStrings(t, "steps", got, []string{
		"same:same", "update:update", "replace:replace", "delete-replaced:dbr", "replace:dbr",
		"same:ignored", "delete:gone", "delete-replaced:replace",
	})
	if res2.State.Get(e2.URN("", thingType, "gone")) != nil {
		t.Error("gone still in state")
	}
	if v := field(res2.State.Get(e2.URN("", thingType, "ignored")).Inputs, "v").GetNumberValue(); v != 1 {
		t.Errorf("ignored input changed to %v", v)
	}
	for _, r := range res2.State.Resources {
		if r.PendingDelete {
			t.Errorf("%s left pending delete", r.URN)
		}
	}
}

func TestProtectedResourceNotDeleted(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	p1.custom("p", nil, func(r *pulumirpc.RegisterResourceRequest) { r.Protect = boolPtr(true) })
	res1 := p1.finish()

	e2 := startEngine(t, WithState(res1.State))
	res2 := newProgram(t, e2).finishFailed()
	wantFailed(t, res2, "", "")
	wantErrContains(t, res2.Err, "as it is currently marked for protection")
	if res2.State.Get(e2.URN("", thingType, "p")) == nil {
		t.Fatal("protected resource deleted")
	}
}

func TestDeleteHooksNotRegistered(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		binding     *binding
		wantDeleted bool
	}{
		{"before-delete", &binding{BeforeDelete: []string{"missing"}}, false},
		{"after-delete", &binding{AfterDelete: []string{"missing"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e1 := startEngine(t)
			p1 := newProgram(t, e1)
			p1.custom("r", nil, withHooks(tt.binding))
			res1 := p1.finish()

			e2 := startEngine(t, WithState(res1.State))
			res2 := newProgram(t, e2).finishFailed()
			wantFailed(t, res2, e2.URN("", thingType, "r"), `hook "missing" was not registered`)
			deleted := res2.State.Get(e2.URN("", thingType, "r")) == nil
			if deleted != tt.wantDeleted {
				t.Fatalf("deleted = %t, want %t", deleted, tt.wantDeleted)
			}
			if n := len(e2.Events(kindProviderDelete)); (n == 1) != tt.wantDeleted {
				t.Fatalf("provider Delete called %d times", n)
			}
		})
	}
}

func TestHookOptionsNeedFeature(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithoutFeatures("sendsOptionsToHooks"))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var calls hookCalls
	p.resourceHook("h", cbs.hook(calls.fn(nil, nil)), false, false)
	p.custom("r", nil, withHooks(&binding{BeforeCreate: []string{"h"}}))
	p.finish()
	if got := calls.all(); len(got) != 1 || got[0].NewOptions != nil {
		t.Fatalf("calls %v, want one without options", got)
	}
}

func TestProgramLogsAndRootResource(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	stack := p.mustRegister(res{typ: rootStackType, name: "project-stack"})
	if stack.GetUrn() != e.StackURN() {
		t.Fatalf("stack URN %q, want %q", stack.GetUrn(), e.StackURN())
	}
	if _, err := p.eng.SetRootResource(p.ctx(), &pulumirpc.SetRootResourceRequest{Urn: stack.GetUrn()}); err != nil {
		t.Fatal(err)
	}
	root, err := p.eng.GetRootResource(p.ctx(), &pulumirpc.GetRootResourceRequest{})
	if err != nil || root.GetUrn() != stack.GetUrn() {
		t.Fatalf("GetRootResource = %v, %v", root, err)
	}
	if _, err := p.eng.Log(p.ctx(), &pulumirpc.LogRequest{
		Severity: pulumirpc.LogSeverity_WARNING, Message: "careful", Urn: stack.GetUrn(),
	}); err != nil {
		t.Fatal(err)
	}
	res := p.finish()
	want := Diagnostic{Severity: severityWarning, URN: stack.GetUrn(), Message: "careful", FromProgram: true}
	if !slices.Contains(res.Diagnostics, want) {
		t.Fatalf("diagnostics %v lack %v", res.Diagnostics, want)
	}
}

func TestReadResourceRunsNoHooksOrTransforms(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var calls hookCalls
	p.stackTransform(cbs.transform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return nil, nil
	}))
	resp, err := p.mon.ReadResource(p.ctx(), &pulumirpc.ReadResourceRequest{
		Id: "ext-1", Type: thingType, Name: "ext", Properties: mustStruct(t, map[string]any{"a": "b"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	res := p.finish()
	st := res.State.Get(resp.GetUrn())
	if st == nil || !st.External || st.ID != "ext-1" {
		t.Fatalf("state %v", st)
	}
	if len(calls.all()) != 0 || len(e.Events(KindCallback)) != 0 {
		t.Fatal("callbacks ran for a read")
	}
}

func TestDuplicateURN(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	p.custom("dup", nil)
	_, err := p.register(res{typ: thingType, name: "dup", custom: true})
	wantErrContains(t, err, "Duplicate resource URN")
	p.finish()
}

func TestPropsHelpers(t *testing.T) {
	t.Parallel()
	ov := outputValue{
		Value: structpb.NewStringValue("v"), Known: true, Secret: true, Dependencies: []string{"urn:a"},
	}
	got, ok := decodeOutputValue(ov.Encode())
	if !ok || got.Value.GetStringValue() != "v" || !got.Known || !got.Secret || len(got.Dependencies) != 1 {
		t.Fatalf("round trip gave %+v", got)
	}
	if _, ok := decodeOutputValue(structpb.NewStringValue("x")); ok {
		t.Fatal("a string decoded as an output value")
	}
	unknown, _ := decodeOutputValue(outputValue{}.Encode())
	if unknown.Known {
		t.Fatal("an output value without value is known")
	}
	s := secretValue(structpb.NewNumberValue(3))
	if !isSecret(s) || secretElement(s).GetNumberValue() != 3 {
		t.Fatalf("secret %v", s)
	}
	if signature(resourceReferenceValue("urn:x", "id")) != resourceReferenceSig {
		t.Fatal("resource reference signature")
	}
	if QualifiedType("urn:pulumi:s::p::a:b:C$d:e:F::n::x") != "a:b:C$d:e:F" ||
		URNName("urn:pulumi:s::p::a:b:C::n::x") != "n::x" {
		t.Fatal("URN parsing")
	}
}

func TestSecretOutputsForProgram(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	secret := secretValue(structpb.NewStringValue("s"))
	accept := p.custom("a", map[string]any{"k": secret})
	plain := p.custom("b", map[string]any{"k": secret}, func(r *pulumirpc.RegisterResourceRequest) { r.AcceptSecrets = false })
	p.finish()
	if !isSecret(field(accept.GetObject(), "k")) {
		t.Errorf("accepting program got %v", accept.GetObject())
	}
	if field(plain.GetObject(), "k").GetStringValue() != "s" {
		t.Errorf("non-accepting program got %v", plain.GetObject())
	}
}

func TestSameStepRunsNoHooks(t *testing.T) {
	t.Parallel()
	all := &binding{
		BeforeCreate: []string{"h"}, AfterCreate: []string{"h"}, BeforeUpdate: []string{"h"},
		AfterUpdate: []string{"h"}, BeforeDelete: []string{"h"}, AfterDelete: []string{"h"},
	}
	e1 := startEngine(t)
	cbs1 := newCallbackServer(t)
	p1 := newProgram(t, e1)
	var first hookCalls
	p1.resourceHook("h", cbs1.hook(first.fn(nil, nil)), false, false)
	p1.custom("r", map[string]any{"v": 1.0}, withHooks(all))
	res1 := p1.finish()
	if len(first.all()) != 2 {
		t.Fatalf("create ran %d hooks, want 2", len(first.all()))
	}

	e2 := startEngine(t, WithState(res1.State))
	cbs2 := newCallbackServer(t)
	p2 := newProgram(t, e2)
	var second hookCalls
	p2.resourceHook("h", cbs2.hook(second.fn(nil, nil)), false, false)
	r := p2.custom("r", map[string]any{"v": 1.0}, withHooks(all))
	res2 := p2.finish()
	if ops := stepOps(res2); ops[r.GetUrn()] != opSame {
		t.Fatalf("steps %v, want same", res2.Steps)
	}
	if n := len(second.all()); n != 0 {
		t.Fatalf("a same step ran %d hooks", n)
	}
}

func TestContinueOnErrorResultReporting(t *testing.T) {
	t.Parallel()
	// A skipped dependent is told so as each engine does: 3.274 answers
	// SUCCESS with unknown outputs, 3.260 answered SKIP (result 2).
	for _, tc := range []struct {
		engine  string
		result  pulumirpc.Result
		unknown bool
	}{
		{engine3_274, pulumirpc.Result_SUCCESS, true},
		{engine3_260, pulumirpc.Result(2), false},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			t.Parallel()
			testContinueOnErrorResultReporting(t, tc.engine, tc.result, tc.unknown)
		})
	}
}

func testContinueOnErrorResultReporting(t *testing.T, engine string, skipped pulumirpc.Result, unknown bool) {
	e := startEngine(t, EngineVersion(engine), ContinueOnError(true), WithProvider(&FakeProvider{
		OnCreate: func(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
			if req.Name == "bad" {
				return nil, errors.New("no")
			}
			return (&FakeProvider{}).create(ctx, req)
		},
	}))
	p := newProgram(t, e)
	reporting := func(r *pulumirpc.RegisterResourceRequest) { r.SupportsResultReporting = true }
	bad := p.custom("bad", nil, reporting)
	dependent := p.custom("dependent", nil, reporting, func(r *pulumirpc.RegisterResourceRequest) {
		r.Dependencies = []string{bad.GetUrn()}
	})
	other := p.custom("other", nil, reporting)
	res := p.finishFailed()
	if bad.GetResult() != pulumirpc.Result_FAIL || dependent.GetResult() != skipped ||
		dependent.GetUnknown() != unknown || other.GetResult() != pulumirpc.Result_SUCCESS {
		t.Fatalf("results %v %v (unknown %v) %v, want FAIL %v (unknown %v) SUCCESS",
			bad.GetResult(), dependent.GetResult(), dependent.GetUnknown(), other.GetResult(), skipped, unknown)
	}
	wantErrContains(t, res.Err, "no")
	if res.State.Get(other.GetUrn()) == nil || res.State.Get(dependent.GetUrn()) != nil {
		t.Fatalf("state %v", res.State.URNs())
	}
}

func TestAliasTakesOverPriorResource(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	old := p1.custom("old-name", map[string]any{"v": 1.0})
	res1 := p1.finish()

	e2 := startEngine(t, WithState(res1.State))
	p2 := newProgram(t, e2)
	renamed := p2.custom("new-name", map[string]any{"v": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.Aliases = []*pulumirpc.Alias{{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{Name: "old-name"}}}}
	})
	res2 := p2.finish()
	if res2.Err != nil {
		t.Fatal(res2.Err)
	}
	if ops := stepOps(res2); ops[renamed.GetUrn()] != opSame || ops[old.GetUrn()] != "" {
		t.Fatalf("steps %v, want a same step and no delete", res2.Steps)
	}
	if res2.State.Get(old.GetUrn()) != nil || res2.State.Get(renamed.GetUrn()).ID != old.GetId() {
		t.Fatalf("state %v", res2.State.URNs())
	}
}
