package hooks_test

import (
	"github.com/langhost/callbacks/transforms"
	"testing"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestFullOptionsSetsEveryField guards the other option tests: if the
// protocol gains a field, fullOptions must set it, or this fails.
func TestFullOptionsSetsEveryField(t *testing.T) {
	t.Parallel()
	m := fullOptions().ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		assert.True(t, m.Has(fd), "fullOptions does not set %s", fd.Name())
	}
}

// TestOptionsEachFieldAlone converts options holding one field at a time and
// back, and requires the identical message: no field is dropped, invented
// or confused with another.
func TestOptionsEachFieldAlone(t *testing.T) {
	t.Parallel()
	full := fullOptions().ProtoReflect()
	fields := full.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		t.Run(string(fd.Name()), func(t *testing.T) {
			t.Parallel()
			one := (&pulumirpc.ResourceOptions{}).ProtoReflect()
			one.Set(fd, full.Get(fd))
			in := one.Interface().(*pulumirpc.ResourceOptions)

			opts, err := hooks.OptionsFromProto(in)
			require.NoError(t, err)
			require.NotNil(t, opts)
			out, err := hooks.OptionsToProto(opts)
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, in, out)
		})
	}
}

// TestOptionsFieldByField checks the Go value of every field.
func TestOptionsFieldByField(t *testing.T) {
	t.Parallel()
	o, err := hooks.OptionsFromProto(fullOptions())
	require.NoError(t, err)

	assert.Equal(t, resource.URN(urnComp), o.Parent)
	assert.Equal(t, []resource.URN{urnRole, urnComp}, o.DependsOn)
	assert.Equal(t, ptr(true), o.Protect)
	assert.Equal(t, ptr(false), o.RetainOnDelete, "an explicit false must stay distinct from unset")
	assert.Equal(t, ptr(true), o.DeleteBeforeReplace)
	assert.Equal(t, []string{"tags", "rules[0].cidr"}, o.IgnoreChanges)
	assert.Equal(t, []string{"name"}, o.ReplaceOnChanges)
	assert.Equal(t, []string{"policy"}, o.HideDiff)
	assert.Equal(t, []string{"arn"}, o.AdditionalSecretOutputs)
	require.Len(t, o.Aliases, 4)
	assert.Equal(t, resource.URN("urn:pulumi:dev::proj::aws:s3/bucket:Bucket::old-logs"), o.Aliases[0].URN)
	assert.Nil(t, o.Aliases[0].Spec)
	require.NotNil(t, o.Aliases[1].Spec)
	assert.Equal(t, "older", o.Aliases[1].Spec.Name)
	assert.Equal(t, "aws:s3/bucketV1:Bucket", o.Aliases[1].Spec.Type)
	assert.Equal(t, "prod", o.Aliases[1].Spec.Stack)
	assert.Equal(t, "legacy", o.Aliases[1].Spec.Project)
	assert.Equal(t, resource.URN(urnComp), o.Aliases[1].Spec.ParentURN)
	assert.False(t, o.Aliases[1].Spec.NoParent)
	assert.True(t, o.Aliases[2].Spec.NoParent)
	assert.Equal(t, "renamed", o.Aliases[3].Spec.Project)
	assert.Equal(t, urnProv+"::0c0ffee", o.Provider)
	assert.Equal(t, map[string]string{"aws": urnProv + "::0c0ffee", "gcp": "urn:pulumi:dev::proj::pulumi:providers:gcp::g::1"}, o.Providers)
	assert.Equal(t, "6.1.0", o.Version)
	assert.Equal(t, "https://example.com/plugins", o.PluginDownloadURL)
	assert.Equal(t, map[string][]byte{"linux-amd64": {0xde, 0xad, 0xbe, 0xef}, "darwin-arm64": {0x00}}, o.PluginChecksums)
	require.NotNil(t, o.CustomTimeouts)
	assert.Equal(t, transforms.CustomTimeouts{Create: "1m", Update: "2m", Delete: "3m", Read: "4m"}, *o.CustomTimeouts)
	assert.Equal(t, resource.URN(urnRole), o.DeletedWith)
	assert.Equal(t, []resource.URN{urnRole}, o.ReplaceWith)
	assert.Equal(t, resource.ID("bucket-1234"), o.Import)
	require.NotNil(t, o.Hooks)
	assert.Equal(t, map[string][]string{
		"BeforeCreate": {"bc1", "bc2"}, "AfterCreate": {"ac"},
		"BeforeUpdate": {"bu"}, "AfterUpdate": {"au"},
		"BeforeDelete": {"bd"}, "AfterDelete": {"ad"},
		"OnError": {"retry"},
	}, hooks.BindingNames(o.Hooks))
	require.NotNil(t, o.ReplacementTrigger)
	require.True(t, o.ReplacementTrigger.IsSecret())
	inner := o.ReplacementTrigger.SecretValue().Element.ObjectValue()
	assert.Equal(t, 3.0, inner["rev"].NumberValue())
	assert.True(t, inner["when"].IsComputed())

	back, err := hooks.OptionsToProto(o)
	require.NoError(t, err)
	wiretest.RequireProtoEqual(t, fullOptions(), back)
}

// TestOptionsOddEncodings covers encodings that carry no meaning for the
// engine: the hook reads each as the message without them (read), and
// every other message exactly as sent.
func TestOptionsOddEncodings(t *testing.T) {
	t.Parallel()
	spec := func(s *pulumirpc.Alias_Spec) *pulumirpc.Alias {
		return &pulumirpc.Alias{Alias: &pulumirpc.Alias_Spec_{Spec: s}}
	}
	aliases := func(a ...*pulumirpc.Alias) *pulumirpc.ResourceOptions { return &pulumirpc.ResourceOptions{Aliases: a} }
	tests := []struct {
		name string
		in   *pulumirpc.ResourceOptions
		read *pulumirpc.ResourceOptions // nil: in itself
	}{
		{"empty", &pulumirpc.ResourceOptions{}, nil},
		{"alias-with-nothing-set", aliases(&pulumirpc.Alias{}), aliases(&pulumirpc.Alias{Alias: &pulumirpc.Alias_Urn{}})},
		{"alias-with-empty-urn", aliases(&pulumirpc.Alias{Alias: &pulumirpc.Alias_Urn{}}), nil},
		{"alias-spec-empty", aliases(spec(&pulumirpc.Alias_Spec{})), nil},
		{"alias-spec-empty-parent-urn", aliases(spec(&pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_ParentUrn{}})), aliases(spec(&pulumirpc.Alias_Spec{}))},
		{"alias-spec-no-parent-false", aliases(spec(&pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_NoParent{}})), aliases(spec(&pulumirpc.Alias_Spec{}))},
		{"empty-custom-timeouts", &pulumirpc.ResourceOptions{CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{}}, nil},
		{"empty-hooks", &pulumirpc.ResourceOptions{Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}}, nil},
		{"null-replacement-trigger", &pulumirpc.ResourceOptions{ReplacementTrigger: structpbNull()}, nil},
		{"empty-checksum", &pulumirpc.ResourceOptions{PluginChecksums: map[string][]byte{"x": {}}}, nil},
		{"unknown-fields", func() *pulumirpc.ResourceOptions {
			o := &pulumirpc.ResourceOptions{Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}}
			o.ProtoReflect().SetUnknown(protoreflect.RawFields(unknownField(77, 1)))
			o.GetHooks().ProtoReflect().SetUnknown(protoreflect.RawFields(unknownField(78, 2)))
			return o
		}(), &pulumirpc.ResourceOptions{Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := hooks.OptionsFromProto(tt.in)
			require.NoError(t, err)
			out, err := hooks.OptionsToProto(o)
			require.NoError(t, err)
			want := tt.in
			if tt.read != nil {
				want = tt.read
			}
			wiretest.RequireProtoEqual(t, want, out)
		})
	}
}

func TestOptionsNil(t *testing.T) {
	t.Parallel()
	o, err := hooks.OptionsFromProto(nil)
	require.NoError(t, err)
	assert.Nil(t, o, "an engine without SENDS_OPTIONS_TO_HOOKS sends none; that must stay nil")
}
