package enginetest

import (
	"context"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
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
		// loop is a stack-typed component, the only kind whose qualified
		// type allows it to be its own parent.
		loop = "urn:pulumi:stack::project::pulumi:pulumi:Stack::loop"
		// prov is a provider parented to a.
		prov = "urn:pulumi:stack::project::" + thingType + "$pulumi:providers:test::prov"
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
	// again returns the state it is given with the root's prior state
	// under its prior URN a, as a new resource.
	again := func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		a2 := map[string]any{}
		for k, v := range old[0] {
			a2[k] = v
		}
		a2["urn"] = a
		return append(old, a2), nil, nil
	}
	// unchanged returns the state it is given.
	unchanged := func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		return old, nil, nil
	}
	// twin adds child, a custom resource under a with a's ID and
	// provider, changed by change: an inferred successor of a.
	twin := func(change func(map[string]any)) migrationFunc {
		return func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			m := map[string]any{"urn": child, "custom": true, "type": thingType, "parent": a,
				"id": old[0]["id"], "provider": old[0]["provider"]}
			change(m)
			return append(old, m), nil, nil
		}
	}
	secret := func(fields map[string]any) map[string]any {
		fields["4dabf18193072939515e22adb298388d"] = "1b47061264138c4ac30d75fd1eb44270"
		return fields
	}
	// aliasTo makes a registration name urn as its alias.
	aliasTo := func(urn string) func(*pulumirpc.RegisterResourceRequest) {
		return func(r *pulumirpc.RegisterResourceRequest) {
			r.Aliases = []*pulumirpc.Alias{{Alias: &pulumirpc.Alias_Urn{Urn: urn}}}
		}
	}
	// addPrior adds a resource to the prior state, with a's provider.
	addPrior := func(urn, parent string) func(*State) {
		return func(s *State) {
			s.Resources = append(s.Resources, &ResourceState{URN: urn, Type: thingType,
				Name: URNName(urn), Custom: true, ID: URNName(urn) + "-id", Parent: parent,
				Provider: s.Get(a).Provider})
		}
	}
	tests := []struct {
		name string
		// before registers what the deployment registers first.
		before func(p *program)
		// child puts a child under a in the prior state, pending delete
		// if pending.
		child, pending bool
		// prior changes the prior state further.
		prior func(*State)
		fns   []migrationFunc
		// response, if set, is the one migration's answer, as it is sent.
		response []byte
		// renamed registers b, with a as its alias, instead of a.
		renamed bool
		want    string
	}{
		{name: "invalid-provider-reference", fns: []migrationFunc{withComponent(func(m map[string]any) { m["provider"] = "nope" })},
			want: `state migration for ` + a + `: resource ` + c + ` has an invalid provider reference "nope": ` +
				`expected '::' in provider reference 'nope'`},
		{name: "provider-reference-to-no-provider", fns: []migrationFunc{withComponent(func(m map[string]any) { m["provider"] = a + "::id" })},
			want: `state migration for ` + a + `: resource ` + c + ` has an invalid provider reference "` + a + `::id": ` +
				`invalid module in type: expected 'pulumi:providers', got 'test:index'`},
		{name: "provider-reference-to-no-urn", fns: []migrationFunc{withComponent(func(m map[string]any) { m["provider"] = "urn:bad::id" })},
			want: `state migration for ` + a + `: resource ` + c + ` has an invalid provider reference "urn:bad::id": urn:bad is not a valid URN`},
		{name: "provider-reference-without-type-name", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["provider"] = "urn:pulumi:stack::project::pulumi:providers::p::id"
		})}, want: `state migration for ` + a + `: resource ` + c + ` has an invalid provider reference ` +
			`"urn:pulumi:stack::project::pulumi:providers::p::id": provider URNs must specify a type name`},
		{name: "provider-reference-unparsed-on-rewrite", fns: []migrationFunc{
			func(u string, old []map[string]any) ([]map[string]any, map[string]string, error) {
				next, succ, err := renameTo(b)(u, old)
				return append(next, map[string]any{"urn": c, "custom": false, "type": "test:index:Comp", "parent": b, "provider": "nope"}), succ, err
			}},
			want: `state migration for ` + a + `: rewriting successor references: parsing provider reference "nope": ` +
				`expected '::' in provider reference 'nope'`},
		{name: "unknown-extension", fns: []migrationFunc{withComponent(func(m map[string]any) { m["extensionRef"] = "ext" })},
			want: "state migration for " + a + ": returned resource " + c + " references unknown extension ext"},
		{name: "component-with-id", fns: []migrationFunc{withComponent(func(m map[string]any) { m["id"] = "c-id" })},
			want: "state migration for " + a + ": deserializing returned state of " + c + ": resource '" + c +
				"' has 'custom' false but non-empty ID"},
		{name: "secret-in-plaintext-and-ciphertext", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["inputs"] = map[string]any{"m": map[string]any{"s": secret(map[string]any{"plaintext": `"x"`, "ciphertext": `"x"`})}}
		})}, want: "state migration for " + a + ": deserializing returned state of " + c +
			": malformed secret value: exactly one of `ciphertext` or `plaintext` must be supplied"},
		{name: "secret-not-json", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["outputs"] = map[string]any{"s": []any{secret(map[string]any{"plaintext": "{"})}}
		})}, want: "state migration for " + a + ": deserializing returned state of " + c + ": unexpected end of JSON input"},
		{name: "secret-trigger-without-value", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["replacementTrigger"] = secret(map[string]any{})
		})}, want: "state migration for " + a + ": deserializing returned state of " + c +
			": malformed secret value: exactly one of `ciphertext` or `plaintext` must be supplied"},
		{name: "secret-in-secret-not-json", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["inputs"] = map[string]any{"s": secret(map[string]any{"plaintext": `{"` + sigKey + `": "` +
				secretSig + `", "plaintext": "{"}`})}
		})}, want: "state migration for " + a + ": deserializing returned state of " + c + ": unexpected end of JSON input"},
		{name: "unreadable-response", response: []byte{0xff},
			want: "state migration 1 of 1 for " + a + ": unmarshaling state migration response: "},
		{name: "prior-state-invalid-urn", fns: []migrationFunc{unchanged}, prior: addPrior("not-a-urn", a),
			want: `state migration for ` + a + `: received a resource with invalid URN "not-a-urn"`},
		{name: "prior-state-duplicate", fns: []migrationFunc{unchanged},
			prior: func(s *State) { addPrior(child, a)(s); addPrior(child, a)(s) },
			want:  "state migration for " + a + ": received duplicate resource " + child},
		{name: "registration-claimed-by-alias", fns: []migrationFunc{renameLength},
			before: func(p *program) {
				p.mustRegister(res{typ: thingType, name: "x", custom: true, props: map[string]any{"length": 2}, mod: aliasTo(a)})
			},
			want: "state migration for " + a + ": the registration URN was already claimed as an alias by " +
				"urn:pulumi:stack::project::" + thingType + "::x earlier in this deployment"},
		{name: "prior-state-claimed-by-alias", child: true, fns: []migrationFunc{renameLength},
			before: func(p *program) {
				p.mustRegister(res{typ: thingType, name: "y", custom: true, props: map[string]any{"length": 2}, mod: aliasTo(child)})
			},
			want: "state migration for " + a + ": the prior state of " + child + " was already claimed by " +
				"urn:pulumi:stack::project::" + thingType + "::y earlier in this deployment (via an alias); " +
				"it cannot also be migrated as part of " + a + " in the same operation"},
		{name: "result-claimed-by-alias", prior: addPrior(b, ""),
			fns: []migrationFunc{func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
				return append(old, map[string]any{"urn": b, "custom": false, "type": thingType}), nil, nil
			}},
			before: func(p *program) {
				p.mustRegister(res{typ: thingType, name: "y", custom: true, mod: aliasTo(b)})
			},
			want: "state migration for " + a + ": returned resource " + b + " was already claimed as an alias by " +
				"urn:pulumi:stack::project::" + thingType + "::y earlier in this deployment"},
		{name: "pending-replacement-on-inferred-successor", fns: []migrationFunc{twin(func(m map[string]any) { m["pendingReplacement"] = true })},
			want: "state migration for " + a + " changes PendingReplacement for custom resource " + a +
				" from false to true on inferred successor " + child + "; migrations must preserve provider lifecycle state"},
		{name: "taint-on-inferred-successor", fns: []migrationFunc{twin(func(m map[string]any) { m["taint"] = true })},
			want: "state migration for " + a + " changes Taint for custom resource " + a +
				" from false to true on inferred successor " + child + "; migrations must preserve provider lifecycle state"},
		{name: "cyclic-parent-chain", fns: []migrationFunc{func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			return append(old, map[string]any{"urn": loop, "custom": false, "type": "pulumi:pulumi:Stack", "parent": loop}), nil, nil
		}}, want: "state migration for " + a + ": resource " + loop + " has a cyclic parent chain"},
		{name: "provider-state-rewritten",
			prior: func(s *State) {
				s.Resources = append(s.Resources, &ResourceState{URN: prov, Type: "pulumi:providers:test",
					Name: "prov", Custom: true, ID: "prov-id", Parent: a})
			},
			fns: []migrationFunc{touched(b)},
			want: "state migration for " + a + ": state migration for " + a + " rewrites references in provider state " +
				prov + " returned by the migration; provider states must remain unchanged"},
		{name: "retained-provider-state-rewritten", renamed: true,
			prior: func(s *State) {
				s.Resources = append(s.Resources, &ResourceState{URN: "urn:pulumi:stack::project::pulumi:providers:test::other",
					Type: "pulumi:providers:test", Name: "other", Custom: true, ID: "other-id", DependsOn: []string{a}})
			},
			fns: []migrationFunc{touched(b)},
			want: "state migration for " + b + " rewrites references in provider state " +
				"urn:pulumi:stack::project::pulumi:providers:test::other retained from prior state; provider states must remain unchanged"},
		{name: "retained-provider-reference-unparsed", renamed: true,
			prior: func(s *State) {
				addPrior("urn:pulumi:stack::project::"+thingType+"::other", "")(s)
				s.Get("urn:pulumi:stack::project::" + thingType + "::other").Provider = "nope"
			},
			fns: []migrationFunc{touched(b)},
			want: "state migration for " + b + `: rewriting successor references: parsing provider reference "nope": ` +
				`expected '::' in provider reference 'nope'`},
		{name: "intermediate-provider-state-rewritten",
			prior: func(s *State) {
				s.Resources = append(s.Resources, &ResourceState{URN: prov, Type: "pulumi:providers:test",
					Name: "prov", Custom: true, ID: "prov-id", Parent: a})
			},
			fns: []migrationFunc{touched(b), unchanged},
			want: "state migration 1 of 2 for " + a + ": state migration for " + a + " rewrites references in provider state " +
				prov + " returned by the migration; provider states must remain unchanged"},
		{name: "intermediate-successor-cycle", fns: []migrationFunc{renameTo(b), renameTo(a), renameTo(b)},
			want: "state migration 2 of 3 for " + a + ": successor mappings contain a cycle at "},
		{name: "intermediate-final-and-succeeded", fns: []migrationFunc{renameTo(b), again, unchanged},
			want: "state migration 2 of 3 for " + a + ": resource " + a + " is present in the final state and also has successor " + b},
		{name: "intermediate-component-with-id", fns: []migrationFunc{
			func(u string, old []map[string]any) ([]map[string]any, map[string]string, error) {
				next, succ, err := renameTo(b)(u, old)
				return append(next, map[string]any{"urn": c, "custom": false, "type": "test:index:Comp", "parent": b, "id": "c-id"}), succ, err
			}, unchanged},
			want: "state migration 1 of 2 for " + a + ": deserializing returned state of " + c + ": resource '" + c +
				"' has 'custom' false but non-empty ID"},
		{name: "unknown-provider", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["provider"] = "urn:pulumi:stack::project::pulumi:providers:test::missing::id"
		})}, want: "resource " + c + " refers to unknown provider urn:pulumi:stack::project::pulumi:providers:test::missing::id"},
		{name: "unknown-dependency", fns: []migrationFunc{withComponent(func(m map[string]any) {
			m["dependencies"] = []string{b}
		})}, want: "resource " + c + " refers to unknown resource " + b},
		{name: "successor-cycle", fns: []migrationFunc{renameTo(b), touched(a)},
			want: "state migration for " + a + ": successor mappings contain a cycle at " + a},
		{name: "final-and-succeeded", fns: []migrationFunc{renameTo(b), again},
			want: "state migration for " + a + ": resource " + a + " is present in the final state and also has successor " + b},
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
				prior.Resources = append(prior.Resources, &ResourceState{
					URN: child, Type: thingType, Name: "child", Custom: true, ID: "child-id", Parent: a,
					Provider: prior.Get(a).Provider, PendingDelete: tt.pending,
				})
			}
			if tt.prior != nil {
				tt.prior(prior)
			}
			e := startEngine(t, WithState(prior))
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
			if tt.response != nil {
				cbsList = append(cbsList, cbs.add(func(context.Context, []byte) ([]byte, error) { return tt.response, nil }))
			}
			reg := res{typ: thingType, name: "a", custom: true, props: map[string]any{"size": 2}, mod: withMigrations(cbsList...)}
			if tt.renamed {
				reg.name, reg.mod = "b", func(r *pulumirpc.RegisterResourceRequest) { aliasTo(a)(r); withMigrations(cbsList...)(r) }
			}
			res := p.registerUnanswered(reg)
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

// The engine reads a migration's secrets with a decrypter that takes a
// ciphertext for the plaintext, so a secret returned as a ciphertext of
// JSON is read as that value.
func TestMigrationSecretCiphertextIsReadAsPlaintext(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithState(priorState(t)))
	cbs := newCallbackServer(t)
	var m migration
	p := newProgram(t, e)
	resp := p.custom("a", map[string]any{"length": 2}, withMigrations(m.serve(cbs,
		func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			old[0]["outputs"] = map[string]any{"length": map[string]any{
				sigKey: secretSig, "ciphertext": "3"}}
			return old, nil, nil
		})))
	res := p.finish()
	if res.Failed {
		t.Fatalf("deployment failed: %v\n%s", res.Err, e.Trace())
	}
	got := res.State.Get(resp.GetUrn()).Outputs.GetFields()["length"]
	if !isSecret(got) || got.GetStructValue().GetFields()["value"].GetNumberValue() != 3 {
		t.Fatalf("output %v, want the secret 3\n%s", got, e.Trace())
	}
}

// The rest of the deployment follows the successors of the prior
// subtree's resources only: a URN a chain of migrations passed through on
// its way (t, in a → t → b) may name a resource of its own outside the
// subtree, whose references stay as they are. Here one is a provider's,
// which the engine would refuse to rewrite.
func TestMigrationChainsIntermediateURNsStayOutsideIt(t *testing.T) {
	t.Parallel()
	const (
		a     = "urn:pulumi:stack::project::" + thingType + "::a"
		b     = "urn:pulumi:stack::project::" + thingType + "::b"
		mid   = "urn:pulumi:stack::project::" + thingType + "::t"
		other = "urn:pulumi:stack::project::pulumi:providers:test::other"
	)
	prior := priorState(t)
	prior.Resources = append(prior.Resources,
		&ResourceState{URN: mid, Type: thingType, Name: "t", Custom: true, ID: "t-id", Provider: prior.Get(a).Provider},
		&ResourceState{URN: other, Type: "pulumi:providers:test", Name: "other", Custom: true, ID: "other-id",
			DependsOn: []string{mid}})
	e := startEngine(t, WithState(prior))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	rename := func(to string) migrationFunc {
		return func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
			from := old[0]["urn"].(string)
			old[0]["urn"], old[0]["inputs"] = to, map[string]any{"size": 2}
			return old, map[string]string{from: to}, nil
		}
	}
	var m1, m2 migration
	p.custom("b", map[string]any{"size": 2}, func(r *pulumirpc.RegisterResourceRequest) {
		r.Aliases = []*pulumirpc.Alias{{Alias: &pulumirpc.Alias_Urn{Urn: a}}}
		withMigrations(m1.serve(cbs, rename(mid)), m2.serve(cbs, rename(b)))(r)
	})
	res := p.finish()
	if res.Failed {
		t.Fatalf("deployment failed: %v\n%s", res.Err, e.Trace())
	}
	wantDiag(t, res.Diagnostics, severityInfo, b, "State migration applied (state entries: 1 before, 1 after).")
}
