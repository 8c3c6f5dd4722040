package callbacks

import (
	"bytes"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// split cuts b into buffers at the given offsets.
func split(b []byte, at ...int) mem.BufferSlice {
	var s mem.BufferSlice
	prev := 0
	for _, a := range at {
		if a > prev && a < len(b) {
			s = append(s, mem.SliceBuffer(b[prev:a]))
			prev = a
		}
	}
	return append(s, mem.SliceBuffer(b[prev:]))
}

// checkRequestCodec holds the codec's decoding of b, cut into buffers at
// the given offsets, to the protobuf runtime's: the same message, or an
// error for both.
func checkRequestCodec(t *testing.T, b []byte, at ...int) {
	t.Helper()
	want := &pulumirpc.CallbackInvokeRequest{}
	wantErr := proto.Unmarshal(b, want)
	got := &pulumirpc.CallbackInvokeRequest{}
	err := wireCodec{}.Unmarshal(split(b, at...), got)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%x cut at %v: codec error %v, protobuf error %v", b, at, err, wantErr)
	case err == nil && !proto.Equal(got, want):
		t.Fatalf("%x cut at %v: codec decoded %v, protobuf %v", b, at, got, want)
	}
}

func invokeRequest(token string, payload []byte) []byte {
	b, _ := proto.Marshal(&pulumirpc.CallbackInvokeRequest{Token: token, Request: payload})
	return b
}

func TestCodecRequestLikeProtobuf(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("payload."), 10000) // above inlineResponse: may be a view
	field := func(num protowire.Number, typ protowire.Type, v []byte) []byte {
		b := protowire.AppendTag(nil, num, typ)
		if typ == protowire.BytesType {
			return protowire.AppendBytes(b, v)
		}
		return append(b, v...)
	}
	cases := map[string][]byte{
		"empty":            nil,
		"token only":       invokeRequest("tok", nil),
		"payload only":     invokeRequest("", []byte("x")),
		"both":             invokeRequest("2d0b7e4e-9a8f-4c1a-8a3e-5f0e6f7b9c01", []byte("a payload")),
		"large payload":    invokeRequest("tok", big),
		"fields reversed":  append(field(2, protowire.BytesType, []byte("p")), field(1, protowire.BytesType, []byte("t"))...),
		"token repeated":   append(invokeRequest("a", []byte("p")), field(1, protowire.BytesType, []byte("b"))...),
		"payload repeated": append(invokeRequest("a", []byte("p")), field(2, protowire.BytesType, []byte("q"))...),
		"unknown field":    append(invokeRequest("a", []byte("p")), field(9, protowire.VarintType, []byte{1})...),
		"token as varint":  field(1, protowire.VarintType, []byte{5}),
		"token not UTF-8":  field(1, protowire.BytesType, []byte{0xff, 0xfe}),
		"field number 0":   field(0, protowire.BytesType, []byte("x")),
		"length too long":  {0x0a, 0x05, 'a'},
		"truncated tag":    {0x80},
		"varint overflow":  {0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"long varint":      {0x12, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 'x'},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			checkRequestCodec(t, b)
			for i := 1; i < len(b) && i < 64; i++ {
				checkRequestCodec(t, b, i)
				checkRequestCodec(t, b, 1, i, i+1, i+3)
			}
			if len(b) > 64 {
				checkRequestCodec(t, b, 16384, 16390, 32768)
				checkRequestCodec(t, b, len(b)/2)
			}
		})
	}
}

func FuzzCodecRequest(f *testing.F) {
	f.Add(invokeRequest("tok", []byte("payload")), uint16(3), uint16(9))
	f.Add(invokeRequest("", nil), uint16(0), uint16(0))
	f.Add(append(invokeRequest("a", []byte("p")), 0x12, 0x01, 'q'), uint16(2), uint16(5))
	f.Fuzz(func(t *testing.T, b []byte, i, j uint16) {
		checkRequestCodec(t, b, int(i), int(j))
	})
}

// recordingPool counts the buffers given back to it.
type recordingPool struct{ puts int }

func (p *recordingPool) Get(n int) *[]byte { b := make([]byte, n); return &b }
func (p *recordingPool) Put(*[]byte)       { p.puts++ }

func pooled(pool mem.BufferPool, b []byte) mem.Buffer {
	c := append([]byte(nil), b...)
	return mem.NewBuffer(&c, pool)
}

// A payload the codec returns as a view of a pooled buffer must keep that
// buffer out of the pool, where the next message would overwrite it.
func TestCodecViewKeepsBufferFromPool(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte{7}, 2*inlineResponse)
	var pool recordingPool
	data := mem.BufferSlice{pooled(&pool, invokeRequest("tok", payload))}
	got := &pulumirpc.CallbackInvokeRequest{}
	if err := (wireCodec{}).Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	data.Free() // as gRPC does once Unmarshal returns
	if pool.puts != 0 {
		t.Fatalf("the buffer the payload is a view of went back to the pool")
	}
	if !bytes.Equal(got.GetRequest(), payload) {
		t.Fatal("payload changed")
	}

	// A small payload is copied, and its buffer recycled.
	pool = recordingPool{}
	data = mem.BufferSlice{pooled(&pool, invokeRequest("tok", bytes.Repeat([]byte{8}, 4096)))}
	if err := (wireCodec{}).Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	data.Free()
	if pool.puts != 1 {
		t.Fatalf("a copied payload's buffer was not recycled: %d puts", pool.puts)
	}
}

func TestCodecResponseLikeProtobuf(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 127, 128, inlineResponse, inlineResponse + 1, 1 << 20} {
		p := bytes.Repeat([]byte{'r'}, n)
		m := &pulumirpc.CallbackInvokeResponse{Response: p}
		want, _ := proto.Marshal(m)
		got, err := wireCodec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want) {
			t.Fatalf("%d bytes: codec and protobuf encode differently", n)
		}
		if n > inlineResponse && &got[len(got)-1].ReadOnlyData()[0] != &p[0] {
			t.Fatalf("%d bytes: the payload was copied", n)
		}
	}
	// Other messages go through the protobuf codec.
	other := &pulumirpc.CallbackInvokeRequest{Token: "t", Request: []byte("r")}
	want, _ := proto.Marshal(other)
	got, err := wireCodec{}.Marshal(other)
	if err != nil || !bytes.Equal(got.Materialize(), want) {
		t.Fatalf("other message: %v", err)
	}
}
