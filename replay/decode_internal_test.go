package replay

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/archive"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
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

// TestPropertiesDecodeAsTheSDK holds the decoder of recorded payloads to
// the SDK's plugin.UnmarshalProperties with secrets, unknowns, resource
// references and output values kept: the same property map, or a refusal
// where the SDK refuses.
func TestPropertiesDecodeAsTheSDK(t *testing.T) {
	t.Parallel()
	secret := func(v any) map[string]any { return map[string]any{sig.Key: sig.Secret, "value": v} }
	text := map[string]any{sig.Key: asset.AssetSig, "hash": "abc", "text": "hello"}
	payloads := map[string]map[string]any{
		"plain":   {"s": "x", "n": 1.5, "b": true, "null": nil, "list": []any{"a", 2.0, []any{}}, "obj": map[string]any{"k": "v"}, "__internal": "i"},
		"secrets": {"pw": secret("hunter2"), "list": []any{secret(map[string]any{"k": secret(1.0)})}},
		"unknowns": {
			"s": plugin.UnknownStringValue, "b": plugin.UnknownBoolValue, "n": plugin.UnknownNumberValue,
			"l": plugin.UnknownArrayValue, "o": plugin.UnknownObjectValue, "asset": plugin.UnknownAssetValue,
			"archive": plugin.UnknownArchiveValue, "nested": []any{map[string]any{"x": plugin.UnknownStringValue}},
		},
		"outputs": {
			"known":   map[string]any{sig.Key: sig.OutputValue, "value": "v", "secret": true, "dependencies": []any{"urn:pulumi:dev::p::t:m:T::d"}},
			"unknown": map[string]any{sig.Key: sig.OutputValue, "dependencies": []any{}},
		},
		"assets": {
			"text":    text,
			"archive": map[string]any{sig.Key: archive.ArchiveSig, "hash": "def", "assets": map[string]any{"a.txt": text}},
		},
		"references": {
			"known":   map[string]any{sig.Key: sig.ResourceReference, "urn": "urn:pulumi:dev::p::t:m:T::r", "id": "i-1", "packageVersion": "1.2.3"},
			"unknown": map[string]any{sig.Key: sig.ResourceReference, "urn": "urn:pulumi:dev::p::t:m:T::r", "id": plugin.UnknownStringValue},
			"noID":    map[string]any{sig.Key: sig.ResourceReference, "urn": "urn:pulumi:dev::p::t:m:T::r"},
		},
		"bytes":                 {"b": map[string]any{sig.Key: sig.ByteString, "value": "AAH/"}},
		"refused: secret":       {"pw": map[string]any{sig.Key: sig.Secret}},
		"refused: signature":    {"x": map[string]any{sig.Key: "no such signature"}},
		"refused: output":       {"x": map[string]any{sig.Key: sig.OutputValue, "secret": "yes"}},
		"refused: bytes":        {"b": map[string]any{sig.Key: sig.ByteString, "value": "not base64!"}},
		"refused: reference":    {"r": map[string]any{sig.Key: sig.ResourceReference}},
		"refused: deep":         {"a": deepStruct(t, 30, map[string]any{sig.Key: sig.Secret}).AsMap()},
		"numeric signature key": {"x": map[string]any{sig.Key: 1.0, "value": "v"}},
	}
	for _, depth := range []int{1, 10, 250} {
		payloads[fmt.Sprintf("deep %d", depth)] = deepStruct(t, depth, secret([]any{plugin.UnknownStringValue, "leaf"})).AsMap()
	}
	opts := plugin.MarshalOptions{KeepSecrets: true, KeepUnknowns: true, KeepResources: true, KeepOutputValues: true}
	for name, p := range payloads {
		s, err := structpb.NewStruct(p)
		require.NoError(t, err, name)
		want, wantErr := plugin.UnmarshalProperties(s, opts)
		got, ok := properties(s)
		if wantErr != nil {
			assert.False(t, ok, "%s: the SDK refuses it (%v), the decoder does not", name, wantErr)
			continue
		}
		if assert.True(t, ok, "%s: the decoder refuses what the SDK decodes", name) {
			assert.Equal(t, want, got, name)
			assert.True(t, want.DeepEquals(got), name)
		}
	}
	got, ok := properties(nil)
	assert.True(t, ok)
	assert.Equal(t, resource.PropertyMap{}, got)
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
