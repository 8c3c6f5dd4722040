package hooks_test

import (
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

// Wire forms of Pulumi's special property values, written out by hand so
// that the tests do not depend on the code under test to produce them.
const (
	sigKey         = "4dabf18193072939515e22adb298388d"
	secretSig      = "1b47061264138c4ac30d75fd1eb44270"
	resourceRefSig = "5cf8f73096256a8f31e491e813e4eb8e"
	outputValueSig = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
	byteStringSig  = "803fd3297a5875dc03ca845dda5d2a98"
	assetSig       = "c44067f5952c0a294b673a41bacd8c17"
	archiveSig     = "0def7320c3a5731c473e5ecbe6d01bc7"
	unknownString  = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
)

const (
	urnBucket = "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs"
	urnRole   = "urn:pulumi:dev::proj::aws:iam/role:Role::writer"
	urnComp   = "urn:pulumi:dev::proj::my:index:Component::web"
	urnProv   = "urn:pulumi:dev::proj::pulumi:providers:aws::default"
)

func str(s string) *structpb.Value  { return structpb.NewStringValue(s) }
func num(n float64) *structpb.Value { return structpb.NewNumberValue(n) }
func boolean(b bool) *structpb.Value {
	return structpb.NewBoolValue(b)
}

func obj(fields map[string]*structpb.Value) *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: fields})
}

func list(vs ...*structpb.Value) *structpb.Value {
	return structpb.NewListValue(&structpb.ListValue{Values: vs})
}

func object(fields map[string]*structpb.Value) *structpb.Struct {
	return &structpb.Struct{Fields: fields}
}

func withSig(sig string, fields map[string]*structpb.Value) *structpb.Value {
	all := map[string]*structpb.Value{sigKey: str(sig)}
	for k, v := range fields {
		all[k] = v
	}
	return obj(all)
}

func secret(v *structpb.Value) *structpb.Value {
	return withSig(secretSig, map[string]*structpb.Value{"value": v})
}

func unknown() *structpb.Value { return str(unknownString) }

// ref is a resource reference as the engine sends it: with the name and type
// that the URN implies (decoders derive them when they are missing).
func ref(urn, id string) *structpb.Value {
	parts := strings.Split(urn, "::")
	qualified := strings.Split(parts[2], "$")
	f := map[string]*structpb.Value{
		"urn":  str(urn),
		"name": str(parts[3]),
		"type": str(qualified[len(qualified)-1]),
	}
	if id != "" {
		f["id"] = str(id)
	}
	return withSig(resourceRefSig, f)
}

// output is an output value; a nil v makes it unknown.
func output(v *structpb.Value, isSecret bool, deps ...string) *structpb.Value {
	f := map[string]*structpb.Value{}
	if v != nil {
		f["value"] = v
	}
	if isSecret {
		f["secret"] = boolean(true)
	}
	if len(deps) > 0 {
		ds := make([]*structpb.Value, len(deps))
		for i, d := range deps {
			ds[i] = str(d)
		}
		f["dependencies"] = list(ds...)
	}
	return withSig(outputValueSig, f)
}

func ptr[T any](v T) *T { return &v }

// unknownField is a field number no version of the protocol uses, standing
// for a field a newer engine adds.
func unknownField(n protowire.Number, v uint64) []byte {
	b := protowire.AppendTag(nil, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// fullOptions returns hook options with every field of the message set, to
// values that differ from their defaults.
func fullOptions() *pulumirpc.ResourceOptions {
	return &pulumirpc.ResourceOptions{
		DependsOn:        []string{urnRole, urnComp},
		Protect:          ptr(true),
		IgnoreChanges:    []string{"tags", "rules[0].cidr"},
		ReplaceOnChanges: []string{"name"},
		Version:          "6.1.0",
		Aliases: []*pulumirpc.Alias{
			{Alias: &pulumirpc.Alias_Urn{Urn: "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::old-logs"}},
			{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{
				Name: "older", Type: "aws:s3/bucketV1:Bucket", Stack: "prod", Project: "legacy",
				Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: urnComp},
			}}},
			{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{
				Name: "orphan", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true},
			}}},
			{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{Project: "renamed"}}},
		},
		Provider: urnProv + "::0c0ffee",
		CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{
			Create: "1m", Update: "2m", Delete: "3m", Read: "4m",
		},
		PluginDownloadUrl:       "https://example.com/plugins",
		RetainOnDelete:          ptr(false),
		DeletedWith:             urnRole,
		DeleteBeforeReplace:     ptr(true),
		AdditionalSecretOutputs: []string{"arn"},
		Providers:               map[string]string{"aws": urnProv + "::0c0ffee", "gcp": "urn:pulumi:dev::proj::pulumi:providers:gcp::g::1"},
		PluginChecksums:         map[string][]byte{"linux-amd64": {0xde, 0xad, 0xbe, 0xef}, "darwin-arm64": {0x00}},
		Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{
			BeforeCreate: []string{"bc1", "bc2"}, AfterCreate: []string{"ac"},
			BeforeUpdate: []string{"bu"}, AfterUpdate: []string{"au"},
			BeforeDelete: []string{"bd"}, AfterDelete: []string{"ad"},
			OnError: []string{"retry"},
		},
		Import:             "bucket-1234",
		HideDiff:           []string{"policy"},
		ReplaceWith:        []string{urnRole},
		ReplacementTrigger: secret(obj(map[string]*structpb.Value{"rev": num(3), "when": unknown()})),
		Parent:             urnComp,
	}
}

func structpbNull() *structpb.Value { return structpb.NewNullValue() }
