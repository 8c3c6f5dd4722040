package replay

import (
	"fmt"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
)

// deepStruct returns a Struct whose key "a" nests depth objects deep, leaf
// at the bottom.
func deepStruct(tb testing.TB, depth int, leaf any) *structpb.Struct {
	tb.Helper()
	v := leaf
	for range depth {
		v = map[string]any{"a": v}
	}
	s, err := structpb.NewStruct(map[string]any{"a": v, "top": "x"})
	require.NoError(tb, err)
	return s
}

// deepCall is a resource transform call whose request holds a property
// depth objects deep and whose answer changes the string at its bottom.
func deepCall(tb testing.TB, depth int) *Call {
	tb.Helper()
	req, err := proto.Marshal(&pulumirpc.TransformRequest{Type: "t:m:T", Name: "n", Properties: deepStruct(tb, depth, "old")})
	require.NoError(tb, err)
	res, err := proto.Marshal(&pulumirpc.TransformResponse{Properties: deepStruct(tb, depth, "new")})
	require.NoError(tb, err)
	return &Call{Kind: callbacks.KindResourceTransform, Request: req, Response: res}
}

// TestChangesAtDepth: a change at the bottom of a deep property is found
// and named by its whole path.
func TestChangesAtDepth(t *testing.T) {
	t.Parallel()
	const depth = 3000
	got := deepCall(t, depth).Changes(HideSecrets)
	want := []Change{{Path: "properties.a" + strings.Repeat(".a", depth), Old: `"old"`, New: `"new"`}}
	assert.Equal(t, want, got)
}

// BenchmarkChangesDeep decodes and compares a transform call whose
// property nests 250, 1,000 and 3,000 objects deep: in time linear in the
// depth, so each step costs about its ratio in depth (4× and 3×).
func BenchmarkChangesDeep(b *testing.B) {
	for _, depth := range []int{250, 1000, 3000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			c := deepCall(b, depth)
			b.ReportAllocs()
			for b.Loop() {
				if n := len(c.Changes(HideSecrets)); n != 1 {
					b.Fatalf("%d changes, want 1", n)
				}
			}
		})
	}
}
