package engine_test

import (
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	enginetest "github.com/langhost/callbacks/enginetest/internal/engine"
)

// The rules of the engine's that only the engine can check, since they
// need more than the old state and the result: the rest of the deployment,
// or the chain of a registration's migrations. (The rules a result breaks
// on its own are run against the simulator by the migrations package's
// tests, through migrations the library does not check.) Each breaks one,
// and the simulator refuses it in the engine's words.
func TestMigrationRulesOfTheDeployment(t *testing.T) {
	t.Parallel()
	const (
		a     = "urn:pulumi:stack::project::" + thingType + "::a"
		b     = "urn:pulumi:stack::project::" + thingType + "::b"
		c     = "urn:pulumi:stack::project::" + thingType + "$test:index:Comp::c"
		child = "urn:pulumi:stack::project::" + thingType + "$" + thingType + "::child"
	)
	// withComponent adds component c under a, changed by change.
	withComponent := func(change func(map[string]any)) migrationFunc {
		return func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			comp := map[string]any{"urn": c, "custom": false, "type": "test:index:Comp", "parent": a}
			change(comp)
			return append(old, comp), nil, nil
		}
	}
	// renameTo renames the root to urn, with its successor.
	renameTo := func(urn string) migrationFunc {
		return func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			from := old[0]["urn"].(string)
			old[0]["urn"] = urn
			return old, map[string]string{from: urn}, nil
		}
	}
	// touched is renameTo(urn) that also changes the inputs, so that the
	// chain's result differs from the prior state.
	touched := func(urn string) migrationFunc {
		return func(u string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			old[0]["inputs"] = map[string]any{"touched": true}
			return renameTo(urn)(u, old)
		}
	}
	tests := []struct {
		name string
		// before registers what the deployment registers first.
		before func(p *program)
		// child puts a child under a in the prior state, pending delete
		// if pending.
		child, pending bool
		fns            []migrationFunc
		want           string
	}{
		{name: "invalid-provider-reference", fns: []migrationFunc{withComponent(func(m map[string]any) { m["provider"] = "nope" })},
			want: `state migration for ` + a + `: resource ` + c + ` has an invalid provider reference "nope"`},
		{name: "unknown-provider", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["provider"] = "urn:pulumi:stack::project::pulumi:providers:test::missing::id"
		})}, want: "resource " + c + " refers to unknown provider urn:pulumi:stack::project::pulumi:providers:test::missing::id"},
		{name: "unknown-dependency", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["dependencies"] = []string{b}
		})}, want: "resource " + c + " refers to unknown resource " + b},
		{name: "successor-cycle", fns: []migrationFunc{renameTo(b), touched(a)},
			want: "state migration for " + a + ": successor mappings contain a cycle at " + a},
		{name: "missing-subtree-root", fns: []migrationFunc{renameTo(b), renameTo(a), renameTo(b)},
			want: "state migration 2 of 3 for " + a + ": missing subtree root " + b},
		{name: "final-and-succeeded", fns: []migrationFunc{renameTo(b), func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			again := map[string]any{}
			for k, v := range old[0] {
				again[k] = v
			}
			again["urn"] = a
			return append(old, again), nil, nil
		}}, want: "state migration for " + a + ": resource " + a + " is present in the final state and also has successor " + b},
		{name: "pending-delete-in-prior-state", child: true, pending: true, fns: []migrationFunc{renameLength},
			want: "state migration for " + a + ": the prior state contains resources that are pending deletion from a previous update: " + child},
		{name: "prior-state-already-registered", child: true, fns: []migrationFunc{renameLength},
			before: func(p *program) {
				p.mustRegister(res{typ: thingType, name: "child", custom: true, props: map[string]any{"length": 2},
					mod: func(r *pulumirpc.RegisterResourceRequest) { r.Parent = a }})
			},
			want: "state migration for " + a + ": the prior state of " + child + " was already registered earlier in this deployment"},
		{name: "result-already-registered", fns: []migrationFunc{withComponent(func(map[string]any) {})},
			before: func(p *program) {
				p.mustRegister(res{typ: "test:index:Comp", name: "c", mod: func(r *pulumirpc.RegisterResourceRequest) { r.Parent = a }})
			},
			want: "state migration for " + a + ": returned resource " + c + " was already registered earlier in this deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prior := priorState(t)
			if tt.child {
				prior.Resources = append(prior.Resources, &enginetest.ResourceState{
					URN: child, Type: thingType, Name: "child", Custom: true, ID: "child-id", Parent: a,
					Provider: prior.Get(a).Provider, PendingDelete: tt.pending,
				})
			}
			e := startEngine(t, enginetest.WithState(prior))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			if tt.before != nil {
				tt.before(p)
			}
			var cbsList []*pulumirpc.Callback
			for _, fn := range tt.fns {
				var m migration
				cbsList = append(cbsList, m.serve(cbs, fn))
			}
			res := p.registerUnanswered(res{typ: thingType, name: "a", custom: true, props: map[string]any{"size": 2},
				mod: withMigrations(cbsList...)})
			var said []string
			for _, d := range res.Diagnostics {
				said = append(said, d.Message)
			}
			if !res.Failed || !strings.Contains(strings.Join(said, "\n"), tt.want) {
				t.Fatalf("failed=%t, diagnostics %q, want %q\n%s", res.Failed, said, tt.want, e.Trace())
			}
		})
	}
}
