package wire_test

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// hookMaps are the property map fields of a ResourceHookRequest.
var hookMaps = []string{"new_inputs", "old_inputs", "new_outputs", "old_outputs"}

// decodeHook decodes payload as a ResourceHookRequest with its four maps
// kept lazy.
func decodeHook(payload []byte, owned bool) (*pulumirpc.ResourceHookRequest, []*wire.Lazy, error) {
	var pb pulumirpc.ResourceHookRequest
	maps := make([]*wire.Lazy, len(hookMaps))
	fields := make([]wire.Field, len(hookMaps))
	for i, name := range hookMaps {
		maps[i] = &wire.Lazy{}
		fields[i] = wire.Field{Num: wire.FieldNum(&pb, protoName(name)), Into: maps[i]}
	}
	_, err := wire.DecodeRequest(payload, owned, &pb, fields...)
	return &pb, maps, err
}

// plainHook is the plain path: protobuf decodes the whole request, the
// SDK's conversion its maps. ok is false when either refuses.
func plainHook(payload []byte) (pb *pulumirpc.ResourceHookRequest, maps []resource.PropertyMap, ok bool) {
	pb = &pulumirpc.ResourceHookRequest{}
	if proto.Unmarshal(payload, pb) != nil {
		return nil, nil, false
	}
	for _, s := range []*structpb.Struct{pb.NewInputs, pb.OldInputs, pb.NewOutputs, pb.OldOutputs} {
		m, err := wire.UnmarshalStruct(s)
		if err != nil {
			return nil, nil, false
		}
		maps = append(maps, m)
	}
	pb.NewInputs, pb.OldInputs, pb.NewOutputs, pb.OldOutputs = nil, nil, nil, nil
	return pb, maps, true
}

// checkAsPlain fails t unless DecodeRequest accepts exactly what the plain
// path accepts, and decodes it to the same message and maps.
func checkAsPlain(t *testing.T, payload []byte) {
	t.Helper()
	want, wantMaps, ok := plainHook(payload)
	for _, owned := range []bool{false, true} {
		got, maps, err := decodeHook(bytes.Clone(payload), owned)
		if ok != (err == nil) {
			t.Fatalf("owned %v: the plain path accepts: %v; DecodeRequest: %v", owned, ok, err)
		}
		if !ok {
			continue
		}
		if !proto.Equal(got, want) {
			t.Fatalf("owned %v: got %v, want %v", owned, got, want)
		}
		for i, l := range maps {
			if l.Sent() != (wantMaps[i] != nil) {
				t.Fatalf("owned %v: %s: sent %v, want %v", owned, hookMaps[i], l.Sent(), wantMaps[i] != nil)
			}
			if wantMaps[i] != nil && !l.Map().DeepEquals(wantMaps[i]) && !sameOnTheWire(l.Map(), wantMaps[i]) {
				t.Fatalf("owned %v: %s: got %v, want %v", owned, hookMaps[i], l.Map(), wantMaps[i])
			}
		}
	}
}

// sameOnTheWire says whether the SDK encodes two maps to equal messages.
// Maps with a NaN are never DeepEquals, even to themselves; proto.Equal
// takes a NaN for a NaN, so a NaN the fuzzer writes is no difference.
func sameOnTheWire(a, b resource.PropertyMap) bool {
	opts := plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true, KeepOutputValues: true}
	sa, errA := plugin.MarshalProperties(a, opts)
	sb, errB := plugin.MarshalProperties(b, opts)
	return errA == nil && errB == nil && proto.Equal(sa, sb)
}

func hookRequest() *pulumirpc.ResourceHookRequest {
	return &pulumirpc.ResourceHookRequest{
		Urn: "urn:pulumi:dev::p::aws:s3/bucket:Bucket::logs", Id: "id-1", Name: "logs", Type: "aws:s3/bucket:Bucket",
		NewInputs:  &structpb.Struct{Fields: map[string]*structpb.Value{"acl": structpb.NewStringValue("private")}},
		OldOutputs: &structpb.Struct{Fields: map[string]*structpb.Value{"n": structpb.NewNumberValue(1)}},
		NewOptions: &pulumirpc.ResourceOptions{Protect: proto.Bool(true), DependsOn: []string{"urn:a"}},
	}
}

func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func TestDecodeRequestAsProtobuf(t *testing.T) {
	whole, err := proto.Marshal(hookRequest())
	if err != nil {
		t.Fatal(err)
	}
	entry := func(k, v string) []byte { // one Struct entry holding a string
		value := field(3, []byte(v)) // Value.string_value
		return field(1, append(field(1, []byte(k)), field(2, value)...))
	}
	for name, payload := range map[string][]byte{
		"whole":                       whole,
		"empty":                       nil,
		"map repeated, merged":        append(field(5, entry("a", "1")), field(5, entry("b", "2"))...),
		"map repeated, one malformed": append(field(5, entry("a", "1")), field(5, []byte{0x0a})...),
		// Each occurrence alone is malformed, their concatenation is not.
		"map repeated, each malformed": bytes.Join([][]byte{field(8, []byte("%0000%")), field(8, []byte("00")), field(8, []byte("00"))}, nil),
		"map of the wrong wire type":   protowire.AppendVarint(protowire.AppendTag(nil, 5, protowire.VarintType), 1),
		"map that does not decode":     field(5, []byte{0x0a, 0x02, 0x0a, 0x00}),
		"map truncated":                field(5, entry("a", "1"))[:4],
		"string not UTF-8":             append(bytes.Clone(whole), field(3, []byte{0xff})...),
		"options malformed":            append(bytes.Clone(whole), field(10, []byte{0x0a})...),
		"unknown field":                append(bytes.Clone(whole), field(99, []byte("x"))...),
	} {
		t.Run(name, func(t *testing.T) { checkAsPlain(t, payload) })
	}
}

// FuzzDecodeRequest holds DecodeRequest to the plain path on any bytes.
func FuzzDecodeRequest(f *testing.F) {
	whole, err := proto.Marshal(hookRequest())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(whole)
	f.Add([]byte{})
	f.Fuzz(checkAsPlain)
}

// transformRequest is a TransformRequest as the engine encodes it, and the
// lazy properties DecodeRequest keeps of it.
func transformRequest(t *testing.T, owned bool, opts *pulumirpc.TransformResourceOptions) ([]byte, *wire.Message, *wire.Lazy, *pulumirpc.TransformRequest) {
	t.Helper()
	payload, err := proto.Marshal(&pulumirpc.TransformRequest{
		Type: "aws:s3/bucket:Bucket", Name: "logs", Parent: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
		Properties: &structpb.Struct{Fields: map[string]*structpb.Value{"acl": structpb.NewStringValue("private")}},
		Options:    opts,
	})
	if err != nil {
		t.Fatal(err)
	}
	var pb pulumirpc.TransformRequest
	props := &wire.Lazy{}
	msg, err := wire.DecodeRequest(payload, owned, &pb, wire.Field{Num: wire.FieldNum(&pb, "properties"), Into: props})
	if err != nil {
		t.Fatal(err)
	}
	return payload, msg, props, &pb
}

func TestEncodeReply(t *testing.T) {
	opts := &pulumirpc.TransformResourceOptions{Protect: proto.Bool(true), DependsOn: []string{"urn:a"}}
	changed := &pulumirpc.TransformResourceOptions{Protect: proto.Bool(false)}
	acl := &structpb.Struct{Fields: map[string]*structpb.Value{"acl": structpb.NewStringValue("private")}}
	other := &structpb.Struct{Fields: map[string]*structpb.Value{"n": structpb.NewNumberValue(2)}}
	num := wire.FieldNum(&pulumirpc.TransformResponse{}, "properties")
	for _, tc := range []struct {
		name    string
		owned   bool
		read    bool                                // the properties were read before the reply
		props   resource.PropertyMap                // Reply.Props
		from    bool                                // Reply.From is the request's properties
		rest    *pulumirpc.TransformResourceOptions // the reply's options
		want    *pulumirpc.TransformResponse
		inPlace bool
	}{
		{"unread, options as received, owned", true, false, nil, true, opts, &pulumirpc.TransformResponse{Properties: acl, Options: opts}, true},
		{"unread, no options, owned", true, false, nil, true, nil, &pulumirpc.TransformResponse{Properties: acl}, true},
		{"unread, options as received, not owned", false, false, nil, true, opts, &pulumirpc.TransformResponse{Properties: acl, Options: opts}, false},
		{"unread, options changed", true, false, nil, true, changed, &pulumirpc.TransformResponse{Properties: acl, Options: changed}, false},
		{"read", true, true, nil, true, opts, &pulumirpc.TransformResponse{Properties: acl, Options: opts}, false},
		{"a map of its own", true, false, resource.PropertyMap{"n": resource.NewProperty(2.0)}, false, nil, &pulumirpc.TransformResponse{Properties: other}, false},
		{"no map", true, false, nil, false, changed, &pulumirpc.TransformResponse{Options: changed}, false},
		{"nothing", true, false, nil, false, nil, &pulumirpc.TransformResponse{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, msg, props, _ := transformRequest(t, tc.owned, opts)
			if tc.read {
				props.Map()
			}
			r := wire.Reply{Num: num, Props: tc.props}
			if tc.from {
				r.From = props
			}
			if tc.rest != nil {
				r.Rest = &pulumirpc.TransformResponse{Options: tc.rest}
			}
			out, err := msg.EncodeReply(r, true)
			if err != nil {
				t.Fatal(err)
			}
			var got pulumirpc.TransformResponse
			if err := proto.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&got, tc.want) {
				t.Fatalf("got %v, want %v", &got, tc.want)
			}
			inPlace := len(out) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(out))) >= uintptr(unsafe.Pointer(unsafe.SliceData(payload))) &&
				uintptr(unsafe.Pointer(unsafe.SliceData(out))) < uintptr(unsafe.Pointer(unsafe.SliceData(payload)))+uintptr(len(payload))
			if inPlace != tc.inPlace {
				t.Fatalf("answered in the request's bytes: %v, want %v", inPlace, tc.inPlace)
			}
		})
	}
}

// Outside a call there is no request, and the reply is made anew.
func TestEncodeReplyWithoutRequest(t *testing.T) {
	var msg *wire.Message
	out, err := msg.EncodeReply(wire.Reply{Num: 1, Props: resource.PropertyMap{"a": resource.NewProperty("b")}}, true)
	if err != nil {
		t.Fatal(err)
	}
	var got pulumirpc.TransformResponse
	if err := proto.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.GetProperties().GetFields()["a"].GetStringValue() != "b" {
		t.Fatalf("got %v", &got)
	}
}

func protoName(s string) protoreflect.Name { return protoreflect.Name(s) }
