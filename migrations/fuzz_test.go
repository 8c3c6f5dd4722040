package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/migrations"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// FuzzResultCheck runs the result checks on arbitrary old and new states:
// they must never panic, and a result they let through must reach the
// engine unchanged.
func FuzzResultCheck(f *testing.F) {
	f.Add([]byte(oldState), []byte(`[{"urn":"`+urnNew+`"},{"urn":"`+urnChild+`"}]`), urnOld, urnNew)
	f.Add([]byte(`[]`), []byte(`[]`), "", "")
	f.Add([]byte(`[{"urn":1}]`), []byte(`[{}]`), "a", "b")
	f.Fuzz(func(t *testing.T, old, next []byte, from, to string) {
		reg, err := callbacks.NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		res := &migrations.Result{NewState: json.RawMessage(next)}
		if from != "" {
			res.Successors = map[string]string{from: to}
		}
		token, err := reg.Register(migrations.Adapt(func(context.Context, *migrations.Args) (*migrations.Result, error) {
			return res, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		payload, err := proto.Marshal(&pulumirpc.StateMigrationRequest{Urn: urnOld, OldState: old})
		if err != nil {
			t.Fatal(err)
		}
		out, err := reg.Invoke(context.Background(), token, payload)
		if errors.Is(err, callbacks.ErrPanicked) {
			t.Fatalf("the checks panicked: %v", err)
		}
		if err != nil {
			return
		}
		var resp pulumirpc.StateMigrationResponse
		if err := proto.Unmarshal(out, &resp); err != nil {
			t.Fatal(err)
		}
		if string(resp.GetNewState()) != string(next) || len(resp.GetSuccessors()) != len(res.Successors) {
			t.Fatalf("the result changed on the way: got %q %v, want %q %v", resp.GetNewState(), resp.GetSuccessors(), next, res.Successors)
		}
	})
}
