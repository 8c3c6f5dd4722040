package transforms_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzTransformRequest feeds arbitrary bytes to a registered identity
// transform: whatever arrives, the property and option conversions must
// answer with a response or a coded error, never a panic; and a response
// must decode.
func FuzzTransformRequest(f *testing.F) {
	seed := &pulumirpc.TransformRequest{
		Type: "aws:s3/bucket:Bucket", Name: "logs", Custom: true,
		Parent: "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
		Properties: &structpb.Struct{Fields: map[string]*structpb.Value{
			"acl":      structpb.NewStringValue("private"),
			"secret":   structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"4dabf18193072939515e22adb298388d": structpb.NewStringValue("1b47061264138c4ac30d75fd1eb44270"), "value": structpb.NewStringValue("s")}}),
			"kindless": {},
		}},
		Options: &pulumirpc.TransformResourceOptions{
			DependsOn: []string{"urn:a"}, Protect: proto.Bool(true), IgnoreChanges: []string{"tags"},
			Aliases:        []*pulumirpc.Alias{{Alias: &pulumirpc.Alias_Urn{Urn: "urn:old"}}},
			CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "1m"},
			Hooks:          &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"h"}},
		},
	}
	b, err := proto.Marshal(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x2a, 0x02, 0x0a, 0x00}) // properties holding an empty field entry
	// The same identity twice: one never reads the properties (they are
	// checked, then sent back as received), the other reads them (decoded,
	// then encoded again). Both must refuse the same requests with the same
	// message and answer the others with the same properties.
	reg, err := callbacks.NewRegistry()
	if err != nil {
		f.Fatal(err)
	}
	lazy, err := reg.Register(transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		return a.Result(), nil
	}))
	if err != nil {
		f.Fatal(err)
	}
	eager, err := reg.Register(transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		_ = a.Properties()
		return a.Result(), nil
	}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, request []byte) {
		out, err := reg.Invoke(context.Background(), lazy, request)
		outEager, errEager := reg.Invoke(context.Background(), eager, request)
		// The unread identity once more on bytes that belong to the call, as
		// the server's do: it may answer in them, and must answer the same.
		own := bytes.Clone(request)
		outOwn, errOwn := reg.InvokeOwned(context.Background(), lazy, own)
		if (err == nil) != (errOwn == nil) || err != nil && err.Error() != errOwn.Error() {
			t.Fatalf("the caller's bytes: %v; the call's own: %v", err, errOwn)
		}
		if err == nil && !sameResponse(t, out, outOwn) {
			t.Fatalf("the call's own bytes are answered differently:\n%x\n%x", out, outOwn)
		}
		if (err == nil) != (errEager == nil) {
			t.Fatalf("unread: %v; read: %v", err, errEager)
		}
		if err != nil {
			var ce *callbacks.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *callbacks.Error", err)
			}
			if !errors.Is(err, callbacks.ErrInvalidRequest) && !errors.Is(err, callbacks.ErrEncode) {
				t.Fatalf("unexpected error %v (code %v)", err, ce.Code)
			}
			if err.Error() != errEager.Error() {
				t.Fatalf("unread and read refuse differently:\n%v\n%v", err, errEager)
			}
			return
		}
		var res, resEager pulumirpc.TransformResponse
		if err := proto.Unmarshal(out, &res); err != nil {
			t.Fatalf("response does not decode: %v", err)
		}
		if err := proto.Unmarshal(outEager, &resEager); err != nil {
			t.Fatalf("response does not decode: %v", err)
		}
		got, err := transforms.DecodeRequest(&pulumirpc.TransformRequest{Properties: res.GetProperties()})
		if err != nil {
			t.Fatalf("properties sent back as received do not decode: %v", err)
		}
		want, err := transforms.DecodeRequest(&pulumirpc.TransformRequest{Properties: resEager.GetProperties()})
		if err != nil {
			t.Fatalf("properties encoded again do not decode: %v", err)
		}
		if !got.Properties().DeepEquals(want.Properties()) {
			t.Fatalf("properties differ:\nunread %v\nread   %v", got.Properties(), want.Properties())
		}
	})
}

// sameResponse reports whether two encoded TransformResponses carry the
// same fields with the same bytes, whatever the length prefixes look like.
func sameResponse(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y pulumirpc.TransformResponse
	if err := proto.Unmarshal(a, &x); err != nil {
		t.Fatalf("response does not decode: %v", err)
	}
	if err := proto.Unmarshal(b, &y); err != nil {
		t.Fatalf("response does not decode: %v", err)
	}
	return proto.Equal(&x, &y)
}
