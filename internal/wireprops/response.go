package wireprops

import (
	"encoding/binary"

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
