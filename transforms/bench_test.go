package transforms_test

// Benchmarks of the typed resource transform path: property and option
// conversion alone, the whole call through a registry and over a socket,
// deeply nested properties, and the memory one registration keeps. Run them
// with
//
//	go test -run '^$' -bench . -benchmem -cpu 1,2 ./transforms
//
// See BENCHMARKS.md for a full run and what it shows. Nothing here asserts
// on time.

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/benchdata"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// benchIdentity returns the properties and options it was given. It names
// them in its result, as a transform that changes something would, so the
// whole response is encoded.
func benchIdentity(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
	return &transforms.Result{Properties: a.Properties(), Options: a.Options}, nil
}

// benchPayloads are the requests the benchmarks send: the three sizes plus
// "engine", the medium properties as the engine encodes them for
// transforms (output values instead of secrets and unknowns).
func benchPayloads() []struct {
	name string
	req  *pulumirpc.TransformRequest
} {
	out := []struct {
		name string
		req  *pulumirpc.TransformRequest
	}{}
	for _, s := range benchdata.Sizes {
		out = append(out, struct {
			name string
			req  *pulumirpc.TransformRequest
		}{s, benchdata.TransformRequest(s)})
	}
	return append(out, struct {
		name string
		req  *pulumirpc.TransformRequest
	}{"engine", benchdata.EngineTransformRequest()})
}

// BenchmarkConvert is the typed layer's conversion alone, starting from and
// ending at decoded wire messages: properties (internal/wire/props over the
// SDK's plugin marshalling), options, and the two together as the adapter
// runs them.
func BenchmarkConvert(b *testing.B) {
	for _, p := range benchPayloads() {
		size := int64(proto.Size(p.req))
		b.Run("UnmarshalProperties/"+p.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.UnmarshalStruct(p.req.GetProperties()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("MarshalProperties/"+p.name, func(b *testing.B) {
			m, err := wire.UnmarshalStruct(p.req.GetProperties())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := wire.MarshalStruct(m, true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("DecodeRequest/"+p.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transforms.DecodeRequest(p.req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("EncodeResult/"+p.name, func(b *testing.B) {
			args, err := transforms.DecodeRequest(p.req)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transforms.EncodeResult(args.Result(), true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	opts := benchdata.Options()
	b.Run("OptionsFromProto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := transforms.OptionsFromProto(opts); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("OptionsToProto", func(b *testing.B) {
		o, err := transforms.OptionsFromProto(opts)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := o.ToProto(true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchShape is one way of answering a resource transform request, from
// the typed identity down to the harness's baselines.
type benchShape struct {
	name string
	fn   callbacks.Func
}

func benchShapes() []benchShape {
	return []benchShape{
		// The typed API, identity as the harness's "ours" target runs it.
		{"typed", transforms.Adapt(benchIdentity)},
		// The typed API, identity without reading the properties: they are
		// checked and sent back as received, as the harness's "ours-lazy"
		// target runs it.
		{"typed-unread", transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.Result(), nil
		})},
		// The typed API, a transform that changes nothing and says so:
		// the properties are checked, not decoded; options are decoded.
		{"typed-nil", transforms.Adapt(func(context.Context, *transforms.Args) (*transforms.Result, error) {
			return nil, nil
		})},
		// The typed API, a transform that only returns options (such as one
		// that protects every resource): properties are checked, not sent.
		{"typed-options", transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return &transforms.Result{Options: a.Options}, nil
		})},
		// The wire messages, as the harness's echo-rt baseline.
		{"proto-roundtrip", callbacks.ResourceTransform(
			func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return &pulumirpc.TransformResponse{Properties: r.GetProperties(), Options: r.GetOptions()}, nil
			})},
		// The already-encoded fields copied, as the harness's echo-splice
		// baseline: what a transform that does not read properties could
		// cost if they were decoded only on demand.
		{"splice", callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return benchSplice(b) })},
	}
}

// benchSplice copies TransformRequest.properties (5) and options (6) into
// TransformResponse fields 1 and 2 without decoding them.
func benchSplice(b []byte) ([]byte, error) {
	var fields [2][]byte
	var have [2]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 5 || num == 6) {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			fields[num-5], have[num-5] = v, true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		b = b[m:]
	}
	out := make([]byte, 0, len(fields[0])+len(fields[1])+20)
	for i, f := range fields {
		if have[i] {
			out = protowire.AppendTag(out, protowire.Number(i+1), protowire.BytesType)
			out = protowire.AppendBytes(out, f)
		}
	}
	return out, nil
}

// BenchmarkInvokeRegistry is a whole resource transform call without a
// transport, for each way of answering it: the server side of one call.
func BenchmarkInvokeRegistry(b *testing.B) {
	for _, p := range benchPayloads() {
		payload := benchdata.Marshal(p.req)
		for _, s := range benchShapes() {
			b.Run(p.name+"/"+s.name, func(b *testing.B) {
				reg, err := callbacks.NewRegistry()
				if err != nil {
					b.Fatal(err)
				}
				tok, err := reg.Register(s.fn)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := reg.Invoke(ctx, tok, payload); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchServe starts a server on transport ("bufconn" or "tcp") with the
// typed identity registered, and returns a client with the engine's message
// limits and the callback's token. Everything is closed when b ends.
func benchServe(b *testing.B, transport string) (pulumirpc.CallbacksClient, string) {
	b.Helper()
	var (
		srv  *callbacks.Server
		err  error
		dial []grpc.DialOption
	)
	switch transport {
	case "bufconn":
		lis := bufconn.Listen(1 << 20)
		srv, err = callbacks.Listen(callbacks.WithListener(lis), callbacks.Target("passthrough:///bufconn"))
		dial = append(dial, grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		}))
	default:
		srv, err = callbacks.Listen()
	}
	if err != nil {
		b.Fatal(err)
	}
	cb, err := srv.Register(context.Background(), transforms.Adapt(benchIdentity))
	if err != nil {
		_ = srv.Close()
		b.Fatal(err)
	}
	conn, err := grpc.NewClient(srv.Target(), append(dial,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(callbacks.DefaultMaxMessageSize),
			grpc.MaxCallSendMsgSize(callbacks.DefaultMaxMessageSize)))...)
	if err != nil {
		_ = srv.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = conn.Close()
		_ = srv.Close()
	})
	return pulumirpc.NewCallbacksClient(conn), cb.GetToken()
}

// BenchmarkInvoke is the typed identity called over a transport, one call
// at a time ("1") and sixteen at once on one connection ("16"), as the
// bench/peers calls it at concurrency 1 and 16.
func BenchmarkInvoke(b *testing.B) {
	for _, transport := range []string{"bufconn", "tcp"} {
		for _, p := range benchPayloads() {
			payload := benchdata.Marshal(p.req)
			b.Run(transport+"/1/"+p.name, func(b *testing.B) {
				client, token := benchServe(b, transport)
				req := &pulumirpc.CallbackInvokeRequest{Token: token, Request: payload}
				ctx := context.Background()
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := client.Invoke(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(transport+"/16/"+p.name, func(b *testing.B) {
				client, token := benchServe(b, transport)
				req := &pulumirpc.CallbackInvokeRequest{Token: token, Request: payload}
				b.SetBytes(int64(len(payload)))
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						if _, err := client.Invoke(ctx, req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// benchDepths are the nesting depths of BenchmarkDeep; the SDK's property
// unmarshalling copies every nested object's subtree, so its cost grows
// with the square of the depth.
var benchDepths = []int{250, 1000, 3000}

// BenchmarkDeep decodes and answers requests whose properties nest objects
// deeply: the typed layer's decoding alone, the wire message decoding alone
// for comparison, and the whole typed call without a transport.
func BenchmarkDeep(b *testing.B) {
	for _, depth := range benchDepths {
		req := benchdata.DeepTransformRequest(depth)
		payload := benchdata.Marshal(req)
		b.Run(fmt.Sprintf("DecodeRequest/depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transforms.DecodeRequest(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("EncodeResult/depth=%d", depth), func(b *testing.B) {
			args, err := transforms.DecodeRequest(req)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := transforms.EncodeResult(args.Result(), true); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("ProtoUnmarshal/depth=%d", depth), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r pulumirpc.TransformRequest
				if err := proto.Unmarshal(payload, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("Invoke/depth=%d", depth), func(b *testing.B) {
			reg, err := callbacks.NewRegistry()
			if err != nil {
				b.Fatal(err)
			}
			tok, err := reg.Register(transforms.Adapt(benchIdentity))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := reg.Invoke(ctx, tok, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallbackMemory reports the heap one typed registration keeps
// alive (B/entry), over 100,000 transforms.Callback registrations with one
// server; ns/op is the time for all of them. The returned Callback messages
// are dropped, as a program drops them once it has sent them.
func BenchmarkCallbackMemory(b *testing.B) {
	const n = 100_000
	srv, err := callbacks.Listen()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	var perEntry float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tokens := make([]string, 0, n)
		for range n {
			cb, err := srv.Register(context.Background(), transforms.Adapt(benchIdentity), callbacks.Name("tag-resources"))
			if err != nil {
				b.Fatal(err)
			}
			tokens = append(tokens, cb.GetToken())
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		// The token slice is the caller's, not the registry's.
		perEntry = (float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(cap(tokens)*16)) / n
		b.StopTimer()
		for _, t := range tokens {
			srv.Registry().Unregister(t)
		}
		b.StartTimer()
	}
	b.ReportMetric(perEntry, "B/entry")
}
