package enginetest

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// appendTo returns a transform that appends tag to the string property
// "foo" and records the value it saw.
func appendTo(tag string, seen *[]string, mu *sync.Mutex) transformFunc {
	return func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		props := proto.Clone(req.GetProperties()).(*structpb.Struct)
		foo := props.GetFields()["foo"].GetStringValue()
		mu.Lock()
		*seen = append(*seen, tag+"<"+foo)
		mu.Unlock()
		props.Fields["foo"] = structpb.NewStringValue(foo + tag)
		return &pulumirpc.TransformResponse{Properties: props, Options: req.GetOptions()}, nil
	}
}

func TestScenario04_StackTransformsChainInOrder(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var mu sync.Mutex
	var seen []string
	p.stackTransform(cbs.transform(appendTo("A", &seen, &mu)))
	p.stackTransform(cbs.transform(appendTo("B", &seen, &mu)))
	resp := p.custom("r", map[string]any{"foo": "x"})
	res := p.finish()

	wantEqualStrings(t, "calls", seen, []string{"A<x", "B<xA"})
	if got := field(res.State.Get(resp.GetUrn()).Inputs, "foo").GetStringValue(); got != "xAB" {
		t.Fatalf("inputs.foo = %q, want xAB", got)
	}
}

func TestScenario05_TransformOrderOwnAncestorsStack(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var mu sync.Mutex
	var order []string
	addOne := func(tag string) *pulumirpc.Callback {
		return cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			mu.Lock()
			order = append(order, tag+":"+req.GetName())
			mu.Unlock()
			props := proto.Clone(req.GetProperties()).(*structpb.Struct)
			if foo, ok := props.GetFields()["foo"]; ok {
				props.Fields["foo"] = structpb.NewNumberValue(foo.GetNumberValue() + 1)
			}
			return &pulumirpc.TransformResponse{Properties: props}, nil
		})
	}
	p.stackTransform(addOne("S1"))
	resA := p.mustRegister(res{typ: "test:index:Component", name: "resA", mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Transforms = []*pulumirpc.Callback{addOne("T2")}
	}})
	resB := p.custom("resB", map[string]any{"foo": 10.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.Parent = resA.GetUrn()
		r.Transforms = []*pulumirpc.Callback{addOne("T3")}
	})
	res := p.finish()

	wantEqualStrings(t, "transform order", order, []string{"T2:resA", "S1:resA", "T3:resB", "T2:resB", "S1:resB"})
	if got := field(res.State.Get(resB.GetUrn()).Inputs, "foo").GetNumberValue(); got != 13 {
		t.Fatalf("resB foo = %v, want 13", got)
	}
	if want := e.URN(resA.GetUrn(), thingType, "resB"); resB.GetUrn() != want {
		t.Fatalf("resB URN %q, want %q", resB.GetUrn(), want)
	}
}

func TestScenario06_LateStackTransformNotApplied(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var mu sync.Mutex
	var seen []string
	x := p.custom("x", map[string]any{"foo": "x"})
	p.stackTransform(cbs.transform(appendTo("S", &seen, &mu)))
	y := p.custom("y", map[string]any{"foo": "y"})
	res := p.finish()

	wantEqualStrings(t, "calls", seen, []string{"S<y"})
	if got := field(res.State.Get(x.GetUrn()).Inputs, "foo").GetStringValue(); got != "x" {
		t.Fatalf("x transformed: foo = %q", got)
	}
	if got := field(res.State.Get(y.GetUrn()).Inputs, "foo").GetStringValue(); got != "yS" {
		t.Fatalf("y not transformed: foo = %q", got)
	}
}

func TestScenario07_EmptyTransformResponseNoChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler rawHandler
	}{
		{"empty-message", typed(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			return &pulumirpc.TransformResponse{}, nil
		})},
		{"empty-bytes", func(context.Context, []byte) ([]byte, error) { return nil, nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			dep := p.custom("dep", nil)
			p.stackTransform(cbs.add(tt.handler))
			r := p.custom("r", map[string]any{"foo": "bar", "n": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
				r.Protect = boolPtr(true)
				r.IgnoreChanges = []string{"n"}
				r.Dependencies = []string{dep.GetUrn()}
			})
			res := p.finish()
			st := res.State.Get(r.GetUrn())
			wantProto(t, "inputs", st.Inputs, mustStruct(t, map[string]any{"foo": "bar", "n": 1.0}))
			if !st.Protect {
				t.Error("protect lost")
			}
			wantEqualStrings(t, "ignoreChanges", st.IgnoreChanges, []string{"n"})
			wantEqualStrings(t, "dependsOn", st.DependsOn, []string{dep.GetUrn()})
			if len(e.Events(KindCallback)) != 1 {
				t.Fatalf("want exactly one transform call:\n%s", e.Trace())
			}
		})
	}
}

func TestScenario08_EmptyPropertiesClearsInputs(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	p.stackTransform(cbs.transform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return &pulumirpc.TransformResponse{Properties: &structpb.Struct{}}, nil
	}))
	r := p.custom("r", map[string]any{"foo": "bar"})
	res := p.finish()
	if got := res.State.Get(r.GetUrn()).Inputs; len(got.GetFields()) != 0 {
		t.Fatalf("inputs = %v, want none", got)
	}
}

func TestScenario09_OptionsReplaceWholeMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		own           bool
		wantDependsOn bool
	}{
		{name: "stack-transform", own: false, wantDependsOn: true},
		{name: "own-transform", own: true, wantDependsOn: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			explicit := p.mustRegister(res{typ: "pulumi:providers:test", name: "explicit", custom: true})
			ref := providerReference(explicit.GetUrn(), explicit.GetId())
			dep := p.custom("dep", nil)
			var seen *pulumirpc.TransformResourceOptions
			var mu sync.Mutex
			tr := cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				mu.Lock()
				seen = req.GetOptions()
				mu.Unlock()
				return &pulumirpc.TransformResponse{Options: &pulumirpc.TransformResourceOptions{Protect: boolPtr(true)}}, nil
			})
			mod := func(r *pulumirpc.RegisterResourceRequest) {
				r.Provider = ref
				r.IgnoreChanges = []string{"a"}
				r.AliasURNs = []string{e.URN("", thingType, "old-name")}
				r.Dependencies = []string{dep.GetUrn()}
				// No property depends on dep: otherwise the engine adds the
				// property's dependencies back after an own transform.
				r.PropertyDependencies = map[string]*pulumirpc.RegisterResourceRequest_PropertyDependencies{"a": {}}
				r.AdditionalSecretOutputs = []string{"b"}
				if tt.own {
					r.Transforms = []*pulumirpc.Callback{tr}
				}
			}
			if !tt.own {
				p.stackTransform(tr)
			}
			r := p.custom("r", map[string]any{"a": 1.0}, mod)
			res := p.finish()

			mu.Lock()
			if seen.GetProvider() != ref || len(seen.GetAliases()) != 1 || seen.GetIgnoreChanges()[0] != "a" {
				t.Errorf("transform saw options %v", seen)
			}
			mu.Unlock()
			st := res.State.Get(r.GetUrn())
			if !st.Protect {
				t.Error("protect not applied")
			}
			if len(st.IgnoreChanges) != 0 || len(st.Aliases) != 0 || len(st.AdditionalSecretOutputs) != 0 {
				t.Errorf("options not cleared: ignoreChanges=%v aliases=%v aso=%v",
					st.IgnoreChanges, st.Aliases, st.AdditionalSecretOutputs)
			}
			defaultURN := e.URN("", "pulumi:providers:test", "default")
			if !strings.HasPrefix(st.Provider, defaultURN+"::") {
				t.Errorf("provider = %q, want the default provider %s", st.Provider, defaultURN)
			}
			if got := len(st.DependsOn) > 0; got != tt.wantDependsOn {
				t.Errorf("dependsOn = %v, want kept=%t", st.DependsOn, tt.wantDependsOn)
			}
		})
	}
}

func TestScenario10_TransformErrorFailsRegistration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler rawHandler
		want    string
		prefix  bool
	}{
		{
			name:    "grpc-error",
			handler: func(context.Context, []byte) ([]byte, error) { return nil, errors.New("bad transform") },
			want:    "invoke transform: rpc error: code = Unknown desc = bad transform",
		},
		{
			name:    "bad-bytes",
			handler: func(context.Context, []byte) ([]byte, error) { return []byte{0xff, 0xff, 0xff}, nil },
			want:    "invoke transform: unmarshaling transform response: proto:",
			prefix:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			p.stackTransform(cbs.add(tt.handler))
			_, err := p.register(res{typ: thingType, name: "r", custom: true})
			got := errMessage(err)
			if tt.prefix && !strings.HasPrefix(got, tt.want) || !tt.prefix && got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			res := p.finish()
			if res.State.Get(e.URN("", thingType, "r")) != nil {
				t.Fatal("resource registered despite the failed transform")
			}
			if len(res.Diagnostics) != 0 {
				t.Fatalf("engine emitted diagnostics: %v", res.Diagnostics)
			}
			if n := len(e.Events(kindProviderCreate)); n != 0 {
				t.Fatalf("provider called %d times", n)
			}
		})
	}
}

func TestScenario11_SecretsAndUnknownsAsOutputValues(t *testing.T) {
	t.Parallel()
	for _, preview := range []bool{false, true} {
		t.Run(map[bool]string{false: "up", true: "preview"}[preview], func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, DryRun(preview))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var mu sync.Mutex
			var got *structpb.Struct
			p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				mu.Lock()
				got = req.GetProperties()
				mu.Unlock()
				return nil, nil
			}))
			r := p.custom("r", map[string]any{
				"s":     secretValue(structpb.NewStringValue("shh")),
				"u":     unknownValue(),
				"plain": "x",
				"nested": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
					"inner": secretValue(structpb.NewNumberValue(1)),
				}}),
			})
			res := p.finish()

			mu.Lock()
			defer mu.Unlock()
			s, ok := decodeOutputValue(field(got, "s"))
			if !ok || !s.Secret || !s.Known || s.Value.GetStringValue() != "shh" {
				t.Errorf("secret arrived as %v", field(got, "s"))
			}
			u, ok := decodeOutputValue(field(got, "u"))
			if !ok || u.Known || u.Secret {
				t.Errorf("unknown arrived as %v", field(got, "u"))
			}
			if field(got, "plain").GetStringValue() != "x" {
				t.Errorf("plain arrived as %v", field(got, "plain"))
			}
			inner := field(got, "nested").GetStructValue().GetFields()["inner"]
			if n, ok := decodeOutputValue(inner); !ok || !n.Secret || n.Value.GetNumberValue() != 1 {
				t.Errorf("nested secret arrived as %v", inner)
			}
			// The stored inputs are back in plain wire form.
			st := res.State.Get(r.GetUrn())
			if !isSecret(field(st.Inputs, "s")) || field(st.Inputs, "u").GetStringValue() != unknownSentinel {
				t.Errorf("stored inputs %v", st.Inputs)
			}
		})
	}
}

// A resource transform gets secrets and unknowns as output values under
// both engines; 3.274 writes every output value with its "dependencies",
// an empty list when it has none, where 3.260 left the field out.
func TestTransformOutputValuesCarryDependencies(t *testing.T) {
	t.Parallel()
	for engine, want := range map[string]bool{engine3_274: true, engine3_260: false} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, EngineVersion(engine))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var mu sync.Mutex
			var got *structpb.Struct
			p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				mu.Lock()
				got = req.GetProperties()
				mu.Unlock()
				return nil, nil
			}))
			p.custom("r", map[string]any{
				"s":     secretValue(structpb.NewStringValue("shh")),
				"u":     unknownValue(),
				"plain": "x",
				"list":  structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{secretValue(structpb.NewNumberValue(1))}}),
			})
			p.finish()

			mu.Lock()
			defer mu.Unlock()
			for name, v := range map[string]*structpb.Value{
				"s": field(got, "s"), "u": field(got, "u"), "list[0]": field(got, "list").GetListValue().GetValues()[0],
			} {
				if _, ok := decodeOutputValue(v); !ok {
					t.Fatalf("%s arrived as %v, want an output value", name, v)
				}
				deps, has := v.GetStructValue().GetFields()["dependencies"]
				if has != want || has && len(deps.GetListValue().GetValues()) != 0 {
					t.Errorf("%s arrived as %v; want dependencies %t, and empty", name, v, want)
				}
			}
			if field(got, "plain").GetStringValue() != "x" {
				t.Errorf("plain arrived as %v", field(got, "plain"))
			}
		})
	}
}

func TestScenario12_PropertyDependenciesRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		own      bool
		wantSeen []string // dependencies the transform sees on foo
		wantDeps []string // dependencies stored for foo
	}{
		{name: "own-transform", own: true, wantSeen: []string{"B"}, wantDeps: []string{"A"}},
		{name: "stack-transform", own: false, wantSeen: nil, wantDeps: []string{"B"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			a := p.custom("A", nil).GetUrn()
			b := p.custom("B", nil).GetUrn()
			var mu sync.Mutex
			var seen []string
			tr := cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				props := proto.Clone(req.GetProperties()).(*structpb.Struct)
				mu.Lock()
				if o, ok := decodeOutputValue(field(props, "foo")); ok {
					seen = o.Dependencies
				}
				mu.Unlock()
				props.Fields["foo"] = outputValue{
					Value: structpb.NewStringValue("v"), Known: true, Dependencies: []string{a},
				}.Encode()
				return &pulumirpc.TransformResponse{Properties: props}, nil
			})
			mod := func(r *pulumirpc.RegisterResourceRequest) {
				r.PropertyDependencies = map[string]*pulumirpc.RegisterResourceRequest_PropertyDependencies{
					"foo": {Urns: []string{b}},
				}
				if tt.own {
					r.Transforms = []*pulumirpc.Callback{tr}
				}
			}
			if !tt.own {
				p.stackTransform(tr)
			}
			r := p.custom("r", map[string]any{"foo": "v"}, mod)
			res := p.finish()

			subst := func(xs []string) []string {
				var out []string
				for _, x := range xs {
					out = append(out, map[string]string{"A": a, "B": b}[x])
				}
				return out
			}
			mu.Lock()
			wantEqualStrings(t, "seen dependencies", seen, subst(tt.wantSeen))
			mu.Unlock()
			st := res.State.Get(r.GetUrn())
			wantEqualStrings(t, "stored dependencies", st.PropertyDependencies["foo"], subst(tt.wantDeps))
			if field(st.Inputs, "foo").GetStringValue() != "v" {
				t.Errorf("foo stored as %v", field(st.Inputs, "foo"))
			}
		})
	}
}

func TestScenario13_StackTransformSetsProvider(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	prov := p.mustRegister(res{typ: "pulumi:providers:test", name: "mine", custom: true})
	ref := providerReference(prov.GetUrn(), prov.GetId())
	p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		if !req.GetCustom() || req.GetOptions().GetProvider() != "" {
			return nil, nil
		}
		opts := proto.Clone(req.GetOptions()).(*pulumirpc.TransformResourceOptions)
		opts.Provider = ref
		return &pulumirpc.TransformResponse{Options: opts}, nil
	}))
	r := p.custom("r", nil)
	res := p.finish()
	if got := res.State.Get(r.GetUrn()).Provider; got != ref {
		t.Fatalf("provider = %q, want %q", got, ref)
	}
	if res.State.Get(e.URN("", "pulumi:providers:test", "default")) != nil {
		t.Fatal("a default provider was created")
	}
}

func TestScenario14_TransformAddsHookBinding(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var calls hookCalls
	p.resourceHook("myHook", cbs.hook(calls.fn(nil, nil)), false, false)
	p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		opts := proto.Clone(req.GetOptions()).(*pulumirpc.TransformResourceOptions)
		opts.Hooks = &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"myHook"}}
		return &pulumirpc.TransformResponse{Options: opts}, nil
	}))
	r := p.custom("r", nil)
	res := p.finish()
	got := calls.all()
	if len(got) != 1 || got[0].GetUrn() != r.GetUrn() {
		t.Fatalf("hook calls %v, want one for %s", got, r.GetUrn())
	}
	wantEqualStrings(t, "stored binding", res.State.Get(r.GetUrn()).Hooks.GetBeforeCreate(), []string{"myHook"})
}

func TestScenario15_ConcurrentTransformsNoDeadlock(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	aStarted := make(chan struct{})
	bRegistered := make(chan struct{})
	var inFlight, maxInFlight atomic.Int32
	p.stackTransform(cbs.transform(func(ctx context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		if req.GetName() == "resA" {
			close(aStarted)
			select {
			case <-bRegistered:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return nil, nil
	}))
	aDone := make(chan error, 1)
	go func() {
		_, err := p.register(res{typ: thingType, name: "resA", custom: true})
		aDone <- err
	}()
	select {
	case <-aStarted:
	case err := <-aDone:
		t.Fatalf("resA registered (%v) without its transform blocking", err)
	}
	// resA's transform is blocked until resB is registered: a global
	// transform lock would deadlock here. The watchdog turns that hang into
	// a failure; it bounds a deadlock, not a duration.
	watchdog, cancel := context.WithTimeout(p.ctx(), time.Minute)
	defer cancel()
	if _, err := p.mon.RegisterResource(watchdog, p.request(res{typ: thingType, name: "resB", custom: true})); err != nil {
		t.Fatalf("resB: %v (deadlock?)", err)
	}
	close(bRegistered)
	if err := <-aDone; err != nil {
		t.Fatalf("resA: %v", err)
	}
	res := p.finish()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if maxInFlight.Load() < 2 {
		t.Fatalf("max transforms in flight = %d, want 2", maxInFlight.Load())
	}
}

func TestScenario16_ByteStrings(t *testing.T) {
	t.Parallel()
	raw := []byte{'a', 0xff, 0xfe}
	tests := []struct {
		name    string
		accepts bool
		wantErr string
	}{
		{name: "accepted", accepts: true},
		{name: "refused", accepts: false, wantErr: "non-UTF8 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var mu sync.Mutex
			var got *structpb.Value
			cb := cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				mu.Lock()
				got = field(req.GetProperties(), "b")
				mu.Unlock()
				return nil, nil
			})
			cb.AcceptsByteString = tt.accepts
			p.stackTransform(cb)
			_, err := p.register(res{typ: thingType, name: "r", custom: true, props: map[string]any{
				"b": byteStringValue(raw),
			}})
			p.finish()
			if tt.wantErr != "" {
				wantErrContains(t, err, tt.wantErr)
				wantErrContains(t, err, `"b"`)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if signature(got) != byteStringSig ||
				got.GetStructValue().GetFields()["value"].GetStringValue() != base64.StdEncoding.EncodeToString(raw) {
				t.Fatalf("byte string arrived as %v", got)
			}
		})
	}
}

func TestScenario18_RemoteComponentTransforms(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	e := startEngine(t, WithProvider(&FakeProvider{
		OnConstruct: func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
			comp, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
				Type: req.Type, Name: req.Name, Parent: req.Parent, Object: req.Inputs,
			})
			if err != nil {
				return nil, err
			}
			if _, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
				Type: thingType, Name: req.Name + "-child", Parent: comp.GetUrn(), Custom: true,
			}); err != nil {
				return nil, err
			}
			if _, err := req.Monitor.RegisterResourceOutputs(ctx, &pulumirpc.RegisterResourceOutputsRequest{Urn: comp.GetUrn()}); err != nil {
				return nil, err
			}
			return &ConstructResponse{URN: comp.GetUrn()}, nil
		},
	}))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	tr := cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		mu.Lock()
		seen = append(seen, req.GetName())
		mu.Unlock()
		return nil, nil
	})
	comp := p.mustRegister(res{typ: "pkg:index:Comp", name: "comp", mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Remote = true
		r.Transforms = []*pulumirpc.Callback{tr}
	}})
	res := p.finish()
	mu.Lock()
	defer mu.Unlock()
	wantEqualStrings(t, "transform calls", seen, []string{"comp", "comp", "comp-child"})
	if comp.GetUrn() != e.URN("", "pkg:index:Comp", "comp") {
		t.Fatalf("component URN %q", comp.GetUrn())
	}
	if res.State.Get(e.URN(comp.GetUrn(), thingType, "comp-child")) == nil {
		t.Fatalf("child missing from state %v", res.State.URNs())
	}
}

// enterTracked counts a call in flight and keeps the maximum.
func enterTracked(inFlight, maxInFlight *atomic.Int32) {
	n := inFlight.Add(1)
	for {
		m := maxInFlight.Load()
		if n <= m || maxInFlight.CompareAndSwap(m, n) {
			return
		}
	}
}

// As in the engine, the transforms a program gives a remote component
// (kept under parent::type::name) take the place of the ones the provider
// puts in its own registration of the component; when the program gives
// none, the provider's apply to the component and its descendants.
func TestRemoteComponentProviderTransforms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		programGive bool
		want        []string
	}{
		{"the program gives none", false, []string{"provider:comp", "provider:comp-child"}},
		{"the program gives its own", true, []string{"program:comp", "program:comp", "program:comp-child"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen []string
			cbs := newCallbackServer(t)
			record := func(who string) *pulumirpc.Callback {
				return cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
					mu.Lock()
					seen = append(seen, who+":"+req.GetName())
					mu.Unlock()
					return nil, nil
				})
			}
			fromProvider := record("provider")
			e := startEngine(t, WithProvider(&FakeProvider{
				OnConstruct: func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
					comp, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
						Type: req.Type, Name: req.Name, Parent: req.Parent, Object: req.Inputs,
						Transforms: []*pulumirpc.Callback{fromProvider},
					})
					if err != nil {
						return nil, err
					}
					if _, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
						Type: thingType, Name: req.Name + "-child", Parent: comp.GetUrn(), Custom: true,
					}); err != nil {
						return nil, err
					}
					if _, err := req.Monitor.RegisterResourceOutputs(ctx, &pulumirpc.RegisterResourceOutputsRequest{Urn: comp.GetUrn()}); err != nil {
						return nil, err
					}
					return &ConstructResponse{URN: comp.GetUrn()}, nil
				},
			}))
			p := newProgram(t, e)
			fromProgram := record("program")
			p.mustRegister(res{typ: "pkg:index:Comp", name: "comp", mod: func(r *pulumirpc.RegisterResourceRequest) {
				r.Remote = true
				if tt.programGive {
					r.Transforms = []*pulumirpc.Callback{fromProgram}
				}
			}})
			p.mustRegister(res{typ: thingType, name: "other", mod: func(r *pulumirpc.RegisterResourceRequest) { r.Custom = true }})
			p.finish()
			mu.Lock()
			defer mu.Unlock()
			wantEqualStrings(t, "transform calls", seen, tt.want)
		})
	}
}
