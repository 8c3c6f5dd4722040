package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The signatures of Pulumi's special property values, as the engine writes
// them. The kit spells them out itself rather than share a decoder with any
// server it checks.
const (
	sigKey         = "4dabf18193072939515e22adb298388d"
	sigSecret      = "1b47061264138c4ac30d75fd1eb44270"
	sigResourceRef = "5cf8f73096256a8f31e491e813e4eb8e"
	sigOutput      = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
	sigByteString  = "803fd3297a5875dc03ca845dda5d2a98"
	sigAsset       = "c44067f5952c0a294b673a41bacd8c17"
	sigArchive     = "0def7320c3a5731c473e5ecbe6d01bc7"
	unknownValue   = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
	invokeMethod   = "/pulumirpc.Callbacks/Invoke"
)

// The engine's message size limit, and the kit's, which is larger so that
// the kit can send the engine's largest payloads.
const maxMessage = 1 << 30

// rawCodec sends and receives messages that are already encoded, so that
// the kit can put on the wire what a generated encoder refuses (strings
// that are not UTF-8) and build large requests in one buffer.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*b = data
	return nil
}

func (rawCodec) Name() string { return "proto" }

// invokeRaw calls Callbacks.Invoke with token and the encoded request, and
// returns the encoded response carried in the CallbackInvokeResponse.
func invokeRaw(ctx context.Context, conn *grpc.ClientConn, token string, request []byte) ([]byte, error) {
	msg := envelope(token, request)
	return invokeEnvelope(ctx, conn, msg)
}

func invokeEnvelope(ctx context.Context, conn *grpc.ClientConn, msg []byte) ([]byte, error) {
	var out []byte
	if err := conn.Invoke(ctx, invokeMethod, &msg, &out, grpc.ForceCodec(rawCodec{})); err != nil {
		return nil, err
	}
	return responseBytes(out)
}

// envelope encodes a CallbackInvokeRequest.
func envelope(token string, request []byte) []byte {
	b := make([]byte, 0, len(token)+len(request)+16)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, token)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, request)
	return b
}

// responseBytes returns field 1 of an encoded CallbackInvokeResponse
// without copying it.
func responseBytes(b []byte) ([]byte, error) {
	var resp []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("the CallbackInvokeResponse does not decode: %v", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, fmt.Errorf("the CallbackInvokeResponse does not decode: %v", protowire.ParseError(n))
			}
			resp = v
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, fmt.Errorf("the CallbackInvokeResponse does not decode: %v", protowire.ParseError(n))
		}
		b = b[n:]
	}
	return resp, nil
}

// A stack URN and URNs of resources the requests mention.
const (
	urnStack    = "urn:pulumi:conform::kit::pulumi:pulumi:Stack::kit-conform"
	urnParent   = "urn:pulumi:conform::kit::pulumi:pulumi:Stack$my:index:Component::parent"
	urnResource = "urn:pulumi:conform::kit::pulumi:pulumi:Stack$my:index:Component$aws:s3/bucket:Bucket::bucket"
	urnDep      = "urn:pulumi:conform::kit::pulumi:pulumi:Stack$aws:s3/bucket:Bucket::dep"
	urnOther    = "urn:pulumi:conform::kit::pulumi:pulumi:Stack$aws:s3/bucket:Bucket::other"
	urnProvider = "urn:pulumi:conform::kit::pulumi:providers:aws::default_6_0_0"
	providerRef = urnProvider + "::3b9d2b8c-0c57-4a1d-9e0e-2f5a4ea1f0d1"
	resType     = "aws:s3/bucket:Bucket"
	resName     = "bucket"
)

func sigObject(sig string, fields map[string]*structpb.Value) *structpb.Value {
	f := map[string]*structpb.Value{sigKey: structpb.NewStringValue(sig)}
	for k, v := range fields {
		f[k] = v
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: f})
}

func strs(ss ...string) *structpb.Value {
	vs := make([]*structpb.Value, len(ss))
	for i, s := range ss {
		vs[i] = structpb.NewStringValue(s)
	}
	return structpb.NewListValue(&structpb.ListValue{Values: vs})
}

func obj(fields map[string]*structpb.Value) *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: fields})
}

// zooProperties returns properties holding every kind of value the engine
// sends, encoded as the engine encodes a transform request (secrets and
// unknowns as output values). With byteStrings, it adds a string that is not
// UTF-8, in the byte-string encoding.
func zooProperties(byteStrings bool) *structpb.Struct {
	f := map[string]*structpb.Value{
		"string":  structpb.NewStringValue("hello ✓"),
		"empty":   structpb.NewStringValue(""),
		"number":  structpb.NewNumberValue(3.25),
		"integer": structpb.NewNumberValue(42),
		"bool":    structpb.NewBoolValue(true),
		"null":    structpb.NewNullValue(),
		"list":    structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(1), structpb.NewStringValue("two")}}),
		"object":  obj(map[string]*structpb.Value{"nested": obj(map[string]*structpb.Value{"deep": structpb.NewBoolValue(false)})}),
		"secret": sigObject(sigOutput, map[string]*structpb.Value{
			"value": structpb.NewStringValue("s3cr3t"), "secret": structpb.NewBoolValue(true)}),
		"unknown":       sigObject(sigOutput, nil),
		"secretUnknown": sigObject(sigOutput, map[string]*structpb.Value{"secret": structpb.NewBoolValue(true)}),
		"output": sigObject(sigOutput, map[string]*structpb.Value{
			"value": structpb.NewStringValue("from-dep"), "dependencies": strs(urnDep, urnOther)}),
		"secretOutput": sigObject(sigOutput, map[string]*structpb.Value{
			"value": structpb.NewNumberValue(7), "secret": structpb.NewBoolValue(true), "dependencies": strs(urnDep)}),
		"unknownOutput": sigObject(sigOutput, map[string]*structpb.Value{"dependencies": strs(urnOther)}),
		"resourceRef": sigObject(sigResourceRef, map[string]*structpb.Value{
			"urn": structpb.NewStringValue(urnDep), "id": structpb.NewStringValue("dep-id"),
			"name": structpb.NewStringValue("dep"), "type": structpb.NewStringValue(resType),
			"packageVersion": structpb.NewStringValue("6.0.0")}),
		"componentRef": sigObject(sigResourceRef, map[string]*structpb.Value{
			"urn": structpb.NewStringValue(urnParent), "name": structpb.NewStringValue("parent"),
			"type": structpb.NewStringValue("my:index:Component")}),
		"asset":       sigObject(sigAsset, map[string]*structpb.Value{"text": structpb.NewStringValue("asset text")}),
		"fileAsset":   sigObject(sigAsset, map[string]*structpb.Value{"path": structpb.NewStringValue("conform/file.txt")}),
		"remoteAsset": sigObject(sigAsset, map[string]*structpb.Value{"uri": structpb.NewStringValue("https://example.com/a.txt")}),
		"archive": sigObject(sigArchive, map[string]*structpb.Value{"assets": obj(map[string]*structpb.Value{
			"a.txt": sigObject(sigAsset, map[string]*structpb.Value{"text": structpb.NewStringValue("in archive")}),
		})}),
		"fileArchive": sigObject(sigArchive, map[string]*structpb.Value{"path": structpb.NewStringValue("conform/dir.zip")}),
		"listOfSecrets": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
			sigObject(sigOutput, map[string]*structpb.Value{"value": structpb.NewStringValue("in-list"), "secret": structpb.NewBoolValue(true)}),
		}}),
	}
	if byteStrings {
		f["byteString"] = byteString([]byte("\x00hello \x80\xfe\xff world\xf0\x28"))
	}
	return &structpb.Struct{Fields: f}
}

func byteString(b []byte) *structpb.Value {
	return sigObject(sigByteString, map[string]*structpb.Value{"value": structpb.NewStringValue(base64.StdEncoding.EncodeToString(b))})
}

func boolp(b bool) *bool { return &b }

func everyHooksBinding() *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	return &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{
		BeforeCreate: []string{"bc1", "bc2"}, AfterCreate: []string{"ac"},
		BeforeUpdate: []string{"bu"}, AfterUpdate: []string{"au"},
		BeforeDelete: []string{"bd"}, AfterDelete: []string{"ad"},
		OnError: []string{"oe"},
	}
}

func everyAlias() []*pulumirpc.Alias {
	return []*pulumirpc.Alias{
		{Alias: &pulumirpc.Alias_Urn{Urn: urnOther}},
		{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{
			Name: "old-name", Type: "aws:s3/oldBucket:Bucket", Stack: "old-stack", Project: "old-project",
			Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: urnParent}}}},
		{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{
			Name: "orphan", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true}}}},
	}
}

// everyResourceTransformOption returns transform options with every field
// set; fieldsUnset checks that it stays so when the protocol grows.
func everyResourceTransformOption() *pulumirpc.TransformResourceOptions {
	return &pulumirpc.TransformResourceOptions{
		DependsOn:               []string{urnDep, urnOther},
		Protect:                 boolp(true),
		IgnoreChanges:           []string{"tags", "acl"},
		ReplaceOnChanges:        []string{"bucket"},
		Version:                 "6.0.0",
		Aliases:                 everyAlias(),
		Provider:                providerRef,
		CustomTimeouts:          &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "1m", Update: "2m", Delete: "3m"},
		PluginDownloadUrl:       "https://example.com/plugins",
		RetainOnDelete:          boolp(false),
		DeletedWith:             urnOther,
		DeleteBeforeReplace:     boolp(true),
		AdditionalSecretOutputs: []string{"arn"},
		Providers:               map[string]string{"aws": providerRef, "random": providerRef + "-2"},
		PluginChecksums:         map[string][]byte{"linux-amd64": {0xde, 0xad, 0xbe, 0xef}, "darwin-arm64": {0x01}},
		Hooks:                   everyHooksBinding(),
		Import:                  "existing-bucket-id",
		HideDiff:                []string{"policy"},
		ReplaceWith:             []string{urnOther},
		ReplacementTrigger:      structpb.NewStringValue("trigger-v2"),
	}
}

func everyInvokeOption() *pulumirpc.TransformInvokeOptions {
	return &pulumirpc.TransformInvokeOptions{
		Provider:          providerRef,
		PluginDownloadUrl: "https://example.com/plugins",
		Version:           "6.0.0",
		PluginChecksums:   map[string][]byte{"linux-amd64": {0xca, 0xfe}},
	}
}

func everyResourceOption() *pulumirpc.ResourceOptions {
	t := everyResourceTransformOption()
	return &pulumirpc.ResourceOptions{
		DependsOn: t.DependsOn, Protect: t.Protect, IgnoreChanges: t.IgnoreChanges,
		ReplaceOnChanges: t.ReplaceOnChanges, Version: t.Version, Aliases: t.Aliases,
		Provider: t.Provider, CustomTimeouts: t.CustomTimeouts, PluginDownloadUrl: t.PluginDownloadUrl,
		RetainOnDelete: t.RetainOnDelete, DeletedWith: t.DeletedWith, DeleteBeforeReplace: t.DeleteBeforeReplace,
		AdditionalSecretOutputs: t.AdditionalSecretOutputs, Providers: t.Providers,
		PluginChecksums: t.PluginChecksums, Hooks: t.Hooks, Import: t.Import, HideDiff: t.HideDiff,
		ReplaceWith: t.ReplaceWith, ReplacementTrigger: t.ReplacementTrigger, Parent: urnParent,
	}
}

// fieldsUnset lists the fields of m that are not set, so that a field the
// protocol gains is not silently left out of the "every field" requests.
func fieldsUnset(m proto.Message) []string {
	var out []string
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if !r.Has(fields.Get(i)) {
			out = append(out, string(fields.Get(i).Name()))
		}
	}
	return out
}

// normalize returns the value as the engine understands it, so that two
// encodings of the same value compare equal: a secret is a secret whether
// it comes as a secret envelope or as a known secret output value without
// dependencies; an unknown whether it comes as the sentinel or as an unknown
// output value without dependencies; an output value without dependencies
// that is neither secret nor unknown is its plain value; a byte string whose
// bytes are UTF-8 is that string; dependencies are a set; an empty id or
// package version of a resource reference is as good as none, and so are
// its name and type when they are the URN's; a null property is as good as
// none (the engine drops them); an asset or archive is the fields the engine
// reads from it.
func normalize(v *structpb.Value) *structpb.Value {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if k.NumberValue == 0 && math.Signbit(k.NumberValue) {
			// proto.Equal holds -0 equal to 0; the kit does not.
			return obj(map[string]*structpb.Value{"~normal": structpb.NewStringValue("-0")})
		}
		return v
	case *structpb.Value_StringValue:
		if k.StringValue == unknownValue {
			return outputForm(nil, false, nil)
		}
		return v
	case *structpb.Value_ListValue:
		out := make([]*structpb.Value, len(k.ListValue.GetValues()))
		for i, e := range k.ListValue.GetValues() {
			out[i] = normalize(e)
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out})
	case *structpb.Value_StructValue:
		f := k.StructValue.GetFields()
		sig := f[sigKey].GetStringValue()
		switch sig {
		case sigSecret:
			inner := normalize(f["value"])
			if isOutputForm(inner) {
				// A secret around an unknown.
				of := inner.GetStructValue().GetFields()
				return outputForm(of["value"], true, nil)
			}
			return outputForm(inner, true, nil)
		case sigOutput:
			var inner *structpb.Value
			if val, ok := f["value"]; ok {
				inner = normalize(val)
			}
			var deps []string
			for _, d := range f["dependencies"].GetListValue().GetValues() {
				deps = append(deps, d.GetStringValue())
			}
			return outputForm(inner, f["secret"].GetBoolValue(), deps)
		case sigByteString:
			raw, err := base64.StdEncoding.DecodeString(f["value"].GetStringValue())
			if err == nil && utf8.Valid(raw) {
				return structpb.NewStringValue(string(raw))
			}
			return v
		case sigResourceRef:
			typ, name := urnParts(f["urn"].GetStringValue())
			out := map[string]*structpb.Value{}
			for key, val := range f {
				s := val.GetStringValue()
				switch {
				case (key == "id" || key == "packageVersion") && s == "":
					continue
				case key == "name" && s == name, key == "type" && s == typ:
					// Both are in the URN.
					continue
				}
				out[key] = val
			}
			return obj(out)
		case "":
			out := make(map[string]*structpb.Value, len(f))
			for key, val := range f {
				if _, null := val.GetKind().(*structpb.Value_NullValue); null {
					// The engine drops null properties itself.
					continue
				}
				out[key] = normalize(val)
			}
			return obj(out)
		case sigAsset, sigArchive:
			// The engine reads only these fields of an asset or archive.
			out := map[string]*structpb.Value{}
			for _, key := range []string{sigKey, "hash", "text", "path", "uri", "assets"} {
				if val, ok := f[key]; ok {
					out[key] = normalize(val)
				}
			}
			return obj(out)
		default:
			out := make(map[string]*structpb.Value, len(f))
			for key, val := range f {
				out[key] = normalize(val)
			}
			return obj(out)
		}
	default:
		return v
	}
}

// urnParts returns the type and name a URN ends with.
func urnParts(urn string) (typ, name string) {
	i := strings.LastIndex(urn, "::")
	if i < 0 {
		return "", ""
	}
	name = urn[i+2:]
	rest := urn[:i]
	if j := strings.LastIndex(rest, "::"); j >= 0 {
		rest = rest[j+2:]
	}
	if j := strings.LastIndexByte(rest, '$'); j >= 0 {
		rest = rest[j+1:]
	}
	return rest, name
}

// outputForm is the normal form of a value that is secret, unknown or has
// dependencies; a plain known value without them is returned as is.
func outputForm(value *structpb.Value, secret bool, deps []string) *structpb.Value {
	if value != nil && !secret && len(deps) == 0 {
		return value
	}
	deps = slices.Clone(deps)
	slices.Sort(deps)
	deps = slices.Compact(deps)
	f := map[string]*structpb.Value{
		"~normal": structpb.NewStringValue("output"),
		"secret":  structpb.NewBoolValue(secret),
		"deps":    strs(deps...),
	}
	if value != nil {
		f["value"] = value
	}
	return obj(f)
}

func isOutputForm(v *structpb.Value) bool {
	return v.GetStructValue().GetFields()["~normal"].GetStringValue() == "output"
}

func normalizeStruct(s *structpb.Struct) *structpb.Struct {
	if s == nil {
		return &structpb.Struct{}
	}
	return normalize(structpb.NewStructValue(s)).GetStructValue()
}

// diffStructs names the top-level keys on which the two property maps
// differ once normalized, with what was sent and what came back.
func diffStructs(sent, got *structpb.Struct) []string {
	a, b := normalizeStruct(sent).GetFields(), normalizeStruct(got).GetFields()
	var out []string
	for k, va := range a {
		vb, ok := b[k]
		switch {
		case !ok:
			out = append(out, k+" dropped")
		case !proto.Equal(va, vb):
			out = append(out, fmt.Sprintf("%s: sent %s, got %s", k, short(va), short(vb)))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k+" added")
		}
	}
	slices.Sort(out)
	return out
}

func short(m proto.Message) string {
	b, err := protojson.Marshal(m)
	if err != nil {
		return err.Error()
	}
	s := strings.ReplaceAll(strings.Join(strings.Fields(string(b)), " "), `"`+sigKey+`"`, "sig")
	for name, sig := range map[string]string{"secret": sigSecret, "ref": sigResourceRef, "output": sigOutput,
		"bytes": sigByteString, "asset": sigAsset, "archive": sigArchive} {
		s = strings.ReplaceAll(s, `"`+sig+`"`, name)
	}
	s = strings.ReplaceAll(s, `{"~normal": "-0"}`, "-0")
	s = strings.ReplaceAll(s, `{"~normal":"-0"}`, "-0")
	s = strings.ReplaceAll(s, "\ufeff", `\ufeff`)
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// diffMessages names the fields on which two messages differ.
func diffMessages(sent, got proto.Message) []string {
	var out []string
	rs, rg := sent.ProtoReflect(), got.ProtoReflect()
	fields := rs.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		hs, hg := rs.Has(fd), rg.Has(fd)
		switch {
		case hs && !hg:
			out = append(out, string(fd.Name())+" dropped")
		case !hs && hg:
			out = append(out, string(fd.Name())+" added")
		case hs && !rs.Get(fd).Equal(rg.Get(fd)):
			out = append(out, string(fd.Name())+" changed")
		}
	}
	if len(rg.GetUnknown()) > 0 {
		out = append(out, "unknown fields added")
	}
	return out
}
