package invoketransforms_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/invoketransforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// benchRequest encodes an invoke transform request whose arguments hold n
// string entries of size bytes each.
func benchRequest(b *testing.B, n, size int) []byte {
	b.Helper()
	fields := make(map[string]*structpb.Value, n)
	val := make([]byte, size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	for i := range n {
		fields["key"+strconv.Itoa(i)] = structpb.NewStringValue(string(val))
	}
	out, err := proto.Marshal(&pulumirpc.TransformInvokeRequest{
		Token:   "aws:index/getRegion:getRegion",
		Args:    &structpb.Struct{Fields: fields},
		Options: &pulumirpc.TransformInvokeOptions{Provider: "urn:pulumi:dev::p::pulumi:providers:aws::default::id", Version: "6.0.0"},
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// rawEcho is the floor: a raw-kind function that answers with the request's
// arguments and options as they are, renumbered to the response's fields,
// without looking inside them.
func rawEcho(_ context.Context, p []byte) ([]byte, error) {
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		p = p[n:]
		m := protowire.ConsumeFieldValue(num, typ, p)
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		if typ == protowire.BytesType && (num == 2 || num == 3) {
			v, _ := protowire.ConsumeBytes(p)
			out = protowire.AppendTag(out, num-1, protowire.BytesType)
			out = protowire.AppendBytes(out, v)
		}
		p = p[m:]
	}
	return out, nil
}

// BenchmarkUnread compares, in process through Registry.Invoke, an invoke
// transform that reads nothing (its arguments are checked, not decoded)
// with a raw echo of the same request, and with one that reads them. The
// ratio unread/raw is what BENCHMARKS.md records; nothing here asserts it.
func BenchmarkUnread(b *testing.B) {
	sizes := []struct {
		name    string
		n, size int
	}{
		{"small", 4, 16},
		{"medium", 64, 256},
		{"1MB", 64, 16 << 10},
	}
	reg, err := callbacks.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	fns := []struct {
		name string
		fn   callbacks.Func
	}{
		{"raw", callbacks.Raw(rawEcho)},
		{"unread", invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			return a.Result(), nil
		})},
		{"read", invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			_ = a.Properties()
			return a.Result(), nil
		})},
	}
	for _, sz := range sizes {
		payload := benchRequest(b, sz.n, sz.size)
		for _, f := range fns {
			token, err := reg.Register(f.fn)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(sz.name+"/"+f.name, func(b *testing.B) {
				b.SetBytes(int64(len(payload)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := reg.Invoke(context.Background(), token, payload); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
