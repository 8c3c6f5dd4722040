package enginetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestStateListsDefaultProviderBeforeItsResource(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	r := p.custom("r", nil)
	res := p.finish()
	wantEqualStrings(t, "state", res.State.URNs(), []string{e.URN("", "pulumi:providers:test", "default"), r.GetUrn()})
}

// The state lists resources in the order their steps complete, not the
// order they were registered in.
func TestStateOrderIsStepCompletionOrder(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	p.custom("first", nil) // creates the default provider
	started := make(chan struct{})
	release := make(chan struct{})
	slow := cbs.transform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		close(started)
		<-release
		return nil, nil
	})
	done := make(chan error, 1)
	go func() {
		_, err := p.register(res{typ: thingType, name: "late", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
			r.Transforms = []*pulumirpc.Callback{slow}
		}})
		done <- err
	}()
	<-started
	p.custom("early", nil)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res := p.finish()
	wantEqualStrings(t, "state", res.State.URNs(), []string{
		e.URN("", "pulumi:providers:test", "default"), e.URN("", thingType, "first"),
		e.URN("", thingType, "early"), e.URN("", thingType, "late"),
	})
}

func TestRemoteComponentGetsDefaultProvider(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got string
	e := startEngine(t, WithProvider(&FakeProvider{
		OnConstruct: func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
			mu.Lock()
			got = req.Provider
			mu.Unlock()
			return (&FakeProvider{}).construct(ctx, req)
		},
	}))
	p := newProgram(t, e)
	p.mustRegister(res{typ: compType, name: "c", mod: func(r *pulumirpc.RegisterResourceRequest) { r.Remote = true }})
	res := p.finish()
	def := e.URN("", "pulumi:providers:test", "default")
	wantEqualStrings(t, "state", res.State.URNs(), []string{def, e.URN("", compType, "c")})
	mu.Lock()
	defer mu.Unlock()
	if got != providerReference(def, res.State.Get(def).ID) {
		t.Fatalf("Construct got provider %q, want the default provider", got)
	}
}

func TestInvokeGetsDefaultProvider(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	e := startEngine(t, WithProvider(&FakeProvider{
		OnInvoke: func(_ context.Context, req *InvokeRequest) (*InvokeResponse, error) {
			mu.Lock()
			got = append(got, req.Provider)
			mu.Unlock()
			return &InvokeResponse{}, nil
		},
	}))
	p := newProgram(t, e)
	explicit := p.mustRegister(res{typ: "pulumi:providers:test", name: "explicit", custom: true})
	ref := providerReference(explicit.GetUrn(), explicit.GetId())
	for _, provider := range []string{"", ref} {
		if _, err := p.mon.Invoke(p.ctx(), &pulumirpc.ResourceInvokeRequest{Tok: "test:index:fn", Provider: provider}); err != nil {
			t.Fatal(err)
		}
	}
	res := p.finish()
	def := e.URN("", "pulumi:providers:test", "default")
	wantEqualStrings(t, "state", res.State.URNs(), []string{explicit.GetUrn(), def})
	mu.Lock()
	defer mu.Unlock()
	wantEqualStrings(t, "invoke providers", got, []string{providerReference(def, res.State.Get(def).ID), ref})
}

// checkDefaults is a provider whose Check adds "size": 10 when absent and
// refuses a negative size.
func checkDefaults(checks *[]*CheckRequest, mu *sync.Mutex) *FakeProvider {
	return &FakeProvider{
		OnCheck: func(_ context.Context, req *CheckRequest) (*CheckResponse, error) {
			mu.Lock()
			*checks = append(*checks, req)
			mu.Unlock()
			in := req.NewInputs
			if in.Fields == nil {
				in.Fields = map[string]*structpb.Value{}
			}
			if _, ok := in.Fields["size"]; !ok {
				in.Fields["size"] = structpb.NewNumberValue(10)
			}
			if in.Fields["size"].GetNumberValue() < 0 {
				return &CheckResponse{Failures: []*pulumirpc.CheckFailure{
					{Property: "size", Reason: "must not be negative"},
					{Reason: "is not usable"},
				}}, nil
			}
			return &CheckResponse{Inputs: in}, nil
		},
	}
}

func TestCheckedInputsReachHooksStepAndState(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var checks []*CheckRequest
	var created []*CreateRequest
	prov := checkDefaults(&checks, &mu)
	prov.OnCreate = func(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
		mu.Lock()
		created = append(created, req)
		mu.Unlock()
		return (&FakeProvider{}).create(ctx, req)
	}
	e := startEngine(t, WithProvider(prov))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var calls hookCalls
	p.resourceHook("h", cbs.hook(calls.fn(nil, nil)), false, false)
	r := p.custom("r", map[string]any{"name": "x"}, withHooks(&binding{BeforeCreate: []string{"h"}, AfterCreate: []string{"h"}}))
	res := p.finish()

	for i, req := range calls.all() {
		if field(req.GetNewInputs(), "size").GetNumberValue() != 10 {
			t.Errorf("hook call %d saw inputs %v, want the checked ones", i, req.GetNewInputs())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(checks) != 1 || checks[0].OldInputs != nil || field(checks[0].NewInputs, "name").GetStringValue() != "x" {
		t.Fatalf("checks %v, want one of the program's inputs", checks)
	}
	if len(created) != 1 || field(created[0].Inputs, "size").GetNumberValue() != 10 {
		t.Fatalf("Create got %v, want the checked inputs", created)
	}
	if st := res.State.Get(r.GetUrn()); field(st.Inputs, "size").GetNumberValue() != 10 {
		t.Fatalf("state inputs %v, want the checked ones", st.Inputs)
	}

	// An update checks the new inputs against the old ones.
	e2 := startEngine(t, WithState(res.State), WithProvider(checkDefaults(&checks, &mu)))
	p2 := newProgram(t, e2)
	mu.Unlock()
	p2.custom("r", map[string]any{"name": "x"})
	res2 := p2.finish()
	mu.Lock()
	if len(checks) != 2 || field(checks[1].OldInputs, "size").GetNumberValue() != 10 {
		t.Fatalf("update check %v, want the old inputs", checks[1])
	}
	if ops := stepOps(res2); ops[r.GetUrn()] != opSame {
		t.Fatalf("steps %v, want same: the default applied by Check is no change", res2.Steps)
	}
}

func TestCheckFailuresMakeTheResourceInvalid(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var checks []*CheckRequest
	e := startEngine(t, WithProvider(checkDefaults(&checks, &mu)))
	p := newProgram(t, e)
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, props: map[string]any{"size": -1.0}})
	urn := e.URN("", thingType, "r")
	wantDiag(t, res.Diagnostics, severityError, urn,
		"test:index:Thing resource 'r': property size value {-1} has a problem: must not be negative")
	wantDiag(t, res.Diagnostics, severityError, urn, "test:index:Thing resource 'r' has a problem: is not usable")
	// Check is part of generating the step: no "update failed".
	wantEndedEarly(t, res, "", "")
	if n := len(e.Events(kindProviderCreate)); n != 0 || res.State.Get(urn) != nil {
		t.Fatalf("an invalid resource was created (%d creates)", n)
	}
}

func TestCheckErrorFailsTheResource(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithProvider(&FakeProvider{
		OnCheck: func(context.Context, *CheckRequest) (*CheckResponse, error) {
			return nil, errors.New("check broke")
		},
	}))
	p := newProgram(t, e)
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true})
	wantEndedEarly(t, res, e.URN("", thingType, "r"), "check broke")
}

// After the resource's own transforms, the engine adds every property's
// dependencies to the resource's; without them it keeps dependsOn as sent.
func TestPropertyDependenciesJoinDependenciesAfterOwnTransforms(t *testing.T) {
	t.Parallel()
	for _, own := range []bool{false, true} {
		t.Run(map[bool]string{false: "stack-transform", true: "own-transform"}[own], func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			dep := p.custom("dep", nil)
			tr := cbs.transform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return nil, nil
			})
			if !own {
				p.stackTransform(tr)
			}
			r := p.custom("r", map[string]any{"a": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
				r.PropertyDependencies = map[string]*pulumirpc.RegisterResourceRequest_PropertyDependencies{
					"a": {Urns: []string{dep.GetUrn()}},
				}
				if own {
					r.Transforms = []*pulumirpc.Callback{tr}
				}
			})
			if len(r.GetPropertyDependencies()) != 0 {
				t.Fatalf("a custom resource's response carries property dependencies %v", r.GetPropertyDependencies())
			}
			st := p.finish().State.Get(r.GetUrn())
			wantEqualStrings(t, "property dependencies", st.PropertyDependencies["a"], []string{dep.GetUrn()})
			want := []string(nil)
			if own {
				want = []string{dep.GetUrn()}
			}
			wantEqualStrings(t, "dependsOn", st.DependsOn, want)
		})
	}
}

// A request without property dependencies makes every property depend on
// every dependency.
func TestDependsOnBackfillsPropertyDependencies(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	dep := p.custom("dep", nil)
	r := p.custom("r", map[string]any{"a": 1.0, "b": 2.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.Dependencies = []string{dep.GetUrn()}
	})
	st := p.finish().State.Get(r.GetUrn())
	for _, k := range []string{"a", "b"} {
		wantEqualStrings(t, "property dependencies of "+k, st.PropertyDependencies[k], []string{dep.GetUrn()})
	}
}

func TestRemoteConstructReturnsPropertyDependencies(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithProvider(&FakeProvider{
		OnConstruct: func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
			resp, err := (&FakeProvider{}).construct(ctx, req)
			if err != nil {
				return nil, err
			}
			resp.State.Fields["out"] = outputValue{
				Value: structpb.NewStringValue("v"), Known: true, Dependencies: []string{"urn:pulumi:stack::project::test:index:Thing::x"},
			}.Encode()
			resp.PropertyDependencies = map[string][]string{"given": {"urn:pulumi:stack::project::test:index:Thing::y"}}
			return resp, nil
		},
	}))
	p := newProgram(t, e)
	c := p.mustRegister(res{typ: compType, name: "c", props: map[string]any{"in": 1.0}, mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Remote = true
	}})
	p.finish()
	got := map[string][]string{}
	for k, v := range c.GetPropertyDependencies() {
		got[k] = v.GetUrns()
	}
	if len(got) != 3 || len(got["in"]) != 0 {
		t.Fatalf("property dependencies %v, want one entry per output and the given ones", got)
	}
	wantEqualStrings(t, "out", got["out"], []string{"urn:pulumi:stack::project::test:index:Thing::x"})
	wantEqualStrings(t, "given", got["given"], []string{"urn:pulumi:stack::project::test:index:Thing::y"})
}

// A transform sees the provider option, else the resource's own
// providers[pkg], else its parent component's.
func TestTransformSeesProviderFromProvidersMaps(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	ref := func(name string) string {
		r := p.mustRegister(res{typ: "pulumi:providers:test", name: name, custom: true})
		return providerReference(r.GetUrn(), r.GetId())
	}
	fromOption, fromOwn, fromParent := ref("option"), ref("own"), ref("parent")
	var mu sync.Mutex
	seen := map[string]string{}
	p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		mu.Lock()
		seen[req.GetName()] = req.GetOptions().GetProvider()
		mu.Unlock()
		return nil, nil
	}))
	comp := p.mustRegister(res{typ: compType, name: "comp", mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Providers = map[string]string{"test": fromParent}
	}})
	child := func(name string, mod func(*pulumirpc.RegisterResourceRequest)) {
		p.mustRegister(res{typ: thingType, name: name, custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
			r.Parent = comp.GetUrn()
			mod(r)
		}})
	}
	child("option", func(r *pulumirpc.RegisterResourceRequest) {
		r.Provider = fromOption
		r.Providers = map[string]string{"test": fromOwn}
	})
	child("own", func(r *pulumirpc.RegisterResourceRequest) { r.Providers = map[string]string{"test": fromOwn} })
	child("parent", func(*pulumirpc.RegisterResourceRequest) {})
	res := p.finish()
	mu.Lock()
	defer mu.Unlock()
	for name, want := range map[string]string{"option": fromOption, "own": fromOwn, "parent": fromParent} {
		if seen[name] != want {
			t.Errorf("%s: transform saw provider %q, want %q", name, seen[name], want)
		}
		if st := res.State.Get(e.URN(comp.GetUrn(), thingType, name)); st.Provider != want {
			t.Errorf("%s: state provider %q, want %q", name, st.Provider, want)
		}
	}
}

const (
	helloHash   = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"
	archiveHash = "f19bab27a7f9d59cff97df356effce0047fefb13c8265e04d0874c0f09df4a16"
)

func helloAsset() *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		sigKey: structpb.NewStringValue(assetSig),
		"text": structpb.NewStringValue("hello world"),
	}})
}

func helloArchive() *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		sigKey: structpb.NewStringValue(archiveSig),
		"assets": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"file.txt": helloAsset(),
		}}),
	}})
}

func hashOf(s *structpb.Struct, k string) string {
	return field(s, k).GetStructValue().GetFields()["hash"].GetStringValue()
}

// The engine computes missing asset and archive hashes, even when a
// transform cleared them; the provider, the program and the state get them.
func TestAssetAndArchiveHashesKeptThroughTransformsAndState(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var created []*CreateRequest
	e := startEngine(t, WithProvider(&FakeProvider{
		OnCreate: func(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
			mu.Lock()
			created = append(created, req)
			mu.Unlock()
			return (&FakeProvider{}).create(ctx, req)
		},
	}))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	clear := cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		props := req.GetProperties()
		for _, k := range []string{"asset", "archive"} {
			if hashOf(props, k) == "" {
				return nil, errors.New(k + " reached the transform without its hash")
			}
			delete(field(props, k).GetStructValue().GetFields(), "hash")
		}
		return &pulumirpc.TransformResponse{Properties: props}, nil
	})
	props := map[string]any{"asset": helloAsset(), "archive": helloArchive()}
	var resps []*pulumirpc.RegisterResourceResponse
	for _, name := range []string{"plain", "transformed"} {
		resps = append(resps, p.custom(name, props, func(r *pulumirpc.RegisterResourceRequest) {
			if name == "transformed" {
				r.Transforms = []*pulumirpc.Callback{clear}
			}
		}))
	}
	res := p.finish()
	mu.Lock()
	defer mu.Unlock()
	for i, resp := range resps {
		st := res.State.Get(resp.GetUrn())
		for what, s := range map[string]*structpb.Struct{
			"provider": created[i].Inputs, "response": resp.GetObject(), "state inputs": st.Inputs, "state outputs": st.Outputs,
		} {
			if hashOf(s, "asset") != helloHash || hashOf(s, "archive") != archiveHash {
				t.Errorf("%s: %s has asset hash %q and archive hash %q", resp.GetUrn(), what, hashOf(s, "asset"), hashOf(s, "archive"))
			}
		}
	}
}

// The engine's TestTransformsProviderOpt: a stack transform that fills in a
// provider when the options name none.
func TestTransformFillsProviderOnlyWhereNoneResolved(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	ref := func(name string) string {
		r := p.mustRegister(res{typ: "pulumi:providers:test", name: name, custom: true})
		return providerReference(r.GetUrn(), r.GetId())
	}
	explicit, implicit := ref("explicit"), ref("implicit")
	p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		opts := req.GetOptions()
		if opts.GetProvider() != "" {
			return nil, nil
		}
		opts.Provider = implicit
		return &pulumirpc.TransformResponse{Options: opts}, nil
	}))
	custom := func(name, parent string, mod func(*pulumirpc.RegisterResourceRequest)) string {
		return p.mustRegister(res{typ: thingType, name: name, custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
			r.Parent = parent
			mod(r)
		}}).GetUrn()
	}
	none := func(*pulumirpc.RegisterResourceRequest) {}
	want := map[string]string{
		custom("explicitProvider", "", func(r *pulumirpc.RegisterResourceRequest) { r.Provider = explicit }): explicit,
		custom("implicitProvider", "", none): implicit,
		custom("explicitProvidersMap", "", func(r *pulumirpc.RegisterResourceRequest) {
			r.Providers = map[string]string{"test": explicit}
		}): explicit,
	}
	withMap := p.mustRegister(res{typ: "xmy:component:resource", name: "component", mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Providers = map[string]string{"test": explicit}
	}})
	want[custom("parentedResource", withMap.GetUrn(), none)] = explicit
	// A component's provider option is not inherited by its children.
	withOption := p.mustRegister(res{typ: "ymy:component:resource", name: "another-component", mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Provider = explicit
	}})
	want[custom("parentedResource", withOption.GetUrn(), none)] = implicit
	res := p.finish()
	if len(res.State.Resources) != 9 {
		t.Fatalf("state %v, want 2 providers and 7 resources", res.State.URNs())
	}
	for urn, ref := range want {
		if got := res.State.Get(urn).Provider; got != ref {
			t.Errorf("%s: provider %q, want %q", urn, got, ref)
		}
	}
}

// The engine's TestTransformInvokeTransformProvider: an invoke whose
// transform names a provider creates no default provider.
func TestInvokeTransformProviderAvoidsDefaultProvider(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	implicit := p.mustRegister(res{typ: "pulumi:providers:test", name: "implicit", custom: true})
	ref := providerReference(implicit.GetUrn(), implicit.GetId())
	_, err := p.mon.RegisterStackInvokeTransform(p.ctx(), cbs.invokeTransform(
		func(_ context.Context, req *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
			opts := req.GetOptions()
			if opts.GetProvider() == "" {
				opts.Provider = ref
			}
			return &pulumirpc.TransformInvokeResponse{Options: opts}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.mon.Invoke(p.ctx(), &pulumirpc.ResourceInvokeRequest{Tok: "test:m:fn"}); err != nil {
		t.Fatal(err)
	}
	res := p.finish()
	wantEqualStrings(t, "state", res.State.URNs(), []string{implicit.GetUrn()})
}

// The engine's TestRemoteTransformsOptions, for the state: the version a
// transform sets picks the default provider, each default provider comes
// before the first resource that needed it, and the options the transform
// returned are what the state keeps.
func TestTransformVersionPicksDefaultProviderInStateOrder(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	a := p.custom("resA", nil)
	c := p.custom("resC", nil, func(r *pulumirpc.RegisterResourceRequest) { r.Version = "1.0.0" })
	p.stackTransform(cbs.transform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return &pulumirpc.TransformResponse{Options: &pulumirpc.TransformResourceOptions{
			AdditionalSecretOutputs: []string{"bar"},
			CustomTimeouts:          &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "1s", Update: "2s", Delete: "3s"},
			DeletedWith:             c.GetUrn(),
			DependsOn:               []string{c.GetUrn()},
			Protect:                 boolPtr(true),
			Version:                 "1.0.0",
		}}, nil
	}))
	d := p.custom("resD", nil, func(r *pulumirpc.RegisterResourceRequest) {
		r.Version = "2.0.0"
		r.DeletedWith = a.GetUrn()
		r.Dependencies = []string{a.GetUrn()}
	})
	res := p.finish()
	wantEqualStrings(t, "state", res.State.URNs(), []string{
		e.URN("", "pulumi:providers:test", "default"), a.GetUrn(),
		e.URN("", "pulumi:providers:test", "default_1_0_0"), c.GetUrn(), d.GetUrn(),
	})
	st := res.State.Get(d.GetUrn())
	if !st.Protect || st.DeletedWith != c.GetUrn() || st.AdditionalSecretOutputs[0] != "bar" ||
		st.CustomTimeouts.GetDelete() != "3s" || !strings.HasPrefix(st.Provider, e.URN("", "pulumi:providers:test", "default_1_0_0")+"::") {
		t.Fatalf("resD state %+v", st)
	}
}

// The engine's TestResourceHookComponentAfterDelete: a remote component
// keeps its default provider in the state, and once the program drops it,
// the component's delete hook runs with its old inputs and outputs before
// the provider goes.
func TestRemoteComponentDeleteHookAndDefaultProvider(t *testing.T) {
	t.Parallel()
	construct := func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
		// The component provider binds the hooks the program asked for.
		resp, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
			Type: "test:m:typB", Name: req.Name, Parent: req.Parent, Object: req.Inputs, Hooks: req.Hooks,
		})
		if err != nil {
			return nil, err
		}
		outs := &structpb.Struct{Fields: map[string]*structpb.Value{"outA": structpb.NewStringValue("outA")}}
		if _, err := req.Monitor.RegisterResourceOutputs(ctx, &pulumirpc.RegisterResourceOutputsRequest{
			Urn: resp.GetUrn(), Outputs: outs,
		}); err != nil {
			return nil, err
		}
		return &ConstructResponse{URN: resp.GetUrn(), State: outs}, nil
	}
	prov := &FakeProvider{OnConstruct: construct}
	e1 := startEngine(t, WithProvider(prov))
	cbs1 := newCallbackServer(t)
	p1 := newProgram(t, e1)
	p1.resourceHook("myHook", cbs1.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, nil
	}), true, false)
	p1.mustRegister(res{typ: "test:m:typA", name: "resA", props: map[string]any{"a": "A"}, mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Remote = true
		r.Hooks = &binding{AfterDelete: []string{"myHook"}}
	}})
	res1 := p1.finish()
	comp := e1.URN("", "test:m:typB", "resA")
	wantEqualStrings(t, "state", res1.State.URNs(), []string{e1.URN("", "pulumi:providers:test", "default"), comp})

	e2 := startEngine(t, WithState(res1.State), WithProvider(prov))
	cbs2 := newCallbackServer(t)
	p2 := newProgram(t, e2)
	var calls hookCalls
	p2.resourceHook("myHook", cbs2.hook(calls.fn(nil, nil)), true, false)
	res2 := p2.finish()
	if res2.Failed || len(res2.State.Resources) != 0 {
		t.Fatalf("failed=%t state=%v, want everything deleted", res2.Failed, res2.State.URNs())
	}
	wantEqualStrings(t, "delete steps", deleteNames(res2), []string{"resA", "default"})
	got := calls.all()
	if len(got) != 1 || got[0].GetUrn() != comp || got[0].NewInputs != nil || got[0].NewOutputs != nil ||
		field(got[0].GetOldInputs(), "a").GetStringValue() != "A" || field(got[0].GetOldOutputs(), "outA").GetStringValue() != "outA" {
		t.Fatalf("delete hook calls %v", got)
	}
}

// An invalid resource ends the deployment even under --continue-on-error:
// the engine checks inputs while generating the step, not running it.
func TestCheckFailureEndsDeploymentEvenWithContinueOnError(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var checks []*CheckRequest
	e := startEngine(t, ContinueOnError(true), WithProvider(checkDefaults(&checks, &mu)))
	p := newProgram(t, e)
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, props: map[string]any{"size": -1.0},
		mod: func(r *pulumirpc.RegisterResourceRequest) { r.SupportsResultReporting = true }})
	wantEndedEarly(t, res, "", "")
	if res.State.Get(e.URN("", thingType, "r")) != nil {
		t.Fatal("an invalid resource reached the state")
	}
}

// A provider's Diff that fails: in the engine, Diff is part of generating
// the step, so the error goes on the resource, no update step is made, the
// registration is never answered and the deployment ends without "update
// failed", even under --continue-on-error.
func TestDiffErrorEndsTheDeployment(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	r := p1.custom("r", map[string]any{"v": 1.0})
	prior := p1.finish().State

	e := startEngine(t, WithState(prior), ContinueOnError(true),
		WithProvider(&FakeProvider{
			OnDiff: func(context.Context, *DiffRequest) (*DiffResponse, error) {
				return nil, errors.New("diff broke")
			},
		}))
	p := newProgram(t, e)
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, props: map[string]any{"v": 2.0},
		mod: func(r *pulumirpc.RegisterResourceRequest) { r.SupportsResultReporting = true }})
	wantEndedEarly(t, res, r.GetUrn(), "diff broke")
	if ops := stepOps(res); ops[r.GetUrn()] != "" {
		t.Fatalf("steps %v, want none for the resource", res.Steps)
	}
	if v := field(res.State.Get(r.GetUrn()).Inputs, "v").GetNumberValue(); v != 1 {
		t.Fatalf("inputs v=%v, want the resource as it was", v)
	}
}
