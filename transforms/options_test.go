package transforms_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

type (
	opts    = pulumirpc.TransformResourceOptions
	alias   = pulumirpc.Alias
	spec    = pulumirpc.Alias_Spec
	hooks   = pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	timeout = pulumirpc.RegisterResourceRequest_CustomTimeouts
)

func urnAlias(u string) *alias { return &alias{Alias: &pulumirpc.Alias_Urn{Urn: u}} }

func specAlias(s *spec) *alias { return &alias{Alias: &pulumirpc.Alias_Spec_{Spec: s}} }

// unknownField encodes a field this version of the protocol does not have,
// as a newer engine could send it.
func unknownField(num protowire.Number, s string) protoreflect.RawFields {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func withUnknown[M proto.Message](m M, raw protoreflect.RawFields) M {
	m.ProtoReflect().SetUnknown(raw)
	return m
}

// optionRows has one row per field of TransformResourceOptions (and of the
// messages nested in it), each set to a value that is not the default, plus
// the edge cases where presence matters.
func optionRows() []struct {
	name string
	opts *opts
} {
	return []struct {
		name string
		opts *opts
	}{
		{"depends_on", &opts{DependsOn: []string{parentURN, stackURN}}},
		{"protect/true", &opts{Protect: proto.Bool(true)}},
		{"protect/false", &opts{Protect: proto.Bool(false)}},
		{"ignore_changes", &opts{IgnoreChanges: []string{"tags", "spec.replicas"}}},
		{"replace_on_changes", &opts{ReplaceOnChanges: []string{"*"}}},
		{"version", &opts{Version: "1.2.3"}},
		{"aliases/urn", &opts{Aliases: []*alias{urnAlias(parentURN + "-old")}}},
		{"aliases/urn/empty", &opts{Aliases: []*alias{urnAlias("")}}},
		{"aliases/none-set", &opts{Aliases: []*alias{{}}}},
		{"aliases/spec/parent-urn", &opts{Aliases: []*alias{specAlias(&spec{
			Name: "old", Type: "my:mod:Old", Stack: "prod", Project: "other",
			Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: parentURN},
		})}}},
		{"aliases/spec/no-parent", &opts{Aliases: []*alias{specAlias(&spec{
			Name: "old", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true},
		})}}},
		{"aliases/spec/no-parent-false", &opts{Aliases: []*alias{specAlias(&spec{
			Name: "old", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: false},
		})}}},
		{"aliases/spec/parent-urn-empty", &opts{Aliases: []*alias{specAlias(&spec{
			Type: "my:mod:Old", Parent: &pulumirpc.Alias_Spec_ParentUrn{},
		})}}},
		{"aliases/spec/parent-unset", &opts{Aliases: []*alias{specAlias(&spec{Project: "p"})}}},
		{"aliases/mixed", &opts{Aliases: []*alias{
			urnAlias("urn:pulumi:dev::proj::t::a"), specAlias(&spec{Name: "b"}), urnAlias("urn:pulumi:dev::proj::t::c"),
		}}},
		{"provider", &opts{Provider: "urn:pulumi:dev::proj::pulumi:providers:aws::p::0a1b"}},
		{"custom_timeouts/all", &opts{CustomTimeouts: &timeout{Create: "16m40s", Update: "1h", Delete: "5m", Read: "30s"}}},
		{"custom_timeouts/create", &opts{CustomTimeouts: &timeout{Create: "1m"}}},
		{"custom_timeouts/update", &opts{CustomTimeouts: &timeout{Update: "2m"}}},
		{"custom_timeouts/delete", &opts{CustomTimeouts: &timeout{Delete: "3m"}}},
		{"custom_timeouts/read", &opts{CustomTimeouts: &timeout{Read: "4m"}}},
		{"custom_timeouts/empty", &opts{CustomTimeouts: &timeout{}}},
		{"plugin_download_url", &opts{PluginDownloadUrl: "https://example.com/plugins"}},
		{"retain_on_delete/true", &opts{RetainOnDelete: proto.Bool(true)}},
		{"retain_on_delete/false", &opts{RetainOnDelete: proto.Bool(false)}},
		{"deleted_with", &opts{DeletedWith: parentURN}},
		{"delete_before_replace/true", &opts{DeleteBeforeReplace: proto.Bool(true)}},
		{"delete_before_replace/false", &opts{DeleteBeforeReplace: proto.Bool(false)}},
		{"additional_secret_outputs", &opts{AdditionalSecretOutputs: []string{"password", "key"}}},
		{"providers", &opts{Providers: map[string]string{"aws": "urn:pulumi:dev::proj::pulumi:providers:aws::p::id", "k8s": "x::y"}}},
		{"plugin_checksums", &opts{PluginChecksums: map[string][]byte{"linux-amd64": {0xde, 0xad, 0xbe, 0xef}, "darwin-arm64": {0, 1, 0xff}}}},
		{"hooks/all", &opts{Hooks: &hooks{
			BeforeCreate: []string{"bc"}, AfterCreate: []string{"ac1", "ac2"}, BeforeUpdate: []string{"bu"},
			AfterUpdate: []string{"au"}, BeforeDelete: []string{"bd"}, AfterDelete: []string{"ad"}, OnError: []string{"oe"},
		}}},
		{"hooks/before_create", &opts{Hooks: &hooks{BeforeCreate: []string{"h"}}}},
		{"hooks/after_create", &opts{Hooks: &hooks{AfterCreate: []string{"h"}}}},
		{"hooks/before_update", &opts{Hooks: &hooks{BeforeUpdate: []string{"h"}}}},
		{"hooks/after_update", &opts{Hooks: &hooks{AfterUpdate: []string{"h"}}}},
		{"hooks/before_delete", &opts{Hooks: &hooks{BeforeDelete: []string{"h"}}}},
		{"hooks/after_delete", &opts{Hooks: &hooks{AfterDelete: []string{"h"}}}},
		{"hooks/on_error", &opts{Hooks: &hooks{OnError: []string{"h"}}}},
		{"hooks/empty", &opts{Hooks: &hooks{}}},
		{"import", &opts{Import: "bucket-1234"}},
		{"hide_diff", &opts{HideDiff: []string{"data", "spec.template"}}},
		{"replace_with", &opts{ReplaceWith: []string{parentURN, stackURN}}},
		{"replacement_trigger/string", &opts{ReplacementTrigger: wiretest.Str("v2")}},
		{"replacement_trigger/number", &opts{ReplacementTrigger: structpb.NewNumberValue(42.5)}},
		{"replacement_trigger/null", &opts{ReplacementTrigger: structpb.NewNullValue()}},
		{"replacement_trigger/object", &opts{ReplacementTrigger: wiretest.Object("a", wiretest.List(wiretest.Str("x"), structpb.NewBoolValue(true)))}},
		{"replacement_trigger/secret", &opts{ReplacementTrigger: wiretest.Output(wiretest.Str("s3cr3t"), true)}},
		{"replacement_trigger/unknown", &opts{ReplacementTrigger: wiretest.Output(nil, false, parentURN)}},
		{"replacement_trigger/secret-envelope", &opts{ReplacementTrigger: wiretest.Sig(resource.SecretSig, map[string]*structpb.Value{"value": wiretest.Str("x")})}},
		{"unknown-fields/options", withUnknown(&opts{}, unknownField(1000, "future"))},
		{"unknown-fields/custom_timeouts", &opts{CustomTimeouts: withUnknown(&timeout{Create: "1m"}, unknownField(50, "t"))}},
		{"unknown-fields/hooks", &opts{Hooks: withUnknown(&hooks{OnError: []string{"h"}}, unknownField(51, "h"))}},
		{"unknown-fields/alias", &opts{Aliases: []*alias{withUnknown(urnAlias(parentURN), unknownField(52, "a"))}}},
		{"unknown-fields/alias-spec", &opts{Aliases: []*alias{specAlias(withUnknown(&spec{Name: "n"}, unknownField(53, "s")))}}},
	}
}

// fullOptions sets every field of TransformResourceOptions at once.
func fullOptions() *opts {
	return withUnknown(&opts{
		DependsOn:        []string{parentURN},
		Protect:          proto.Bool(false),
		IgnoreChanges:    []string{"tags"},
		ReplaceOnChanges: []string{"name"},
		Version:          "4.5.6",
		Aliases: []*alias{
			urnAlias(parentURN + "-old"),
			specAlias(&spec{Name: "n", Type: "t:t:T", Stack: "s", Project: "p", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true}}),
			specAlias(&spec{Name: "m", Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: stackURN}}),
		},
		Provider:                "urn:pulumi:dev::proj::pulumi:providers:aws::default::abc",
		CustomTimeouts:          &timeout{Create: "16m40s", Update: "1m", Delete: "2m", Read: "3m"},
		PluginDownloadUrl:       "github://api.github.com/org",
		RetainOnDelete:          proto.Bool(true),
		DeletedWith:             stackURN,
		DeleteBeforeReplace:     proto.Bool(true),
		AdditionalSecretOutputs: []string{"out"},
		Providers:               map[string]string{"aws": "ref-a", "gcp": "ref-g"},
		PluginChecksums:         map[string][]byte{"linux-amd64": {1, 2, 3}},
		Hooks: &hooks{
			BeforeCreate: []string{"bc"}, AfterCreate: []string{"ac"}, BeforeUpdate: []string{"bu"},
			AfterUpdate: []string{"au"}, BeforeDelete: []string{"bd"}, AfterDelete: []string{"ad"}, OnError: []string{"oe"},
		},
		Import:             "id-1",
		HideDiff:           []string{"secretData"},
		ReplaceWith:        []string{parentURN},
		ReplacementTrigger: wiretest.Output(wiretest.Str("t"), true, parentURN),
	}, unknownField(999, "from a newer engine"))
}

func request(o *opts) *pulumirpc.TransformRequest {
	return &pulumirpc.TransformRequest{
		Type: "aws:s3/bucket:Bucket", Name: "b", Custom: true, Parent: parentURN,
		Properties: wiretest.Struct("acl", wiretest.Str("private")),
		Options:    o,
	}
}

// TestOptionsCoverEveryField fails when a field of an option message is set
// by no row, so a field added to the protocol cannot go untested.
func TestOptionsCoverEveryField(t *testing.T) {
	t.Parallel()
	seen := map[protoreflect.FullName]bool{}
	for _, row := range optionRows() {
		markSet(row.opts.ProtoReflect(), seen)
	}
	markSet(fullOptions().ProtoReflect(), seen)
	for _, m := range []proto.Message{&opts{}, &alias{}, &spec{}, &hooks{}, &timeout{}} {
		fields := m.ProtoReflect().Descriptor().Fields()
		for i := range fields.Len() {
			assert.Truef(t, seen[fields.Get(i).FullName()], "no row sets %s", fields.Get(i).FullName())
		}
	}
	assert.Equal(t, 20, (&opts{}).ProtoReflect().Descriptor().Fields().Len(),
		"TransformResourceOptions changed: update ResourceOptions and these rows")
}

func markSet(m protoreflect.Message, seen map[protoreflect.FullName]bool) {
	if m.Descriptor().ParentFile().Package() != "pulumirpc" {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		seen[fd.FullName()] = true
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				markSet(v.List().Get(i).Message(), seen)
			}
		case fd.Message() != nil && !fd.IsMap():
			markSet(v.Message(), seen)
		}
		return true
	})
}

// TestIdentityRoundTripEveryOption sends each option through the real
// server to a transform that returns what it got, and requires the response
// to be proto-equal to the request.
func TestIdentityRoundTripEveryOption(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	cb, err := srv.Register(context.Background(), transforms.Adapt(identity))
	require.NoError(t, err)

	rows := optionRows()
	rows = append(rows, struct {
		name string
		opts *opts
	}{"fully-populated", fullOptions()})
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			require.False(t, proto.Equal(row.opts, &opts{}) && len(row.opts.ProtoReflect().GetUnknown()) == 0,
				"row sets nothing")
			req := request(row.opts)
			res, err := wiretest.Transform(t, client, cb, req)
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, req.GetOptions(), res.GetOptions())
			wiretest.RequireProtoEqual(t, req.GetProperties(), res.GetProperties())
		})
	}
}

// TestOptionsDecode checks the Go view of options where presence matters.
func TestOptionsDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opts  *opts
		check func(t *testing.T, o *transforms.ResourceOptions)
	}{
		{"protect unset", &opts{}, func(t *testing.T, o *transforms.ResourceOptions) {
			assert.Nil(t, o.Protect)
			assert.Nil(t, o.RetainOnDelete)
			assert.Nil(t, o.DeleteBeforeReplace)
			assert.Nil(t, o.ReplacementTrigger)
			assert.Nil(t, o.CustomTimeouts)
			assert.Nil(t, o.Hooks)
		}},
		{"protect false", &opts{Protect: proto.Bool(false)}, func(t *testing.T, o *transforms.ResourceOptions) {
			require.NotNil(t, o.Protect)
			assert.False(t, *o.Protect)
		}},
		{"urns", &opts{DependsOn: []string{parentURN}, DeletedWith: stackURN, ReplaceWith: []string{stackURN}, Import: "i"},
			func(t *testing.T, o *transforms.ResourceOptions) {
				assert.Equal(t, []resource.URN{parentURN}, o.DependsOn)
				assert.Equal(t, resource.URN(stackURN), o.DeletedWith)
				assert.Equal(t, []resource.URN{stackURN}, o.ReplaceWith)
				assert.Equal(t, resource.ID("i"), o.Import)
			}},
		{"aliases", fullOptions(), func(t *testing.T, o *transforms.ResourceOptions) {
			require.Len(t, o.Aliases, 3)
			assert.Equal(t, resource.URN(parentURN+"-old"), o.Aliases[0].URN)
			assert.Nil(t, o.Aliases[0].Spec)
			require.NotNil(t, o.Aliases[1].Spec)
			assert.True(t, o.Aliases[1].Spec.NoParent)
			assert.Equal(t, "n", o.Aliases[1].Spec.Name)
			assert.Equal(t, resource.URN(stackURN), o.Aliases[2].Spec.ParentURN)
		}},
		{"aliases equal hand-built ones", &opts{Aliases: []*alias{
			urnAlias(parentURN),
			specAlias(&spec{Name: "n", Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: stackURN}}),
			specAlias(&spec{Name: "m", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true}}),
			specAlias(&spec{Name: "k"}),
		}}, func(t *testing.T, o *transforms.ResourceOptions) {
			assert.Equal(t, []transforms.Alias{
				{URN: parentURN},
				{Spec: &transforms.AliasSpec{Name: "n", ParentURN: stackURN}},
				{Spec: &transforms.AliasSpec{Name: "m", NoParent: true}},
				{Spec: &transforms.AliasSpec{Name: "k"}},
			}, o.Aliases)
		}},
		{"secret trigger", fullOptions(), func(t *testing.T, o *transforms.ResourceOptions) {
			require.NotNil(t, o.ReplacementTrigger)
			require.True(t, o.ReplacementTrigger.IsOutput())
			out := o.ReplacementTrigger.OutputValue()
			assert.True(t, out.Secret)
			assert.Equal(t, "t", out.Element.StringValue())
			assert.Equal(t, []resource.URN{parentURN}, out.Dependencies)
		}},
		{"null trigger", &opts{ReplacementTrigger: structpb.NewNullValue()}, func(t *testing.T, o *transforms.ResourceOptions) {
			require.NotNil(t, o.ReplacementTrigger)
			assert.True(t, o.ReplacementTrigger.IsNull())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := transforms.OptionsFromProto(tt.opts)
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}

// TestChangeOneOptionKeepsOthers changes one option of a fully populated set
// and requires the response to differ from the request in that field only.
func TestChangeOneOptionKeepsOthers(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	tests := []struct {
		name string
		edit func(*transforms.ResourceOptions)
		want func(*opts)
	}{
		{"protect", func(o *transforms.ResourceOptions) { o.Protect = new(true) },
			func(o *opts) { o.Protect = proto.Bool(true) }},
		{"unset protect", func(o *transforms.ResourceOptions) { o.Protect = nil },
			func(o *opts) { o.Protect = nil }},
		{"ignore changes", func(o *transforms.ResourceOptions) { o.IgnoreChanges = append(o.IgnoreChanges, "labels") },
			func(o *opts) { o.IgnoreChanges = append(o.IgnoreChanges, "labels") }},
		{"provider", func(o *transforms.ResourceOptions) { o.Provider = "other::ref" },
			func(o *opts) { o.Provider = "other::ref" }},
		{"add hook", func(o *transforms.ResourceOptions) {
			o.Hooks.BeforeCreate = append(o.Hooks.BeforeCreate, transforms.HookName("new"))
		},
			func(o *opts) { o.Hooks.BeforeCreate = append(o.Hooks.BeforeCreate, "new") }},
		{"add alias", func(o *transforms.ResourceOptions) {
			o.Aliases = append(o.Aliases, transforms.Alias{Spec: &transforms.AliasSpec{Name: "older", ParentURN: stackURN}})
		}, func(o *opts) {
			o.Aliases = append(o.Aliases, specAlias(&spec{Name: "older", Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: stackURN}}))
		}},
		{"trigger", func(o *transforms.ResourceOptions) { o.ReplacementTrigger = new(resource.NewProperty("v3")) },
			func(o *opts) { o.ReplacementTrigger = wiretest.Str("v3") }},
		{"delete before replace", func(o *transforms.ResourceOptions) { o.DeleteBeforeReplace = nil },
			func(o *opts) { o.DeleteBeforeReplace = nil }},
		{"timeouts", func(o *transforms.ResourceOptions) { o.CustomTimeouts.Read = "9m" },
			func(o *opts) { o.CustomTimeouts.Read = "9m" }},
		{"checksums", func(o *transforms.ResourceOptions) { delete(o.PluginChecksums, "linux-amd64") },
			func(o *opts) { delete(o.PluginChecksums, "linux-amd64") }},
		{"import", func(o *transforms.ResourceOptions) { o.Import = "" }, func(o *opts) { o.Import = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
				return a.WithOptions(tt.edit), nil
			}))
			require.NoError(t, err)
			req := request(fullOptions())
			want := proto.CloneOf(req.GetOptions())
			tt.want(want)
			require.False(t, proto.Equal(want, req.GetOptions()), "the edit changes nothing")
			res, err := wiretest.Transform(t, client, cb, req)
			require.NoError(t, err)
			assert.Nil(t, res.GetProperties(), "properties must stay unset")
			wiretest.RequireProtoEqual(t, want, res.GetOptions())
		})
	}
}

// A nil ResourceOptions converts to a nil message.
func TestNilOptions(t *testing.T) {
	t.Parallel()
	var nilOpts *transforms.ResourceOptions
	pb, err := nilOpts.ToProto(true)
	require.NoError(t, err)
	assert.Nil(t, pb)
}

// TestOptionRowNamesUnique keeps subtest names unambiguous.
func TestOptionRowNamesUnique(t *testing.T) {
	t.Parallel()
	names := map[string]int{}
	for _, r := range optionRows() {
		names[r.name]++
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		assert.Equal(t, 1, names[n], fmt.Sprintf("row %q repeated", n))
	}
}
