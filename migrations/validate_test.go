package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/migrations"
)

const (
	urnProv  = "urn:pulumi:dev::proj::my:index:Bucket$pulumi:providers:my::prov"
	urnProv2 = "urn:pulumi:dev::proj::my:index:Bucket$pulumi:providers:my::prov2"
	provRef  = "urn:pulumi:dev::proj::pulumi:providers:my::default::p1"
)

// subtree is a prior state as the engine sends it: a custom resource, a
// custom child and a provider parented to it.
func subtree() []map[string]any {
	return []map[string]any{
		{"urn": urnOld, "custom": true, "id": "logs-1", "type": "my:index:Bucket", "provider": provRef,
			"inputs": map[string]any{"size": 1}, "outputs": map[string]any{"size": 1}},
		{"urn": urnChild, "custom": true, "id": "p-1", "type": "my:index:Policy", "parent": urnOld, "provider": provRef},
		{"urn": urnProv, "custom": true, "id": "prov-id", "type": "pulumi:providers:my", "parent": urnOld,
			"inputs": map[string]any{"region": "x"}},
	}
}

func rootOnly() []map[string]any { return subtree()[:1] }

func component(urn, parent string) map[string]any {
	typ := urn[len("urn:pulumi:dev::proj::"):]
	for i := len(typ) - 1; i >= 0; i-- {
		if typ[i] == '$' {
			typ = typ[i+1:]
			break
		}
	}
	if i := indexOf(typ, "::"); i >= 0 {
		typ = typ[:i]
	}
	m := map[string]any{"urn": urn, "custom": false, "type": typ}
	if parent != "" {
		m["parent"] = parent
	}
	return m
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func renamedRoot(change func(map[string]any)) []map[string]any {
	s := rootOnly()
	s[0]["urn"], s[0]["type"] = urnNew, "my:index:BucketV2"
	if change != nil {
		change(s[0])
	}
	return s
}

// TestEveryRuleOfTheEngine breaks each rule the engine (3.274.1) enforces
// on a migration's result, one at a time: the module refuses the result
// before it is sent, with ErrInvalidResult (Internal), naming the rule and
// the resource that breaks it.
func TestEveryRuleOfTheEngine(t *testing.T) {
	t.Parallel()
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	for _, tt := range brokenResults() {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			urn, oldJSON, res := tt.build(t)
			token, err := reg.Register(migrations.Adapt(func(context.Context, *migrations.Args) (*migrations.Result, error) {
				return res, nil
			}))
			require.NoError(t, err)
			payload, err := proto.Marshal(&pulumirpc.StateMigrationRequest{Urn: urn, OldState: oldJSON})
			require.NoError(t, err)

			_, err = reg.Invoke(context.Background(), token, payload)
			require.Error(t, err, "the result breaks %s and was sent", tt.rule)
			assert.True(t, errors.Is(err, callbacks.ErrInvalidResult), "not ErrInvalidResult: %v", err)
			assert.Equal(t, codes.Internal, status.Code(err))
			assert.Contains(t, err.Error(), "state migration for "+urn+": ")
			assert.Contains(t, err.Error(), "the result breaks the rule "+tt.rule+": ")
			assert.Contains(t, err.Error(), tt.names)
			if tt.rule == "id-changed" || tt.rule == "custom-changed" {
				// The error names the resource once, and says how to fix it.
				assert.Equal(t, 1, strings.Count(err.Error(), urn), err.Error())
				assert.Contains(t, err.Error(), "or return a successor: ")
			}
		})
	}
}

// brokenResult is a migration result that breaks one rule of the engine's.
type brokenResult struct {
	rule string
	// registration URN; urnOld unless given
	urn string
	// old state; subtree() unless given
	old []map[string]any
	// the result: the old state changed by change, or state
	change     func(s []map[string]any) []map[string]any
	raw        string
	successors map[string]string
	// what the message must name besides the rule
	names string
}

// build returns the registration URN, the old state as the engine sends it
// and the result.
func (tt brokenResult) build(t *testing.T) (urn string, oldJSON []byte, res *migrations.Result) {
	t.Helper()
	old := tt.old
	if old == nil {
		old = subtree()
	}
	oldJSON, err := json.Marshal(old)
	require.NoError(t, err)
	res = &migrations.Result{Successors: tt.successors}
	switch {
	case tt.raw != "":
		res.NewState = json.RawMessage(tt.raw)
	case tt.change != nil:
		var copied []map[string]any
		require.NoError(t, json.Unmarshal(oldJSON, &copied))
		res.NewState, err = json.Marshal(tt.change(copied))
		require.NoError(t, err)
	}
	urn = tt.urn
	if urn == "" {
		urn = urnOld
	}
	return urn, oldJSON, res
}

// brokenResults breaks each rule the engine (3.274.1) enforces on a
// migration's result, one at a time.
func brokenResults() []brokenResult {
	renameSucc := map[string]string{urnOld: urnNew}
	return []brokenResult{
		{rule: "successors-without-state", successors: map[string]string{urnChild: urnOld}, names: "successors"},
		{rule: "not-checkpoint-state", raw: `[{"urn": "` + urnOld + `", "bogus": 1}]`, names: "bogus"},
		{rule: "not-checkpoint-state", raw: `{"urn": "` + urnOld + `"}`, names: "array"},
		{rule: "invalid-urn", change: func(s []map[string]any) []map[string]any { s[1]["urn"] = "policy"; return s }, names: "policy"},
		{rule: "aliases", change: func(s []map[string]any) []map[string]any { s[1]["aliases"] = []string{urnOther}; return s }, names: urnChild},
		{rule: "duplicate", change: func(s []map[string]any) []map[string]any { return append(s, s[1]) }, names: urnChild},
		{rule: "type-mismatch", change: func(s []map[string]any) []map[string]any { s[0]["type"] = "my:index:BucketV2"; return s }, names: urnOld},
		{rule: "empty-successor", change: func(s []map[string]any) []map[string]any { return s[:1] }, successors: map[string]string{urnChild: ""}, names: urnChild},
		{rule: "successor-not-in-prior-state", change: same, successors: map[string]string{urnOther: urnOld}, names: urnOther},
		{rule: "returned-and-succeeded", change: same, successors: map[string]string{urnChild: urnOld}, names: urnChild},
		{rule: "successor-not-returned", change: func(s []map[string]any) []map[string]any { return append(s[:1], s[2]) },
			successors: map[string]string{urnChild: urnOther}, names: urnOther},
		{rule: "unaccounted", change: func(s []map[string]any) []map[string]any { return append(s[:1], s[2]) }, names: urnChild},
		{rule: "custom-changed", change: func(s []map[string]any) []map[string]any { s[1]["custom"] = false; return s }, names: urnChild},
		{rule: "id-changed", change: func(s []map[string]any) []map[string]any { s[0]["id"] = "changed-id"; return s },
			names: `the resource changed its ID from "logs-1" to "changed-id" under the same URN; keep the ID`},
		{rule: "provider-state-removed", change: func(s []map[string]any) []map[string]any {
			s[2]["urn"] = urnProv2
			return s
		}, successors: map[string]string{urnProv: urnProv2}, names: urnProv},
		{rule: "provider-state-changed", change: func(s []map[string]any) []map[string]any {
			s[2]["inputs"] = map[string]any{"region": "y"}
			return s
		}, names: urnProv},
		{rule: "provider-state-introduced", change: func(s []map[string]any) []map[string]any {
			p := map[string]any{"urn": urnProv2, "custom": true, "id": "prov-2", "type": "pulumi:providers:my", "parent": urnOld}
			return append(s, p)
		}, names: urnProv2},
		{rule: "custom-to-component", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["custom"] = false; delete(r, "id"); delete(r, "provider") })
		}, successors: renameSucc, names: urnOld},
		{rule: "physical-id", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["id"] = "other" })
		}, successors: renameSucc, names: urnOld},
		{rule: "provider-reference", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["provider"] = provRef + "x" })
		}, successors: renameSucc, names: urnOld},
		{rule: "extension-reference", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["extensionRef"] = "ext" })
		}, successors: renameSucc, names: urnOld},
		{rule: "external", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["external"] = true })
		}, successors: renameSucc, names: urnOld},
		{rule: "pending-replacement", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["pendingReplacement"] = true })
		}, successors: renameSucc, names: urnOld},
		{rule: "taint", old: rootOnly(), urn: urnNew, change: func([]map[string]any) []map[string]any {
			return renamedRoot(func(r map[string]any) { r["taint"] = true })
		}, successors: renameSucc, names: urnOld},
		{rule: "pending-replacement", change: func(s []map[string]any) []map[string]any {
			c := component("urn:pulumi:dev::proj::my:index:Bucket$my:index:Thing::t", urnOld)
			c["pendingReplacement"] = true
			return append(s, c)
		}, names: "my:index:Thing::t"},
		{rule: "taint", change: func(s []map[string]any) []map[string]any {
			c := component("urn:pulumi:dev::proj::my:index:Bucket$my:index:Thing::t", urnOld)
			c["taint"] = true
			return append(s, c)
		}, names: "my:index:Thing::t"},
		{rule: "external", change: func(s []map[string]any) []map[string]any {
			c := map[string]any{"urn": "urn:pulumi:dev::proj::my:index:Bucket$my:index:Policy::copy", "custom": true,
				"id": "p-1", "type": "my:index:Policy", "parent": urnOld, "provider": provRef, "external": true}
			return append(s, c)
		}, names: "inferred successor"},
		{rule: "import", change: func(s []map[string]any) []map[string]any {
			c := map[string]any{"urn": "urn:pulumi:dev::proj::my:index:Bucket$my:index:Policy::new", "custom": true,
				"id": "new-id", "type": "my:index:Policy", "parent": urnOld, "provider": provRef}
			return append(s, c)
		}, names: `with ID "new-id"`},
		{rule: "protect", change: func(s []map[string]any) []map[string]any { s[0]["protect"] = true; return s },
			names: "migrations must preserve resource protection"},
		{rule: "retain-on-delete", change: func(s []map[string]any) []map[string]any { s[1]["retainOnDelete"] = true; return s },
			names: urnChild},
		{rule: "root-missing", old: rootOnly(), change: func([]map[string]any) []map[string]any { return renamedRoot(nil) },
			successors: renameSucc, names: urnOld},
		{rule: "two-roots", old: rootOnly(), urn: urnNew, change: func(s []map[string]any) []map[string]any {
			return append(s, renamedRoot(nil)[0])
		}, names: urnNew},
		{rule: "other-stack", change: func(s []map[string]any) []map[string]any {
			return append(s, map[string]any{"urn": "urn:pulumi:prod::proj::my:index:Bucket$my:index:Thing::t", "custom": false,
				"type": "my:index:Thing", "parent": urnOld})
		}, names: "prod"},
		{rule: "pending-delete", change: func(s []map[string]any) []map[string]any { s[1]["delete"] = true; return s }, names: urnChild},
		{rule: "view", change: func(s []map[string]any) []map[string]any { s[1]["viewOf"] = urnOld; return s }, names: urnChild},
		{rule: "no-id", old: func() []map[string]any {
			s := subtree()
			delete(s[1], "id")
			return s
		}(), change: func(s []map[string]any) []map[string]any { s[1]["inputs"] = map[string]any{"a": 1}; return s }, names: urnChild},
		{rule: "invalid-parent", change: func(s []map[string]any) []map[string]any {
			return append(s, component("urn:pulumi:dev::proj::my:index:Bucket$my:index:Thing::t", "nope"))
		}, names: `"nope"`},
		{rule: "qualified-type", change: func(s []map[string]any) []map[string]any {
			return append(s, component("urn:pulumi:dev::proj::my:index:Thing::t", urnOld))
		}, names: "my:index:Thing::t"},
		{rule: "root-parent", change: func(s []map[string]any) []map[string]any {
			s[0]["parent"] = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
			return s
		}, names: urnOld},
		{rule: "outside-subtree", change: func(s []map[string]any) []map[string]any {
			return append(s, component("urn:pulumi:dev::proj::my:index:Other$my:index:Thing::t", urnOther))
		}, names: urnOther},
	}
}

func same(s []map[string]any) []map[string]any { return s }

// TestValidResultsPass sends results every rule allows: a rename with its
// successor, children folded into one successor, a change of inputs, an
// unchanged state.
func TestValidResultsPass(t *testing.T) {
	t.Parallel()
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	tests := []struct {
		name       string
		old        []map[string]any
		urn        string
		next       func(s []map[string]any) []map[string]any
		successors map[string]string
	}{
		{name: "inputs-renamed", next: func(s []map[string]any) []map[string]any {
			s[0]["inputs"] = map[string]any{"length": 1}
			return s
		}},
		{name: "unchanged", next: same},
		{name: "root-renamed-under-its-new-urn", old: rootOnly(), urn: urnNew,
			next: func([]map[string]any) []map[string]any { return renamedRoot(nil) }, successors: map[string]string{urnOld: urnNew}},
		{name: "root-kept-under-its-prior-urn", urn: urnNew, next: same},
		{name: "component-child-folded-into-root", old: append(rootOnly(), component("urn:pulumi:dev::proj::my:index:Bucket$my:index:Thing::t", urnOld)),
			next:       func(s []map[string]any) []map[string]any { return s[:1] },
			successors: map[string]string{"urn:pulumi:dev::proj::my:index:Bucket$my:index:Thing::t": urnOld}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			old := tt.old
			if old == nil {
				old = subtree()
			}
			oldJSON, err := json.Marshal(old)
			require.NoError(t, err)
			var copied []map[string]any
			require.NoError(t, json.Unmarshal(oldJSON, &copied))
			next, err := json.Marshal(tt.next(copied))
			require.NoError(t, err)
			token, err := reg.Register(migrations.Adapt(func(context.Context, *migrations.Args) (*migrations.Result, error) {
				return &migrations.Result{NewState: next, Successors: tt.successors}, nil
			}))
			require.NoError(t, err)
			urn := tt.urn
			if urn == "" {
				urn = urnOld
			}
			payload, err := proto.Marshal(&pulumirpc.StateMigrationRequest{Urn: urn, OldState: oldJSON})
			require.NoError(t, err)
			out, err := reg.Invoke(context.Background(), token, payload)
			require.NoError(t, err)
			var resp pulumirpc.StateMigrationResponse
			require.NoError(t, proto.Unmarshal(out, &resp))
			assert.JSONEq(t, string(next), string(resp.GetNewState()))
		})
	}
}
