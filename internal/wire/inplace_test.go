package wire_test

import (
	"testing"
	"unsafe"

	"github.com/langhost/callbacks/internal/wire"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Field numbers of TransformRequest's properties and options.
const (
	reqProps = 5
	reqOpts  = 6
)

// layoutOf records the fields of payload as a transform decoder does.
func layoutOf(t *testing.T, payload []byte) *wire.Layout {
	t.Helper()
	l := &wire.Layout{}
	for b := payload; len(b) > 0; {
		at := len(payload) - len(b)
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag at %d", at)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatalf("bad field at %d", at)
		}
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			l.Note(num, reqProps, reqOpts, at, at+n+m-len(v), at+n+m)
		}
		b = b[n+m:]
	}
	return l
}

func inPlaceRequest() *pulumirpc.TransformRequest {
	return &pulumirpc.TransformRequest{
		Type: "aws:s3/bucket:Bucket", Name: "logs", Custom: true,
		Parent:     "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
		Properties: &structpb.Struct{Fields: map[string]*structpb.Value{"acl": structpb.NewStringValue("private")}},
		Options:    &pulumirpc.TransformResourceOptions{Protect: proto.Bool(true), DependsOn: []string{"urn:a"}},
	}
}

func TestAnswerInPlace(t *testing.T) {
	req := inPlaceRequest()
	opts, err := proto.Marshal(req.Options)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		sendOpts bool
		want     *pulumirpc.TransformResponse
	}{
		{"properties", false, &pulumirpc.TransformResponse{Properties: req.Properties}},
		{"properties and options", true, &pulumirpc.TransformResponse{Properties: req.Properties, Options: req.Options}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload, err := proto.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			out, ok := layoutOf(t, payload).Answer(payload, reqProps, reqOpts, tc.sendOpts, opts)
			if !ok {
				t.Fatal("a request laid out as the engine lays it out was not answered in place")
			}
			if !within(out, payload) {
				t.Fatal("the answer is not made of the request's own bytes")
			}
			var got pulumirpc.TransformResponse
			if err := proto.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&got, tc.want) {
				t.Fatalf("answer %v, want %v", &got, tc.want)
			}
		})
	}
}

// within reports whether the non-empty s lies inside b's memory.
func within(s, b []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return len(s) > 0 && p >= start && p+uintptr(len(s)) <= start+uintptr(len(b))
}

func TestAnswerInPlaceRefuses(t *testing.T) {
	req := inPlaceRequest()
	opts, err := proto.Marshal(req.Options)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	props, err := proto.Marshal(req.Properties)
	if err != nil {
		t.Fatal(err)
	}
	withoutOpts, err := proto.Marshal(&pulumirpc.TransformRequest{Type: req.Type, Properties: req.Properties})
	if err != nil {
		t.Fatal(err)
	}
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	for _, tc := range []struct {
		name     string
		payload  []byte
		sendOpts bool
		opts     []byte
	}{
		{"other options", plain, true, append([]byte{0x18, 0x01}, opts...)},
		{"options the request did not carry", withoutOpts, true, opts},
		{"properties twice", field(field(nil, reqProps, props), reqProps, props), false, nil},
		{"no properties", field(nil, reqOpts, opts), false, nil},
		{"options before the properties", field(field(nil, reqOpts, opts), reqProps, props), true, opts},
		{"a field between them", field(field(field(nil, reqProps, props), 15, nil), reqOpts, opts), true, opts},
		{"options twice", field(field(field(nil, reqProps, props), reqOpts, opts), reqOpts, opts), true, opts},
		// The tag of field 5 written in two bytes: valid, but not one byte
		// to rewrite.
		{"a long tag", append([]byte{0xaa, 0x00}, protowire.AppendBytes(nil, props)...), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := append([]byte(nil), tc.payload...)
			if _, ok := layoutOf(t, payload).Answer(payload, reqProps, reqOpts, tc.sendOpts, tc.opts); ok {
				t.Fatal("answered in place")
			}
			if string(payload) != string(tc.payload) {
				t.Fatal("a refused answer wrote to the request")
			}
		})
	}
}
