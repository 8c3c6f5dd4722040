package calllog_test

import (
	"math/rand/v2"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/calllog"
	"github.com/langhost/callbacks/replay"
)

// The changes a record holds are the ones replay's Call.Changes gives for
// the same call, which the account of a gRPC log prints: path for path,
// value for value, secrets hidden alike, on random property maps (secrets,
// unknowns and output values at any depth) and options.
func TestDiffCallAsReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bounds := calllog.ChangeBounds{Changes: 1 << 20, Text: 1 << 30, Value: 1 << 20}
	for i := range 1000 {
		data := make([]byte, 64+rng.IntN(256))
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		before, after := calllog.ReplayPair(data)
		a, errA := structpb.NewStruct(before)
		b, errB := structpb.NewStruct(after)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		req := &pulumirpc.TransformRequest{Name: "n", Properties: a,
			Options: &pulumirpc.TransformResourceOptions{Protect: proto.Bool(i%2 == 0), DependsOn: []string{"x"}}}
		res := &pulumirpc.TransformResponse{Properties: b,
			Options: &pulumirpc.TransformResourceOptions{Protect: proto.Bool(i%3 == 0), IgnoreChanges: []string{"y"}}}
		reqB, _ := proto.Marshal(req)
		resB, _ := proto.Marshal(res)
		got, leftOut, err := calllog.DiffCall("resource_transform", reqB, resB, bounds)
		if err != nil || leftOut != 0 {
			t.Fatal(err, leftOut)
		}
		want := (&replay.Call{Kind: callbacks.KindResourceTransform, Request: reqB, Response: resB}).Changes(replay.HideSecrets)
		if len(got) != len(want) {
			t.Fatalf("case %d: %d changes, replay %d:\n got %+v\nwant %+v\nbefore %v\nafter %v", i, len(got), len(want), got, want, before, after)
		}
		for j := range got {
			if got[j].Path != want[j].Path || got[j].Old != want[j].Old || got[j].New != want[j].New {
				t.Fatalf("case %d, change %d: got %+v, replay %+v\nbefore %v\nafter %v", i, j, got[j], want[j], before, after)
			}
		}
	}
}
