package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// migrationFunc is a state migration over decoded checkpoint resources. A
// nil result leaves the state alone.
type migrationFunc func(urn string, old []map[string]any) (next []map[string]any, successors map[string]string, err error)

// migration serves fn as a state migration and records the old states it
// was given.
type migration struct {
	mu   sync.Mutex
	seen []string
}

func (m *migration) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

func (m *migration) serve(cbs *callbackServer, fn migrationFunc) *pulumirpc.Callback {
	return cbs.add(typed(func(_ context.Context, req *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
		m.mu.Lock()
		m.seen = append(m.seen, string(req.GetOldState()))
		m.mu.Unlock()
		var old []map[string]any
		if err := json.Unmarshal(req.GetOldState(), &old); err != nil {
			return nil, err
		}
		next, successors, err := fn(req.GetUrn(), old)
		if err != nil || next == nil {
			return &pulumirpc.StateMigrationResponse{}, err
		}
		b, err := json.Marshal(next)
		if err != nil {
			return nil, err
		}
		return &pulumirpc.StateMigrationResponse{NewState: b, Successors: successors}, nil
	}))
}

// renameLength renames the property "length" to "size" in the inputs and
// outputs of the registering resource.
func renameLength(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
	changed := false
	for _, k := range []string{"inputs", "outputs"} {
		if props, ok := old[0][k].(map[string]any); ok {
			if v, ok := props["length"]; ok {
				props["size"] = v
				delete(props, "length")
				changed = true
			}
		}
	}
	if !changed {
		return nil, nil, nil
	}
	return old, nil, nil
}

// priorState is the state of a first update that created thing "a" with
// {"length": 2}.
func priorState(t *testing.T) *State {
	t.Helper()
	e := startEngine(t)
	p := newProgram(t, e)
	p.custom("a", map[string]any{"length": 2})
	res := p.finish()
	if res.Failed {
		t.Fatalf("first update failed: %v", res.Err)
	}
	return res.State
}

func withMigrations(cbs ...*pulumirpc.Callback) func(*pulumirpc.RegisterResourceRequest) {
	return func(r *pulumirpc.RegisterResourceRequest) { r.StateMigrations = cbs }
}

func stepOf(res *Result, urn string) string {
	for _, s := range res.Steps {
		if s.URN == urn {
			return s.Op
		}
	}
	return ""
}

// A migration that renames a property in the stored state is applied before
// the step is decided, so the update that follows it is a same step; in a
// preview the change is planned, not applied.
func TestMigrationRenamesAPropertyAndTheStepIsSame(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	for _, preview := range []bool{false, true} {
		name, verb := "update", "applied"
		if preview {
			name, verb = "preview", "planned"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, WithState(prior), DryRun(preview))
			cbs := newCallbackServer(t)
			var m migration
			p := newProgram(t, e)
			resp := p.custom("a", map[string]any{"size": 2}, withMigrations(m.serve(cbs, renameLength)))
			res := p.finish()
			if res.Failed {
				t.Fatalf("deployment failed: %v\n%s", res.Err, e.Trace())
			}
			urn := resp.GetUrn()
			if got := m.calls(); len(got) != 1 || !strings.Contains(got[0], `"length":2`) || !strings.Contains(got[0], `"urn":"`+urn+`"`) {
				t.Fatalf("the migration got %q, want one call with the prior state", got)
			}
			wantDiag(t, res.Diagnostics, severityInfo, urn, "State migration "+verb+" (state entries: 1 before, 1 after).")
			if op := stepOf(res, urn); op != opSame {
				t.Fatalf("step %q, want same\n%s", op, e.Trace())
			}
			got := res.State.Get(urn)
			if _, ok := got.Inputs.GetFields()["size"]; !ok || got.Inputs.GetFields()["length"] != nil {
				t.Fatalf("inputs %v, want the renamed property", got.Inputs)
			}
			if got.ID != "a-id" {
				t.Fatalf("ID %q, want the prior one", got.ID)
			}
		})
	}
}

// The engine runs a registration's migrations only where there is prior
// state to migrate, only in an update or its preview, and a migration that
// changes nothing leaves no message.
func TestMigrationsRunOnlyOverPriorState(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	tests := []struct {
		name      string
		opts      []Option
		resource  string
		wantCalls int
	}{
		{name: "new-resource", resource: "b", wantCalls: 0},
		{name: "destroy-run-program", opts: []Option{Destroy(true)}, resource: "a", wantCalls: 0},
		{name: "no-change", resource: "a", wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, append([]Option{WithState(prior)}, tt.opts...)...)
			cbs := newCallbackServer(t)
			var m migration
			p := newProgram(t, e)
			p.custom(tt.resource, map[string]any{"length": 2}, withMigrations(m.serve(cbs,
				func(string, []map[string]any) ([]map[string]any, map[string]string, error) { return nil, nil, nil })))
			res := p.finish()
			if res.Failed {
				t.Fatalf("deployment failed: %v", res.Err)
			}
			if got := len(m.calls()); got != tt.wantCalls {
				t.Fatalf("the migration ran %d times, want %d\n%s", got, tt.wantCalls, e.Trace())
			}
			for _, d := range res.Diagnostics {
				if strings.HasPrefix(d.Message, "State migration") {
					t.Fatalf("unexpected %v", d)
				}
			}
		})
	}
}

// A registration's migrations run in order, each given what the one before
// returned, and a later registration cannot use a URN a migration replaced.
func TestMigrationsRunInOrder(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	e := startEngine(t, WithState(prior))
	cbs := newCallbackServer(t)
	var first, second migration
	addPrefix := func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		old[0]["inputs"].(map[string]any)["prefix"] = "pet"
		old[0]["outputs"].(map[string]any)["prefix"] = "pet"
		return old, nil, nil
	}
	p := newProgram(t, e)
	p.custom("a", map[string]any{"size": 2, "prefix": "pet"},
		withMigrations(first.serve(cbs, renameLength), second.serve(cbs, addPrefix)))
	res := p.finish()
	if res.Failed {
		t.Fatalf("deployment failed: %v", res.Err)
	}
	if got := second.calls(); len(got) != 1 || !strings.Contains(got[0], `"size":2`) {
		t.Fatalf("the second migration got %q, want the first one's result", got)
	}
	if op := stepOf(res, p.e.URN("", thingType, "a")); op != opSame {
		t.Fatalf("step %q, want same", op)
	}
}

// A migration that renames a resource names its successor: the program
// registers it under the new URN (with an alias to the old), the state
// holds it only under the new one, and a registration of the old URN later
// in the deployment is refused as the engine refuses it.
func TestMigrationWithSuccessor(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	e := startEngine(t, WithState(prior))
	cbs := newCallbackServer(t)
	oldURN := e.URN("", thingType, "a")
	newURN := e.URN("", thingType+"V2", "a")
	var m migration
	rename := func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		old[0]["urn"], old[0]["type"] = newURN, thingType+"V2"
		return old, map[string]string{oldURN: newURN}, nil
	}
	p := newProgram(t, e)
	p.mustRegister(res{typ: thingType + "V2", name: "a", custom: true, props: map[string]any{"length": 2},
		mod: chain([]func(*pulumirpc.RegisterResourceRequest){withMigrations(m.serve(cbs, rename)),
			func(r *pulumirpc.RegisterResourceRequest) {
				r.Aliases = []*pulumirpc.Alias{{Alias: &pulumirpc.Alias_Urn{Urn: oldURN}}}
			}})})
	final := p.registerUnanswered(res{typ: thingType, name: "a", custom: true, props: map[string]any{"length": 2}})
	wantEndedEarly(t, final, oldURN, "resource "+oldURN+" cannot be registered or read because state migration for "+
		newURN+" replaced it with "+newURN+" earlier in this deployment")
}

// A result the engine's rules refuse fails the registration with the
// engine's words under the resource, ends the deployment, and leaves the
// stored state as it was.
func TestMigrationResultsTheEngineRefuses(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	urn := "urn:pulumi:stack::project::" + thingType + "::a"
	tests := []struct {
		name string
		fn   migrationFunc
		want string
	}{
		{name: "changed-id", fn: func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			old[0]["id"] = "changed-id"
			return old, nil, nil
		}, want: "state migration for " + urn + `: resource ` + urn + ` changed ID from "a-id" to "changed-id" without changing URN`},
		{name: "protect", fn: func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			old[0]["protect"] = true
			return old, nil, nil
		}, want: "state migration for " + urn + " changes Protect for resource " + urn +
			" from inherited value false to true; migrations must preserve resource protection"},
		{name: "dropped", fn: func(string, []map[string]any) ([]map[string]any, map[string]string, error) {
			return []map[string]any{}, nil, nil
		}, want: "state migration for " + urn + ": did not account for resource " + urn +
			": it must either be returned in the new state or have a successor"},
		{name: "not-checkpoint-state", fn: func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			old[0]["bogus"] = 1
			return old, nil, nil
		}, want: "state migration 1 of 1 for " + urn + `: unmarshaling returned state: json: unknown field "bogus"`},
		{name: "error", fn: func(string, []map[string]any) ([]map[string]any, map[string]string, error) {
			return nil, nil, errors.New("boom")
		}, want: "state migration 1 of 1 for " + urn + ": rpc error: code = Unknown desc = boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, WithState(prior))
			cbs := newCallbackServer(t)
			var m migration
			p := newProgram(t, e)
			res := p.registerUnanswered(res{typ: thingType, name: "a", custom: true, props: map[string]any{"size": 2},
				mod: withMigrations(m.serve(cbs, tt.fn))})
			wantEndedEarly(t, res, urn, tt.want)
			got := res.State.Get(urn)
			if got == nil || got.Inputs.GetFields()["length"] == nil || got.ID != "a-id" || got.Protect {
				t.Fatalf("the stored state changed: %+v", got)
			}
		})
	}
}
