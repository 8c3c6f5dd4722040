package callbacks

import (
	"encoding/binary"
	"unicode/utf8"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// wireCodec is the server's gRPC codec. It is the protobuf codec, except
// for the two Callbacks messages, whose payloads it does not copy more than
// it must:
//
//   - The request's payload is copied once, straight from gRPC's receive
//     buffers into a slice of its own; the protobuf codec first joins the
//     buffers into one (a copy) and then copies the field out of it (a
//     second). A payload of more than 32 KiB that arrived in one buffer is
//     not copied at all: it is a view of that buffer, which is kept from
//     gRPC's pool. Large payloads keep gRPC from recycling their receive buffers (see
//     unmarshalRequest), so that their memory can be collected before the
//     response is built.
//   - A response of more than 32 KiB is framed around the payload the
//     function returned, which is sent from where it is; the protobuf codec
//     copies it into a new buffer. A smaller one is copied into its frame.
//
// encoding.CodecV2, the mem buffers and grpc.ForceServerCodecV2 are marked
// experimental in grpc-go. They are used because they pay for large
// payloads: gRPC's own codec makes a 300 MiB property peak at about 5x its
// size in the server's memory, this one at about 2x (cmd/bigpayload).
//
// Anything the fast paths do not handle exactly as the protobuf runtime
// would (an unknown or repeated field, a malformed message) goes through
// the protobuf codec, so the result and the errors are the same.
type wireCodec struct{}

var _ encoding.CodecV2 = wireCodec{}

// protoCodec is gRPC's own protobuf codec, which wireCodec defers to.
var protoCodec = encoding.GetCodecV2(proto.Name)

// Name is the content subtype gRPC negotiates: this is a protobuf codec.
func (wireCodec) Name() string { return proto.Name }

// Field numbers of CallbackInvokeRequest and CallbackInvokeResponse.
const (
	invokeReqToken   = 1
	invokeReqRequest = 2
	invokeResResp    = 1
)

// inlineResponse is the size up to which a response is copied into the
// same buffer as its framing: below it, one small copy is cheaper than a
// second buffer for the transport to walk.
const inlineResponse = 32 << 10

// Marshal encodes v. A CallbackInvokeResponse without unknown fields is the
// framing of its one field followed by the payload itself, not a copy.
func (wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*pulumirpc.CallbackInvokeResponse)
	if !ok || m == nil || len(m.ProtoReflect().GetUnknown()) != 0 {
		return protoCodec.Marshal(v)
	}
	p := m.GetResponse()
	if len(p) == 0 {
		return nil, nil // proto3: an empty bytes field is not sent
	}
	n := protowire.SizeTag(invokeResResp) + protowire.SizeVarint(uint64(len(p)))
	if len(p) <= inlineResponse {
		b := make([]byte, 0, n+len(p))
		b = protowire.AppendTag(b, invokeResResp, protowire.BytesType)
		b = protowire.AppendBytes(b, p)
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	h := make([]byte, 0, n)
	h = protowire.AppendTag(h, invokeResResp, protowire.BytesType)
	h = protowire.AppendVarint(h, uint64(len(p)))
	return mem.BufferSlice{mem.SliceBuffer(h), mem.SliceBuffer(p)}, nil
}

// Unmarshal decodes data into v.
func (wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if m, ok := v.(*pulumirpc.CallbackInvokeRequest); ok && m != nil && unmarshalRequest(data, m) {
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

// largeRequest is the size from which a payload that arrived in several
// buffers is taken from gRPC's buffer pool rather than returned to it.
const largeRequest = 4 << 20

// unmarshalRequest decodes a CallbackInvokeRequest that holds a token and
// a payload once each, and nothing else, as the engine sends it, and
// reports false, having changed nothing, for anything else.
func unmarshalRequest(data mem.BufferSlice, m *pulumirpc.CallbackInvokeRequest) bool {
	c := cursor{bufs: make([][]byte, 0, len(data))}
	for _, b := range data {
		if d := b.ReadOnlyData(); len(d) > 0 {
			c.bufs = append(c.bufs, d)
		}
	}
	c.left = data.Len()
	var token string
	var payload []byte
	var haveToken, havePayload bool
	for c.left > 0 {
		tag, ok := c.varint()
		if !ok {
			return false
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType || num != invokeReqToken && num != invokeReqRequest {
			return false
		}
		n, ok := c.varint()
		if !ok || n > uint64(c.left) {
			return false
		}
		switch num {
		case invokeReqToken:
			if haveToken {
				return false
			}
			t := make([]byte, n)
			c.copy(t)
			if !utf8.Valid(t) {
				return false // the protobuf codec says why
			}
			token, haveToken = string(t), true
		default:
			if havePayload {
				return false
			}
			payload, havePayload = c.take(int(n)), true
		}
	}
	if c.viewed || len(payload) >= largeRequest {
		// gRPC frees data once this returns, which puts its buffers back in
		// its pool. A payload that is a view of one must keep it out of the
		// pool. The buffers of a large payload that was copied would stay
		// in the pool, as large as the payload, while the call runs. An
		// extra reference keeps them out of the pool, and once nothing
		// refers to them they are garbage like any other.
		data.Ref()
	}
	m.Token, m.Request = token, payload
	return true
}

// cursor reads a message held in several buffers.
type cursor struct {
	bufs [][]byte // what is left to read, the first buffer from off
	off  int
	left int // bytes left in all of bufs
	// viewed is set once take returned a view of a buffer.
	viewed bool
}

func (c *cursor) byte() byte {
	b := c.bufs[0][c.off]
	c.advance(1)
	return b
}

func (c *cursor) advance(n int) {
	c.off += n
	c.left -= n
	if c.off == len(c.bufs[0]) {
		c.bufs, c.off = c.bufs[1:], 0
	}
}

// varint reads a varint as protowire.ConsumeVarint does.
func (c *cursor) varint() (uint64, bool) {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64 && c.left > 0; i++ {
		b := c.byte()
		if i == 9 && b > 1 {
			return 0, false // overflows 64 bits
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// copy fills dst with the next len(dst) bytes, which are there.
func (c *cursor) copy(dst []byte) {
	for len(dst) > 0 {
		n := copy(dst, c.bufs[0][c.off:])
		dst = dst[n:]
		c.advance(n)
	}
}

// take returns the next n bytes, which are there: a view of the buffer
// that holds them all if they are many, or else a copy.
func (c *cursor) take(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	if b := c.bufs[0][c.off:]; len(b) >= n && n > inlineResponse {
		v := b[:n:n]
		c.advance(n)
		c.viewed = true
		return v
	}
	v := make([]byte, n)
	c.copy(v)
	return v
}
