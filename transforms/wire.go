package transforms

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of TransformRequest and TransformResponse.
const (
	reqType       = 1
	reqName       = 2
	reqCustom     = 3
	reqParent     = 4
	reqProperties = 5
	reqOptions    = 6
	resProperties = 1
	resOptions    = 2
)

// errBadRequest says that the payload is not a valid protobuf encoding. The
// adapter's message names the request already, so this carries no prefix.
var errBadRequest = errors.New("malformed protobuf encoding")

// errStringUTF8 says that a string field of the request is not valid UTF-8.
var errStringUTF8 = errors.New("a string field holds invalid UTF-8")

// decodePayload decodes a serialized TransformRequest into Args, reading
// the properties straight from the wire. Even on error, the returned Args
// holds the type and name if they were read.
// With shared, b is never written again, and decoded strings may share it.
//
// It runs on the goroutine the call arrived on, before the function's own
// goroutine starts (see callbacks.NewFunc): checking the properties, which
// goes as deep as they nest, grows no new goroutine's stack.
func decodePayload(b []byte, shared bool) (*Args, error) {
	a := &Args{}
	props, opts, haveOpts, err := a.scan(b)
	if err != nil {
		return a, err
	}
	// Check the properties' encoding now and decode them when they are
	// asked for; encodings only a decode can judge are decoded now.
	if err := a.props.Check(props, shared); err != nil {
		return a, wrapError("properties", err)
	}
	// Most options decode straight from the wire; the others through
	// protobuf.
	if !shared && len(opts) > 0 {
		opts = append([]byte(nil), opts...) // never written again
	}
	o := &ResourceOptions{}
	if !decodeOptionsWire(opts, o) {
		if o, err = decodeOptionsProto(opts, haveOpts); err != nil {
			return a, err
		}
	}
	a.Options = o
	a.URN = childURN(a.Parent, a.Type, a.Name)
	return a, nil
}

// wrapError is err about the named part of the request.
//
//go:noinline
func wrapError(part string, err error) error {
	return fmt.Errorf("%s: %w", part, err)
}

// decodeOptionsProto decodes options through the protobuf runtime.
//
//go:noinline
func decodeOptionsProto(opts []byte, haveOpts bool) (*ResourceOptions, error) {
	var pb *pulumirpc.TransformResourceOptions
	if haveOpts {
		pb = &pulumirpc.TransformResourceOptions{}
		if err := proto.Unmarshal(opts, pb); err != nil {
			// protobuf's own wording varies between runs; say it plainly.
			return nil, errors.New("options: not a valid TransformResourceOptions encoding")
		}
	}
	o, err := optionsFromProto(pb)
	if err != nil {
		return nil, wrapError("options", err)
	}
	return o, nil
}

// scan reads the fields of a serialized TransformRequest: it sets a's
// type, name, custom flag and parent, even on error if they were read, and
// returns the encoded properties and options.
func (a *Args) scan(b []byte) (props, opts []byte, haveOpts bool, err error) {
	var haveProps bool
	for size := len(b); len(b) > 0; {
		at := size - len(b)
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, nil, false, errBadRequest
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= reqType && num <= reqOptions && num != reqCustom {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, nil, false, errBadRequest
			}
			b = b[m:]
			a.layout.Note(num, reqProperties, reqOptions, at, at+n+m-len(v), at+n+m)
			switch num {
			case reqType, reqName, reqParent:
				if !utf8.Valid(v) {
					return nil, nil, false, errStringUTF8
				}
				switch num {
				case reqType:
					a.Type = string(v)
				case reqName:
					a.Name = string(v)
				default:
					a.Parent = resource.URN(v)
				}
			case reqProperties:
				// A repeated embedded message is merged, as protobuf
				// merges it: for a Struct, the entries of both, the later
				// winning for a key, which is what their concatenation
				// decodes to.
				if haveProps {
					props = append(append([]byte(nil), props...), v...)
				} else {
					props, haveProps = v, true
				}
			case reqOptions:
				if haveOpts {
					opts = append(append([]byte(nil), opts...), v...)
				} else {
					opts, haveOpts = v, true
				}
			}
			continue
		}
		if num == reqCustom && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return nil, nil, false, errBadRequest
			}
			a.Custom, b = v != 0, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, nil, false, errBadRequest
		}
		b = b[m:]
	}
	return props, opts, haveOpts, nil
}

// encodePayload encodes res as a serialized TransformResponse, writing the
// properties straight to the wire. req is the Args the call's request
// decoded to and payload the request's bytes, whose size an identity-like
// result's response matches (both nil outside a call). With inPlace, the
// bytes belong to the call, and a response that sends the properties back
// unread and the options as received is made in them, without a copy.
func encodePayload(res *Result, acceptsByteStrings bool, req *Args, payload []byte, inPlace bool) ([]byte, error) {
	var ob []byte
	if o := res.Options; o != nil && wireEncodable(o) {
		// Most options encode straight to the wire; the others through
		// protobuf.
		if err := checkOptionsWire(o); err != nil {
			return nil, err
		}
		ob = appendOptionsWire(make([]byte, 0, sizeOptionsWire(o)), o)
	} else if o != nil {
		var err error
		if ob, err = encodeOptionsProto(o, acceptsByteStrings); err != nil {
			return nil, err
		}
	}
	m, raw, sendProps := res.properties()
	if inPlace && req != nil && res.from == req && raw != nil {
		if out, ok := req.layout.Answer(payload, reqProperties, reqOptions, res.Options != nil, ob); ok {
			return out, nil
		}
	}
	return wire.EncodeResponse(wire.Response{
		Props: m, Raw: raw, SendRaw: sendProps,
		Options: ob, SendOptions: res.Options != nil,
	}, acceptsByteStrings, len(payload))
}

// encodeOptionsProto encodes options through the protobuf runtime.
//
//go:noinline
func encodeOptionsProto(o *ResourceOptions, acceptsByteStrings bool) ([]byte, error) {
	pb, err := o.toProto(acceptsByteStrings)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(pb)
}

// needsByteStringChoice reports whether encoding res depends on the
// registration's byte-string choice: only property values do (the
// properties, or a replacement trigger, which only protobuf encodes).
func (res *Result) needsByteStringChoice() bool {
	if m, _, _ := res.properties(); m != nil {
		return true
	}
	return res.Options != nil && !wireEncodable(res.Options)
}
