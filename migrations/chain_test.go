package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/migrations"
)

// petChain is the chain of the examples: version 0 stores "length",
// version 1 renames it "size", version 2 adds a "separator".
func petChain() *migrations.Chain {
	both := func(r map[string]any, f func(props map[string]any)) {
		for _, k := range []string{"inputs", "outputs"} {
			if props, ok := r[k].(map[string]any); ok {
				f(props)
			}
		}
	}
	return &migrations.Chain{
		Version: func(r map[string]any) (int, error) {
			inputs, _ := r["inputs"].(map[string]any)
			switch {
			case inputs["separator"] != nil:
				return 2, nil
			case inputs["size"] != nil:
				return 1, nil
			default:
				return 0, nil
			}
		},
		Upgrades: []migrations.Upgrade{
			func(_ context.Context, r map[string]any) error { // v0 → v1
				both(r, func(p map[string]any) { p["size"] = p["length"]; delete(p, "length") })
				return nil
			},
			func(_ context.Context, r map[string]any) error { // v1 → v2
				both(r, func(p map[string]any) { p["separator"] = "-" })
				return nil
			},
		},
	}
}

func petState(props string) json.RawMessage {
	return json.RawMessage(`[{"urn": "` + urnOld + `", "custom": true, "id": "logs-1", "type": "my:index:Bucket",
		"inputs": ` + props + `, "outputs": ` + props + `},
		{"urn": "` + urnChild + `", "custom": true, "id": "p-1", "type": "my:index:Policy", "parent": "` + urnOld + `", "inputs": {"length": 1}}]`)
}

func TestChain(t *testing.T) {
	t.Parallel()
	current := `{"separator": "-", "size": 2}`
	for _, start := range []string{`{"length": 2}`, `{"size": 2}`, current} {
		t.Run(start, func(t *testing.T) {
			t.Parallel()
			chain := petChain()
			res, err := chain.Migrate(t.Context(), &migrations.Args{URN: urnOld, OldState: petState(start)})
			require.NoError(t, err)
			if start == current {
				assert.Nil(t, res, "state at the newest version must be left alone")
				return
			}
			require.NotNil(t, res)
			assert.JSONEq(t, string(petState(current)), string(res.NewState), "only the registering resource is upgraded")
			assert.Empty(t, res.Successors)

			again, err := chain.Migrate(t.Context(), &migrations.Args{URN: urnOld, OldState: res.NewState})
			require.NoError(t, err)
			assert.Nil(t, again, "running the chain on migrated state must change nothing")
		})
	}
}

func TestChainRefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name  string
		chain *migrations.Chain
		want  string
	}{
		{"no-version-function", &migrations.Chain{}, "needs a Version function"},
		{"version-beyond-the-chain", &migrations.Chain{Version: func(map[string]any) (int, error) { return 3, nil }},
			"schema version 3, which this chain does not know (it knows 0 to 0)"},
		{"version-error", &migrations.Chain{Version: func(map[string]any) (int, error) { return 0, boom }}, "boom"},
		{"upgrade-error", &migrations.Chain{
			Version:  func(map[string]any) (int, error) { return 0, nil },
			Upgrades: []migrations.Upgrade{func(context.Context, map[string]any) error { return boom }},
		}, "upgrading " + urnOld + " from version 0 to 1: boom"},
		{"upgrade-that-does-not-advance", &migrations.Chain{
			Version:  func(map[string]any) (int, error) { return 0, nil },
			Upgrades: []migrations.Upgrade{func(context.Context, map[string]any) error { return nil }},
		}, "left it at version 0, not 1"},
		{"nil-upgrade", &migrations.Chain{
			Version:  func(map[string]any) (int, error) { return 0, nil },
			Upgrades: []migrations.Upgrade{nil},
		}, "is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.chain.Migrate(t.Context(), &migrations.Args{URN: urnOld, OldState: petState(`{"length": 2}`)})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// A Chain upgrades a resource's state version by version, from whatever
// version it finds, and leaves current state alone.
func ExampleChain() {
	chain := petChain() // v0 "length" → v1 "size" → v2 adds "separator"
	for _, stored := range []string{`{"length": 2}`, `{"size": 2}`, `{"separator": "-", "size": 2}`} {
		res, err := chain.Migrate(context.Background(), &migrations.Args{
			URN:      "urn:pulumi:dev::proj::random:index/randomPet:RandomPet::pet",
			OldState: json.RawMessage(`[{"urn": "urn:pulumi:dev::proj::random:index/randomPet:RandomPet::pet", "custom": true, "inputs": ` + stored + `}]`),
		})
		if err != nil {
			fmt.Println(err)
			continue
		}
		if res == nil {
			fmt.Println(stored, "is current: unchanged")
			continue
		}
		rs, _ := (&migrations.Args{OldState: res.NewState}).Resources()
		fmt.Println(stored, "->", rs[0]["inputs"])
	}
	// Output:
	// {"length": 2} -> map[separator:- size:2]
	// {"size": 2} -> map[separator:- size:2]
	// {"separator": "-", "size": 2} is current: unchanged
}
