package replay

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
)

func mustStruct(t *testing.T, m resource.PropertyMap) *structpb.Struct {
	t.Helper()
	s, err := plugin.MarshalProperties(m, plugin.MarshalOptions{KeepSecrets: true, KeepUnknowns: true, KeepOutputValues: true, KeepResources: true})
	require.NoError(t, err)
	return s
}

func transformCall(t *testing.T, in, out resource.PropertyMap, inOpts, outOpts *pulumirpc.TransformResourceOptions) *Call {
	t.Helper()
	req, err := proto.Marshal(&pulumirpc.TransformRequest{Type: "t:m:T", Name: "n", Properties: mustStruct(t, in), Options: inOpts})
	require.NoError(t, err)
	res, err := proto.Marshal(&pulumirpc.TransformResponse{Properties: mustStruct(t, out), Options: outOpts})
	require.NoError(t, err)
	return &Call{Kind: callbacks.KindResourceTransform, Request: req, Response: res}
}

// TestChangesByPath: what a transform changed, property by property, with
// secrets hidden or shown.
func TestChangesByPath(t *testing.T) {
	t.Parallel()
	pv := func(v any) resource.PropertyValue { return resource.NewPropertyValue(v) }
	in := resource.PropertyMap{
		"tags":     pv(resource.PropertyMap{"team": pv("a"), "env": pv("dev")}),
		"list":     pv([]resource.PropertyValue{pv(1.0), pv(2.0)}),
		"password": resource.MakeSecret(pv("old-pw")),
		"token":    pv("plain"),
		"same":     resource.NewProperty(resource.Output{Element: pv("s"), Known: true, Secret: true}),
		"a.b":      pv(true),
	}
	out := resource.PropertyMap{
		"tags":     pv(resource.PropertyMap{"team": pv("b"), "env": pv("dev"), "owner": pv("me")}),
		"list":     pv([]resource.PropertyValue{pv(1.0)}),
		"password": resource.MakeSecret(pv("new-pw")),
		"token":    resource.MakeSecret(pv("plain")),
		"same":     resource.MakeSecret(pv("s")),
		"a.b":      resource.MakeComputed(pv("")),
	}
	protect := true
	c := transformCall(t, in, out, &pulumirpc.TransformResourceOptions{Protect: new(bool)}, &pulumirpc.TransformResourceOptions{Protect: &protect, IgnoreChanges: []string{"tags"}})
	assert.Equal(t, []Change{
		{Path: `properties["a.b"]`, Old: "true", New: "[unknown]"},
		{Path: "properties.list[1]", Old: "2"},
		{Path: "properties.password", Old: "[secret]", New: "[another secret]"},
		{Path: "properties.tags.owner", New: `"me"`},
		{Path: "properties.tags.team", Old: `"a"`, New: `"b"`},
		{Path: "properties.token", Old: `"plain"`, New: "[secret]"},
		{Path: "options.ignoreChanges", New: `["tags"]`},
		{Path: "options.protect", New: "true"},
	}, c.Changes(HideSecrets))
	shown := c.Changes(ShowSecrets)
	assert.Contains(t, shown, Change{Path: "properties.password", Old: `"old-pw"`, New: `"new-pw"`})
	assert.Contains(t, shown, Change{Path: "properties.token", Old: `"plain"`, New: `secret("plain")`})
	word, _ := c.Outcome()
	assert.Equal(t, OutcomeChanged, word)

	same := transformCall(t, in, in, nil, nil)
	assert.Empty(t, same.Changes(ShowSecrets))
	word, _ = same.Outcome()
	assert.Equal(t, OutcomeUnchanged, word)

	// A response that leaves properties and options out keeps the request's.
	req, _ := proto.Marshal(&pulumirpc.TransformRequest{Properties: mustStruct(t, in)})
	kept := &Call{Kind: callbacks.KindResourceTransform, Request: req, Response: []byte{}}
	assert.Empty(t, kept.Changes(HideSecrets))

	failed := &Call{Kind: callbacks.KindResourceTransform, Request: req, Err: "boom"}
	word, msg := failed.Outcome()
	assert.Equal(t, []string{"failed", "boom"}, []string{string(word), msg})
	assert.Empty(t, failed.Changes(HideSecrets))
}

// TestDiffResponses compares a recorded answer with a current one, the way
// a replay does.
func TestDiffResponses(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []Change{{Path: "retry", Old: "true", New: "false"}},
		diffResponses(&pulumirpc.ErrorHookRequest{}, &pulumirpc.ErrorHookResponse{Retry: true}, &pulumirpc.ErrorHookResponse{}, false))
	assert.Equal(t, []Change{{Path: "error", Old: `"frozen"`}},
		diffResponses(&pulumirpc.ResourceHookRequest{}, &pulumirpc.ResourceHookResponse{Error: "frozen"}, &pulumirpc.ResourceHookResponse{}, false))
	old := `[{"urn":"urn:pulumi:s::p::t:m:T::a","type":"t:m:T","outputs":{"x":1,"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"a\""}}}]`
	now := `[{"urn":"urn:pulumi:s::p::t:m:T::a","type":"t:m:T","outputs":{"x":2,"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"b\""}}},{"urn":"urn:pulumi:s::p::t:m:T::b","type":"t:m:T"}]`
	assert.Equal(t, []Change{
		{Path: "state[0].outputs.pw", Old: "[secret]", New: "[another secret]"},
		{Path: "state[0].outputs.x", Old: "1", New: "2"},
		{Path: "state[1]", New: `{"type":"t:m:T","urn":"urn:pulumi:s::p::t:m:T::b"}`},
		{Path: "successors[urn:pulumi:s::p::t:m:T::c]", New: `"urn:pulumi:s::p::t:m:T::b"`},
	}, diffResponses(&pulumirpc.StateMigrationRequest{OldState: []byte(old)},
		&pulumirpc.StateMigrationResponse{}, &pulumirpc.StateMigrationResponse{NewState: []byte(now), Successors: map[string]string{"urn:pulumi:s::p::t:m:T::c": "urn:pulumi:s::p::t:m:T::b"}}, false))
}
