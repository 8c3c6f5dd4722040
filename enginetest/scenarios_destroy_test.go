package enginetest

import (
	"context"
	"slices"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

const compType = "test:index:Comp"

// deleteLog records, in order, what a test's delete hooks and provider
// deletes saw.
type deleteLog struct {
	mu  sync.Mutex
	log []string
}

func (l *deleteLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, s)
}

func (l *deleteLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.log)
}

func (l *deleteLog) hook(tag string, fail bool) hookFunc {
	return func(_ context.Context, req *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		l.add(tag + " " + req.GetName())
		if fail {
			return &pulumirpc.ResourceHookResponse{Error: "Oh no"}, nil
		}
		return nil, nil
	}
}

func (l *deleteLog) provider() *FakeProvider {
	return &FakeProvider{OnDelete: func(_ context.Context, req *DeleteRequest) error {
		l.add("delete " + req.Name)
		return nil
	}}
}

// deleteNames lists the names of the delete steps of a result, in order.
func deleteNames(res *Result) []string {
	var out []string
	for _, s := range res.Steps {
		if s.Op == opDelete {
			out = append(out, URNName(s.URN))
		}
	}
	return out
}

// destroyFixture builds a state: a component "comp" with a child "child"
// that depends on "base"; "base" is registered first; "free" has no
// dependency; custom resources use the default provider. bind gives each
// custom resource's hook binding.
func destroyFixture(t *testing.T, bind func(name string) *binding) *State {
	t.Helper()
	e := startEngine(t)
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	for _, name := range []string{"before", "after"} {
		p.resourceHook(name, cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			return nil, nil
		}), false, false)
	}
	hooks := func(name string) func(*pulumirpc.RegisterResourceRequest) {
		return func(r *pulumirpc.RegisterResourceRequest) {
			if bind != nil {
				r.Hooks = bind(name)
			}
		}
	}
	base := p.custom("base", nil, hooks("base"))
	comp := p.mustRegister(res{typ: compType, name: "comp"})
	p.mustRegister(res{typ: thingType, name: "child", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Parent = comp.GetUrn()
		r.Dependencies = []string{base.GetUrn()}
		hooks("child")(r)
	}})
	p.custom("free", nil, hooks("free"))
	res := p.finish()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res.State
}

func TestDestroyWithoutProgramDeletesDependentsFirstProvidersLast(t *testing.T) {
	t.Parallel()
	prior := destroyFixture(t, nil)
	var log deleteLog
	e := startEngine(t, WithState(prior), Destroy(false), WithProvider(log.provider()))
	res := wait(t, e)
	if res.Failed || len(res.State.Resources) != 0 {
		t.Fatalf("failed=%t err=%v state=%v, want everything deleted", res.Failed, res.Err, res.State.URNs())
	}
	// Reverse state order, except that child goes before base, which it
	// depends on, and the provider goes last.
	wantEqualStrings(t, "delete steps", deleteNames(res), []string{"free", "child", "comp", "base", "default"})
	wantEqualStrings(t, "provider deletes", log.all(), []string{"delete free", "delete child", "delete base"})
}

// A state whose order does not follow the dependencies (as an older
// simulator wrote it) is still deleted dependents first, providers last.
func TestDestroyDeletesDependentsFirstWhateverTheStateOrder(t *testing.T) {
	t.Parallel()
	prior := destroyFixture(t, nil)
	slices.Reverse(prior.Resources)
	e := startEngine(t, WithState(prior), Destroy(false))
	res := wait(t, e)
	if res.Failed || len(res.State.Resources) != 0 {
		t.Fatalf("failed=%t err=%v state=%v, want everything deleted", res.Failed, res.Err, res.State.URNs())
	}
	wantEqualStrings(t, "delete steps", deleteNames(res), []string{"child", "base", "comp", "free", "default"})
}

func TestDestroyWithoutProgramRefusesDeleteHooks(t *testing.T) {
	t.Parallel()
	prior := destroyFixture(t, func(name string) *binding {
		if name == "child" {
			return &binding{BeforeDelete: []string{"before"}, AfterDelete: []string{"after"}}
		}
		return nil
	})
	e := startEngine(t, WithState(prior), Destroy(false))
	res := wait(t, e)
	child := prior.Resources[slices.IndexFunc(prior.Resources, func(r *ResourceState) bool { return r.Name == "child" })].URN
	wantDiag(t, res.Diagnostics, severityError, child,
		"Resource has delete hooks registered, but the program is not running. Hooks: before, after")
	if !res.Failed || res.Err == nil ||
		res.Err.Error() != "You must run with the `--run-program` flag to use delete hooks during destroy." {
		t.Fatalf("failed=%t err=%v, want the refusal", res.Failed, res.Err)
	}
	if len(res.Steps) != 0 || len(res.State.Resources) != len(prior.Resources) {
		t.Fatalf("steps %v, state %v: a refused destroy changes nothing", res.Steps, res.State.URNs())
	}
	for _, d := range res.Diagnostics {
		if d.Message == "update failed" {
			t.Fatal("a destroy that never started reported update failed")
		}
	}
}

// destroyProgram runs the fixture's program for a destroy: it registers the
// hooks (with the binding bind gives) and a stack transform, registers the
// same resources plus a new one, and finishes.
func destroyProgram(t *testing.T, e *Engine, log *deleteLog, bind func(name string) *binding,
	failing string,
) (*Result, []string) {
	t.Helper()
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var mu sync.Mutex
	var transformed []string
	p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		mu.Lock()
		transformed = append(transformed, req.GetName())
		mu.Unlock()
		return nil, nil
	}))
	for _, name := range []string{"before", "after"} {
		tag := name + "_delete"
		_, err := p.mon.RegisterResourceHook(p.ctx(), &pulumirpc.RegisterResourceHookRequest{
			Name: name, Callback: cbs.hook(log.hook(tag, name == failing)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	hooks := func(name string) func(*pulumirpc.RegisterResourceRequest) {
		return func(r *pulumirpc.RegisterResourceRequest) { r.Hooks = bind(name) }
	}
	base := p.custom("base", map[string]any{"changed": true}, hooks("base"))
	comp := p.mustRegister(res{typ: compType, name: "comp"})
	p.mustRegister(res{typ: thingType, name: "child", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Parent = comp.GetUrn()
		r.Dependencies = []string{base.GetUrn()}
		hooks("child")(r)
	}})
	p.custom("free", nil, hooks("free"))
	fresh := p.custom("fresh", nil, hooks("fresh"))
	if fresh.GetId() != "" {
		t.Errorf("a resource new in a destroy got an ID: %v", fresh)
	}
	var res *Result
	if failing != "" {
		res = p.finishFailed()
	} else {
		res = p.finish()
	}
	mu.Lock()
	defer mu.Unlock()
	return res, slices.Clone(transformed)
}

func TestDestroyRunProgramRunsDeleteHooksOfThisRun(t *testing.T) {
	t.Parallel()
	// The state names no hooks; this run binds them. The engine takes the
	// binding from the destroy run's registrations.
	prior := destroyFixture(t, nil)
	bind := func(name string) *binding {
		return &binding{BeforeDelete: []string{"before"}, AfterDelete: []string{"after"}}
	}
	var log deleteLog
	e := startEngine(t, WithState(prior), Destroy(true), WithProvider(log.provider()))
	res, transformed := destroyProgram(t, e, &log, bind, "")
	if res.Failed || len(res.State.Resources) != 0 {
		t.Fatalf("failed=%t err=%v state=%v, want everything deleted", res.Failed, res.Err, res.State.URNs())
	}
	wantEqualStrings(t, "transformed", transformed, []string{"base", "comp", "child", "free", "fresh"})
	if n := len(e.Events(kindProviderCreate, kindProviderUpdate)); n != 0 {
		t.Fatalf("a destroy created or updated %d resources", n)
	}
	wantEqualStrings(t, "delete steps", deleteNames(res), []string{"free", "child", "comp", "base", "default"})
	wantEqualStrings(t, "delete order", log.all(), []string{
		"before_delete free", "delete free", "after_delete free",
		"before_delete child", "delete child", "after_delete child",
		"before_delete base", "delete base", "after_delete base",
	})
}

func TestDestroyRunProgramPreviewPassDeletesNothing(t *testing.T) {
	t.Parallel()
	prior := destroyFixture(t, nil)
	bind := func(string) *binding { return &binding{BeforeDelete: []string{"before"}} }
	var log deleteLog
	e := startEngine(t, WithState(prior), Destroy(true), DryRun(true),
		WithProvider(log.provider()))
	res, transformed := destroyProgram(t, e, &log, bind, "")
	if res.Failed {
		t.Fatal(res.Err)
	}
	wantEqualStrings(t, "transformed", transformed, []string{"base", "comp", "child", "free", "fresh"})
	wantEqualStrings(t, "delete steps", deleteNames(res), []string{"free", "child", "comp", "base", "default"})
	if got := log.all(); len(got) != 0 {
		t.Fatalf("a preview ran %v (hooks without onDryRun, provider deletes)", got)
	}
}

func TestDestroyRunProgramDeleteHookFailureKeepsDependencies(t *testing.T) {
	t.Parallel()
	prior := destroyFixture(t, nil)
	bind := func(name string) *binding {
		if name == "child" {
			return &binding{BeforeDelete: []string{"before"}}
		}
		return nil
	}
	var log deleteLog
	e := startEngine(t, WithState(prior), Destroy(true), WithProvider(log.provider()))
	res, _ := destroyProgram(t, e, &log, bind, "before")
	child := e.URN(e.URN("", compType, "comp"), thingType, "child")
	wantFailed(t, res, child, `before hook "before" failed: Oh no`)
	wantEqualStrings(t, "delete order", log.all(), []string{"delete free", "before_delete child"})
	// The failure stops the destroy: what child depends on stays, its
	// provider first of all.
	wantEqualStrings(t, "state", res.State.URNs(), []string{
		e.URN("", "pulumi:providers:test", "default"), e.URN("", thingType, "base"),
		e.URN("", compType, "comp"), child,
	})
}

func TestDestroyRunProgramAfterDeleteHookFailure(t *testing.T) {
	t.Parallel()
	prior := destroyFixture(t, nil)
	bind := func(name string) *binding {
		if name == "free" {
			return &binding{AfterDelete: []string{"after"}}
		}
		return nil
	}
	var log deleteLog
	e := startEngine(t, WithState(prior), Destroy(true), WithProvider(log.provider()))
	res, _ := destroyProgram(t, e, &log, bind, "after")
	wantFailed(t, res, e.URN("", thingType, "free"), `after hook "after" failed: Oh no`)
	if res.State.Get(e.URN("", thingType, "free")) != nil {
		t.Fatal("the resource whose after hook failed is still in the state")
	}
	wantEqualStrings(t, "delete order", log.all(), []string{"delete free", "after_delete free"})
}
