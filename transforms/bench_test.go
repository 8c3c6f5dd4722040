package transforms_test

import (
	"fmt"
	"testing"

	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// benchRequest is a resource with a few dozen properties, some secret, and
// every option set.
func benchRequest() []byte {
	req := request(fullOptions())
	for i := range 32 {
		req.Properties.Fields[fmt.Sprintf("p%02d", i)] = object("s", str("value"), "n", structpb.NewNumberValue(float64(i)),
			"secret", outputValue(str("x"), true, parentURN))
	}
	b, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkIdentity measures decode, identity transform and encode, the
// work this package adds to a call.
func BenchmarkIdentity(b *testing.B) {
	payload := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		req := &pulumirpc.TransformRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			b.Fatal(err)
		}
		args, err := transforms.DecodeRequest(req)
		if err != nil {
			b.Fatal(err)
		}
		res, err := transforms.EncodeResult(args.Result(), true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOptionsOnly is a transform that changes only an option, so the
// properties are decoded but not encoded.
func BenchmarkOptionsOnly(b *testing.B) {
	payload := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		req := &pulumirpc.TransformRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			b.Fatal(err)
		}
		args, err := transforms.DecodeRequest(req)
		if err != nil {
			b.Fatal(err)
		}
		res, err := transforms.EncodeResult(args.WithOptions(func(o *transforms.ResourceOptions) { o.Protect = new(true) }), true)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := proto.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareProto is the floor: the same request and response messages
// without any conversion.
func BenchmarkBareProto(b *testing.B) {
	payload := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		req := &pulumirpc.TransformRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			b.Fatal(err)
		}
		res := &pulumirpc.TransformResponse{Properties: req.Properties, Options: req.Options}
		if _, err := proto.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}
