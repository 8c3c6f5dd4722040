package wire

import (
	"encoding/binary"
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protowire"
)

// The field numbers that a TransformResponse and a TransformInvokeResponse
// share: the property map (properties or args) and the options message.
const (
	responseProps   = 1
	responseOptions = 2
)

// Response is what a transform response carries, in either kind.
type Response struct {
	// Props, when non-nil, is encoded as the property map.
	Props resource.PropertyMap
	// Raw, when Props is nil and SendRaw is set, is sent as the property map
	// exactly as the engine encoded it.
	Raw     []byte
	SendRaw bool
	// Options is the encoded options message, sent when SendOptions is set
	// (an empty message still replaces the engine's options).
	Options     []byte
	SendOptions bool
}

// EncodeResponse encodes r as a serialized TransformResponse or
// TransformInvokeResponse, writing the properties straight to the wire.
// sizeHint is the request's size, which an identity-like response matches.
func EncodeResponse(r Response, acceptsByteStrings bool, sizeHint int) ([]byte, error) {
	if r.Props == nil {
		// Nothing to encode: the raw properties (if any) and the options, in
		// one exactly sized buffer.
		out := make([]byte, 0, 2*binary.MaxVarintLen64+len(r.Raw)+len(r.Options))
		if r.SendRaw {
			out = protowire.AppendTag(out, responseProps, protowire.BytesType)
			out = protowire.AppendBytes(out, r.Raw)
		}
		if r.SendOptions {
			out = protowire.AppendTag(out, responseOptions, protowire.BytesType)
			out = protowire.AppendBytes(out, r.Options)
		}
		return out, nil
	}
	// The properties are written back to front after the options.
	w := NewWriter(32 + len(r.Options) + sizeHint)
	if r.SendOptions {
		w.PrependBytes(r.Options)
		w.PrependVarint(uint64(len(r.Options)))
		w.PrependTag(responseOptions, protowire.BytesType)
	}
	mark := w.Len()
	if err := Encode(w, r.Props, acceptsByteStrings); err != nil {
		return nil, err
	}
	w.PrependMessageField(responseProps, mark)
	return w.Bytes(), nil
}

// DecodeFrom decodes a property map, sharing its bytes (see [DecodeShared])
// when shared is set because they are never written again.
func DecodeFrom(b []byte, shared bool) (resource.PropertyMap, error) {
	if shared {
		return DecodeShared(b)
	}
	return Decode(b)
}

// Lazy is a property map that stays encoded until it is read: the
// properties of a resource transform or the arguments of an invoke
// transform. Its zero value is an empty map.
type Lazy struct {
	m      resource.PropertyMap
	raw    []byte // the encoded map, while unread
	unread bool   // raw holds a map not decoded yet
	shared bool   // raw is never written again: decoded strings may share it
	err    error  // why raw did not decode
}

// Check checks the encoded map b and keeps it, to be decoded on first use;
// encodings that only a decode can judge are decoded now. With shared, b is
// never written again, and decoded strings may share it.
func (l *Lazy) Check(b []byte, shared bool) error {
	l.shared = shared
	switch err := Validate(b); {
	case err == nil:
		l.raw, l.unread = b, true
		return nil
	case errors.Is(err, ErrMerged):
		l.m, err = DecodeFrom(b, shared)
		return err
	default:
		return err
	}
}

// Map returns the map, decoding it on the first call. Never nil.
func (l *Lazy) Map() resource.PropertyMap {
	if l.unread {
		l.unread = false
		l.m, l.err = DecodeFrom(l.raw, l.shared)
		l.raw = nil
	}
	if l.m == nil {
		l.m = resource.PropertyMap{}
	}
	return l.m
}

// Set replaces the map with m.
func (l *Lazy) Set(m resource.PropertyMap) { l.unread, l.raw, l.m = false, nil, m }

// Unread returns the encoded map and true while it has not been read.
func (l *Lazy) Unread() ([]byte, bool) { return l.raw, l.unread }

// Err is why the map did not decode when it was read, if it did not.
func (l *Lazy) Err() error { return l.err }
