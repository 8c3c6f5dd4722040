package enginetest

import (
	"fmt"
	"testing"
)

// deploy runs one update of a program that registers thing "a" with props,
// from prior, and returns its result.
func deploy(t *testing.T, prior *State, props map[string]any) *Result {
	t.Helper()
	var opts []Option
	if prior != nil {
		opts = append(opts, WithState(prior))
	}
	e := startEngine(t, opts...)
	p := newProgram(t, e)
	p.custom("a", props)
	res := p.finish()
	if res.Failed {
		t.Fatalf("deployment failed: %v\n%s", res.Err, e.Trace())
	}
	return res
}

// The default provider replaces a resource when its keepers change, and
// only then; the replacement gets an ID of its own, and the provider
// deletes the resource it replaced by its ID.
func TestDefaultProviderReplacesOnKeepersWithANewID(t *testing.T) {
	t.Parallel()
	first := deploy(t, nil, map[string]any{"keepers": map[string]any{"owner": "ann"}, "length": 2})
	urn := first.State.URNs()[len(first.State.URNs())-1]
	if id := first.State.Get(urn).ID; id != "a-id" {
		t.Fatalf("first ID %q, want a-id", id)
	}

	updated := deploy(t, first.State, map[string]any{"keepers": map[string]any{"owner": "ann"}, "length": 3})
	if op := stepOf(updated, urn); op != opUpdate {
		t.Errorf("a change of length is %q, want an update", op)
	}
	if id := updated.State.Get(urn).ID; id != "a-id" {
		t.Errorf("an update changed the ID to %q", id)
	}

	prior := updated.State
	for _, want := range []string{"a-id-2", "a-id-3"} {
		replaced := deploy(t, prior, map[string]any{"keepers": map[string]any{"owner": want}, "length": 3})
		if op := stepOf(replaced, urn); op != opReplace {
			t.Errorf("a change of keepers is %q, want a replacement", op)
		}
		if id := replaced.State.Get(urn).ID; id != want {
			t.Errorf("the replacement's ID is %q, want %q", id, want)
		}
		prior = replaced.State
	}
}

// The default provider's Diff tells what replaces; the engine still adds
// replaceOnChanges.
func TestDefaultProviderDiffSaysKeepersReplace(t *testing.T) {
	t.Parallel()
	p := &FakeProvider{}
	resp, err := p.diff(t.Context(), &DiffRequest{
		OldInputs: mustStruct(t, map[string]any{"keepers": map[string]any{"a": "1"}, "length": 2}),
		NewInputs: mustStruct(t, map[string]any{"keepers": map[string]any{"a": "2"}, "length": 3}),
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEqualStrings(t, "changed", resp.Changed, []string{"keepers", "length"})
	wantEqualStrings(t, "replace", resp.Replace, []string{"keepers"})
}

// failures is a testing.TB that records what would fail a test.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Helper() {}
func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// notReplaced is the assertion a migration test makes: the resource kept
// its ID and was not replaced.
func notReplaced(t testing.TB, before, after *Result, urn string) {
	t.Helper()
	if op := stepOf(after, urn); op == opReplace {
		t.Errorf("%s was replaced", urn)
	}
	if a, b := before.State.Get(urn).ID, after.State.Get(urn).ID; a != b {
		t.Errorf("%s changed its ID from %q to %q", urn, a, b)
	}
}

// A test asserting "not replaced, same ID" can fail on the simulator: a
// program renames the keeper "owner" to "team"; without the state
// migration that renames it in the stored state too, the resource is
// replaced and gets a new ID, and the assertion fails; with it, it holds.
func TestNotReplacedCanFail(t *testing.T) {
	t.Parallel()
	first := deploy(t, nil, map[string]any{"keepers": map[string]any{"owner": "ann"}})
	urn := first.State.URNs()[len(first.State.URNs())-1]
	renamed := map[string]any{"keepers": map[string]any{"team": "ann"}}

	without := deploy(t, first.State, renamed)
	var f failures
	notReplaced(&f, first, without, urn)
	if len(f.msgs) != 2 {
		t.Errorf("without the migration, the assertion reported %q, want the replacement and the new ID", f.msgs)
	}

	var m migration
	rename := func(_ string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		for _, k := range []string{"inputs", "outputs"} {
			props := old[0][k].(map[string]any)
			keepers := props["keepers"].(map[string]any)
			keepers["team"] = keepers["owner"]
			delete(keepers, "owner")
		}
		return old, nil, nil
	}
	e := startEngine(t, WithState(first.State))
	p := newProgram(t, e)
	p.custom("a", renamed, withMigrations(m.serve(newCallbackServer(t), rename)))
	migrated := p.finish()
	if migrated.Failed {
		t.Fatalf("deployment failed: %v\n%s", migrated.Err, e.Trace())
	}
	notReplaced(t, first, migrated, urn)
	if len(m.calls()) != 1 {
		t.Errorf("the migration ran %d times, want once", len(m.calls()))
	}
}
