package callbacks

import (
	"fmt"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/encoding"
)

// BenchmarkWireCodec compares the server's codec with gRPC's protobuf codec
// on a CallbackInvokeRequest received in 16 KiB buffers, as gRPC's transport
// hands it over, and on the response. B/op shows the copies: the protobuf
// codec copies a request twice and a response once, the server's codec a
// request once and a response not at all.
//
//	go test -run '^$' -bench WireCodec -benchmem .
func BenchmarkWireCodec(b *testing.B) {
	for _, size := range []int{1 << 20, 64 << 20} {
		payload := make([]byte, size)
		req := invokeRequest("2d0b7e4e-9a8f-4c1a-8a3e-5f0e6f7b9c01", payload)
		var at []int
		for i := 16 << 10; i < len(req); i += 16 << 10 {
			at = append(at, i)
		}
		data := split(req, at...)
		res := &pulumirpc.CallbackInvokeResponse{Response: payload}
		for _, c := range []struct {
			name  string
			codec encoding.CodecV2
		}{{"proto", protoCodec}, {"wire", wireCodec{}}} {
			b.Run(fmt.Sprintf("%s/unmarshal/%dMiB", c.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(req)))
				b.ReportAllocs()
				for b.Loop() {
					var m pulumirpc.CallbackInvokeRequest
					if err := c.codec.Unmarshal(data, &m); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("%s/marshal/%dMiB", c.name, size>>20), func(b *testing.B) {
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				for b.Loop() {
					out, err := c.codec.Marshal(res)
					if err != nil {
						b.Fatal(err)
					}
					out.Free()
				}
			})
		}
	}
}
