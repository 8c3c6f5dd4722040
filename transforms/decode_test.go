package transforms_test

import (
	"context"
	"strings"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A request that repeats its properties (or options) field is valid
// protobuf: the runtime merges the two. The transform sees what the runtime
// sees, through the adapter and through DecodeRequest alike.
func TestRepeatedPropertiesMergeAsProtobufDoes(t *testing.T) {
	t.Parallel()
	first := &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: "a",
		Properties: wiretest.Struct("a", wiretest.Str("1"), "b", wiretest.Str("2")),
		Options:    &pulumirpc.TransformResourceOptions{Version: "1.0.0", IgnoreChanges: []string{"x"}}}
	second := &pulumirpc.TransformRequest{
		Properties: wiretest.Struct("b", wiretest.Str("3"), "c", wiretest.Str("4")),
		Options:    &pulumirpc.TransformResourceOptions{IgnoreChanges: []string{"y"}}}
	payload := append(mustMarshal(t, first), mustMarshal(t, second)...)
	var merged pulumirpc.TransformRequest
	require.NoError(t, proto.Unmarshal(payload, &merged))
	require.Len(t, merged.GetProperties().GetFields(), 3, "the runtime merges the properties")

	for _, read := range []bool{false, true} {
		reg, err := callbacks.NewRegistry()
		require.NoError(t, err)
		tok, err := reg.Register(transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if read {
				a.Properties()
			}
			return a.Result(), nil
		}))
		require.NoError(t, err)
		out, err := reg.Invoke(context.Background(), tok, payload)
		require.NoError(t, err, "read=%v", read)
		var res pulumirpc.TransformResponse
		require.NoError(t, proto.Unmarshal(out, &res))
		wiretest.RequireProtoEqual(t, merged.GetProperties(), res.GetProperties())
		wiretest.RequireProtoEqual(t, merged.GetOptions(), res.GetOptions())
	}

	args, err := transforms.DecodeRequest(&merged)
	require.NoError(t, err)
	assert.Len(t, args.Properties(), 3)
	assert.Equal(t, []string{"x", "y"}, args.Options.IgnoreChanges)
}

// A refused encoding says so once, in this module's words: no protobuf
// prefix inside the module's own.
func TestRefusedEncodingMessage(t *testing.T) {
	t.Parallel()
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	tok, err := reg.Register(transforms.Adapt(func(context.Context, *transforms.Args) (*transforms.Result, error) { return nil, nil }),
		callbacks.Name("tag"))
	require.NoError(t, err)
	for name, payload := range map[string][]byte{
		"truncated field":   {0x0a, 0x05, 'a'},
		"options garbage":   {0x32, 0x02, 0xff, 0xff},
		"bad UTF-8 in type": {0x0a, 0x01, 0xff},
	} {
		_, err := reg.Invoke(context.Background(), tok, payload)
		require.ErrorIs(t, err, callbacks.ErrInvalidRequest, name)
		msg := err.Error()
		assert.Equal(t, 1, strings.Count(msg, "does not decode"), "%s: %q", name, msg)
		assert.NotContains(t, msg, "proto:", "%s: %q", name, msg)
		assert.True(t, strings.HasPrefix(msg, `callbacks: resource transform "tag"`), "%s: %q", name, msg)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}
