package invoketransforms_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/invoketransforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzInvokeTransformRequest feeds arbitrary bytes to two registered
// identity invoke transforms, one that never reads the arguments (they are
// checked, then sent back as received) and one that reads them (decoded,
// then encoded again). Both must refuse the same requests with the same
// coded error, never panic, and answer the others with the same arguments.
func FuzzInvokeTransformRequest(f *testing.F) {
	seed := &pulumirpc.TransformInvokeRequest{
		Token: "aws:index/getRegion:getRegion",
		Args: &structpb.Struct{Fields: map[string]*structpb.Value{
			"region":   structpb.NewStringValue("us-west-2"),
			"secret":   structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"4dabf18193072939515e22adb298388d": structpb.NewStringValue("1b47061264138c4ac30d75fd1eb44270"), "value": structpb.NewStringValue("s")}}),
			"kindless": {},
		}},
		Options: &pulumirpc.TransformInvokeOptions{Provider: "urn:p::id", Version: "6.0.0"},
	}
	b, err := proto.Marshal(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x12, 0x02, 0x0a, 0x00}) // arguments holding an empty field entry
	reg, err := callbacks.NewRegistry()
	if err != nil {
		f.Fatal(err)
	}
	lazy, err := reg.Register(invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
		return a.Result(), nil
	}))
	if err != nil {
		f.Fatal(err)
	}
	eager, err := reg.Register(invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
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
		if err == nil {
			var x, y pulumirpc.TransformInvokeResponse
			if proto.Unmarshal(out, &x) != nil || proto.Unmarshal(outOwn, &y) != nil || !proto.Equal(&x, &y) {
				t.Fatalf("the call's own bytes are answered differently:\n%x\n%x", out, outOwn)
			}
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
		var res, resEager pulumirpc.TransformInvokeResponse
		if err := proto.Unmarshal(out, &res); err != nil {
			t.Fatalf("response does not decode: %v", err)
		}
		if err := proto.Unmarshal(outEager, &resEager); err != nil {
			t.Fatalf("response does not decode: %v", err)
		}
		if !proto.Equal(res.GetOptions(), resEager.GetOptions()) {
			t.Fatalf("options differ:\nunread %v\nread   %v", res.GetOptions(), resEager.GetOptions())
		}
		got, err := invoketransforms.DecodeRequest(&pulumirpc.TransformInvokeRequest{Args: res.GetArgs()})
		if err != nil {
			t.Fatalf("arguments sent back as received do not decode: %v", err)
		}
		want, err := invoketransforms.DecodeRequest(&pulumirpc.TransformInvokeRequest{Args: resEager.GetArgs()})
		if err != nil {
			t.Fatalf("arguments encoded again do not decode: %v", err)
		}
		if !got.Properties().DeepEquals(want.Properties()) {
			t.Fatalf("arguments differ:\nunread %v\nread   %v", got.Properties(), want.Properties())
		}
	})
}
