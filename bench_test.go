package callbacks_test

// Benchmarks of the core: the registry (register, look up, unregister, memory
// per registration), Invoke of every kind with and without a transport, and
// the core's payload decoding and encoding alone. Run them with
//
//	go test -run '^$' -bench . -benchmem -cpu 1,2 .
//
// See BENCHMARKS.md for a full run and what it shows. Nothing here asserts
// on time.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/calllog"
	"github.com/langhost/callbacks/internal/testkit/benchdata"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// benchSizes are the registry sizes the registry benchmarks run at.
var benchSizes = []int{1, 1_000, 100_000}

// benchRaw is a registration that does no work, so that registry benchmarks
// measure the registry.
var benchRaw = callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil })

// benchFilled returns a registry holding n registrations and their tokens in
// random order.
func benchFilled(b *testing.B, n int) (*callbacks.Registry, []string) {
	b.Helper()
	reg := newTestRegistry(b)
	tokens := make([]string, n)
	for i := range tokens {
		tok, err := reg.Register(benchRaw)
		if err != nil {
			b.Fatal(err)
		}
		tokens[i] = tok
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(tokens), func(i, j int) { tokens[i], tokens[j] = tokens[j], tokens[i] })
	return reg, tokens
}

// benchBatch is how many registrations the register and unregister
// benchmarks make or remove between two pauses of the timer, which keep the
// registry at its nominal size.
const benchBatch = 1024

func BenchmarkRegistry(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("Register/entries=%d", n), func(b *testing.B) {
			reg, _ := benchFilled(b, n)
			added := make([]string, 0, benchBatch)
			b.ReportAllocs()
			for b.Loop() {
				tok, err := reg.Register(benchRaw)
				if err != nil {
					b.Fatal(err)
				}
				if added = append(added, tok); len(added) == benchBatch {
					b.StopTimer()
					for _, t := range added {
						reg.Unregister(t)
					}
					added = added[:0]
					b.StartTimer()
				}
			}
		})
		b.Run(fmt.Sprintf("Unregister/entries=%d", n), func(b *testing.B) {
			reg, _ := benchFilled(b, n)
			var pending []string
			b.ReportAllocs()
			for b.Loop() {
				if len(pending) == 0 {
					b.StopTimer()
					for range benchBatch {
						tok, _ := reg.Register(benchRaw)
						pending = append(pending, tok)
					}
					b.StartTimer()
				}
				if !reg.Unregister(pending[len(pending)-1]) {
					b.Fatal("token was not registered")
				}
				pending = pending[:len(pending)-1]
			}
		})
		b.Run(fmt.Sprintf("Lookup/entries=%d", n), func(b *testing.B) {
			reg, tokens := benchFilled(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, ok := reg.Lookup(tokens[i]); !ok {
					b.Fatal("token not found")
				}
				if i++; i == len(tokens) {
					i = 0
				}
			}
		})
		// Sixteen goroutines look up at once, as the engine's calls arrive
		// on sixteen streams at concurrency 16, each call for a different
		// token taken in random order: every lookup misses the CPU caches
		// once the registry outgrows them.
		b.Run(fmt.Sprintf("Lookup16/entries=%d", n), func(b *testing.B) {
			reg, tokens := benchFilled(b, n)
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(len(tokens))
				for pb.Next() {
					if _, _, ok := reg.Lookup(tokens[i]); !ok {
						b.Error("token not found")
						return
					}
					if i++; i == len(tokens) {
						i = 0
					}
				}
			})
		})
		// Sixteen goroutines look up one token among n, as the engine calls
		// a stack transform for every resource while other callbacks are
		// registered.
		b.Run(fmt.Sprintf("Lookup16Same/entries=%d", n), func(b *testing.B) {
			reg, tokens := benchFilled(b, n)
			tok := tokens[len(tokens)/2]
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, ok := reg.Lookup(tok); !ok {
						b.Error("token not found")
						return
					}
				}
			})
		})
		// The same through Registry.Invoke, which adds the per-call state a
		// function sees.
		b.Run(fmt.Sprintf("Invoke16/entries=%d", n), func(b *testing.B) {
			reg, tokens := benchFilled(b, n)
			payload := []byte("x")
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				i := rand.IntN(len(tokens))
				for pb.Next() {
					if _, err := reg.Invoke(ctx, tokens[i], payload); err != nil {
						b.Error(err)
						return
					}
					if i++; i == len(tokens) {
						i = 0
					}
				}
			})
		})
	}
}

// BenchmarkRegistryMemory reports the heap that one registration keeps
// alive (B/entry), over 100,000 registrations into an empty registry; ns/op
// is the time for all of them. "shared" registers one Func value again and
// again; "own" builds a new typed Func for every registration, as a program
// registering one transform per resource does.
func BenchmarkRegistryMemory(b *testing.B) {
	const n = 100_000
	identity := func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return &pulumirpc.TransformResponse{Properties: r.GetProperties(), Options: r.GetOptions()}, nil
	}
	for _, mode := range []string{"shared", "own"} {
		b.Run(mode, func(b *testing.B) {
			var perEntry float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				reg := newTestRegistry(b)
				for range n {
					f := benchRaw
					if mode == "own" {
						f = callbacks.ResourceTransform(identity)
					}
					if _, err := reg.Register(f, callbacks.Name("tag-resources")); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(reg)
				perEntry = float64(after.HeapAlloc-before.HeapAlloc) / n
			}
			b.ReportMetric(perEntry, "B/entry")
		})
	}
}

// benchKind is one callback kind: how to build its request for a payload
// size and an identity-like function for it.
type benchKind struct {
	name    string
	fn      callbacks.Func
	request func(size string) proto.Message
}

var benchKinds = []benchKind{
	{"ResourceTransform", callbacks.ResourceTransform(
		func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			return &pulumirpc.TransformResponse{Properties: r.GetProperties(), Options: r.GetOptions()}, nil
		}), func(s string) proto.Message { return benchdata.TransformRequest(s) }},
	{"InvokeTransform", callbacks.InvokeTransform(
		func(_ context.Context, r *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
			return &pulumirpc.TransformInvokeResponse{Args: r.GetArgs(), Options: r.GetOptions()}, nil
		}), func(s string) proto.Message { return benchdata.InvokeTransformRequest(s) }},
	{"ResourceHook", callbacks.ResourceHook(
		func(_ context.Context, _ *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			return &pulumirpc.ResourceHookResponse{}, nil
		}), func(s string) proto.Message { return benchdata.ResourceHookRequest(s) }},
	{"ErrorHook", callbacks.ErrorHook(
		func(_ context.Context, r *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
			return &pulumirpc.ErrorHookResponse{Retry: len(r.GetErrors()) < 3}, nil
		}), func(s string) proto.Message { return benchdata.ErrorHookRequest(s) }},
	{"StateMigration", callbacks.StateMigration(
		func(_ context.Context, r *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
			return &pulumirpc.StateMigrationResponse{NewState: r.GetOldState()}, nil
		}), func(s string) proto.Message { return benchdata.StateMigrationRequest(s) }},
	{"Raw", callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }),
		func(s string) proto.Message { return benchdata.TransformRequest(s) }},
}

// benchPayloads holds the serialized requests, built once per kind and size.
var benchPayloads = map[string][]byte{}

func benchPayload(k benchKind, size string) []byte {
	key := k.name + "/" + size
	if p, ok := benchPayloads[key]; ok {
		return p
	}
	p := benchdata.Marshal(k.request(size))
	benchPayloads[key] = p
	return p
}

// BenchmarkInvokeRegistry is Registry.Invoke without a transport: lookup,
// decoding, the function and encoding. Allocations here are the server's own.
func BenchmarkInvokeRegistry(b *testing.B) {
	for _, k := range benchKinds {
		for _, size := range benchdata.Sizes {
			b.Run(k.name+"/"+size, func(b *testing.B) {
				reg := newTestRegistry(b)
				tok, err := reg.Register(k.fn)
				if err != nil {
					b.Fatal(err)
				}
				payload := benchPayload(k, size)
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

// BenchmarkInvoke is one engine call at a time over a transport, every kind
// and payload size. The allocations include the client's.
func BenchmarkInvoke(b *testing.B) {
	for _, tr := range transports {
		for _, k := range benchKinds {
			for _, size := range benchdata.Sizes {
				b.Run(tr.name+"/"+k.name+"/"+size, func(b *testing.B) {
					h := tr.serve(b)
					srv, client := h.srv, h.client
					cb, err := srv.Register(context.Background(), k.fn)
					if err != nil {
						b.Fatal(err)
					}
					req := &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: benchPayload(k, size)}
					ctx := context.Background()
					b.SetBytes(int64(len(req.Request)))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := client.Invoke(ctx, req); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// BenchmarkInvoke16 is sixteen concurrent resource transform calls on one
// connection, as bench/peers sends at concurrency 16.
func BenchmarkInvoke16(b *testing.B) {
	k := benchKinds[0]
	for _, tr := range transports {
		for _, size := range benchdata.Sizes {
			b.Run(tr.name+"/"+k.name+"/"+size, func(b *testing.B) {
				h := tr.serve(b)
				srv, client := h.srv, h.client
				cb, err := srv.Register(context.Background(), k.fn)
				if err != nil {
					b.Fatal(err)
				}
				req := &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: benchPayload(k, size)}
				b.SetBytes(int64(len(req.Request)))
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

// BenchmarkCodec is the core's conversion alone: decoding a resource
// transform request into its message and encoding the identity response, as
// the typed adapter does around every user function. The options-only rows
// isolate the options message.
func BenchmarkCodec(b *testing.B) {
	for _, size := range benchdata.Sizes {
		payload := benchdata.Marshal(benchdata.TransformRequest(size))
		b.Run("DecodeRequest/"+size, func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				var req pulumirpc.TransformRequest
				if err := proto.Unmarshal(payload, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("EncodeResponse/"+size, func(b *testing.B) {
			req := benchdata.TransformRequest(size)
			res := &pulumirpc.TransformResponse{Properties: req.GetProperties(), Options: req.GetOptions()}
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := proto.Marshal(res); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	opts := benchdata.Marshal(benchdata.Options())
	b.Run("DecodeOptions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var o pulumirpc.TransformResourceOptions
			if err := proto.Unmarshal(opts, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodeOptions", func(b *testing.B) {
		o := benchdata.Options()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := proto.Marshal(o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkInvokePulumiLog is BenchmarkInvoke's small resource hook on
// bufconn, with PULUMI_LOG_OTLP_ENDPOINT absent (what every deployment
// outside the CLI runs, and what the off switches run) and present,
// pointing at a receiver that keeps nothing. dropped/op counts the records
// the queue could not hold: the callback never waits for the receiver.
func BenchmarkInvokePulumiLog(b *testing.B) {
	k := benchKinds[2] // ResourceHook
	for _, present := range []bool{false, true} {
		name := "absent"
		if present {
			name = "present"
		}
		b.Run(name, func(b *testing.B) {
			b.Setenv(calllog.EndpointEnv, "")
			b.Setenv(calllog.SwitchEnv, "")
			if present {
				b.Setenv(calllog.EndpointEnv, startDiscardingReceiver(b))
			}
			h := serve(b)
			cb, err := h.srv.Register(context.Background(), k.fn)
			if err != nil {
				b.Fatal(err)
			}
			req := &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: benchPayload(k, "small")}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.client.Invoke(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if st, ok := callbacks.PulumiLogStats(h.srv); ok {
				b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
			} else if present {
				b.Fatal("no exporter with the variable present")
			}
		})
	}
}

// discardingReceiver is an OTLP logs receiver that answers every export
// and keeps nothing.
type discardingReceiver struct {
	collogspb.UnimplementedLogsServiceServer
}

func (discardingReceiver) Export(context.Context, *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func startDiscardingReceiver(b *testing.B) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(s, discardingReceiver{})
	go func() { _ = s.Serve(lis) }()
	b.Cleanup(s.Stop)
	return lis.Addr().String()
}
