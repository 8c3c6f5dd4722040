package transforms

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wireprops"
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

// decodePayload decodes a serialized TransformRequest into Args, reading
// the properties straight from the wire. Even on error, the returned Args
// holds the type and name if they were read.
// With shared, b is never written again, and decoded strings may share it.
func decodePayload(b []byte, shared bool) (*Args, error) {
	a := &Args{}
	var props, opts []byte
	var haveProps, haveOpts bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return a, errBadRequest
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= reqType && num <= reqOptions && num != reqCustom {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return a, errBadRequest
			}
			b = b[m:]
			switch num {
			case reqType, reqName, reqParent:
				if !utf8.Valid(v) {
					return a, errors.New("a string field holds invalid UTF-8")
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
				return a, errBadRequest
			}
			a.Custom, b = v != 0, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return a, errBadRequest
		}
		b = b[m:]
	}
	// Check the properties' encoding now and decode them when they are
	// asked for; encodings only a decode can judge are decoded now.
	if err := a.props.Check(props, shared); err != nil {
		return a, fmt.Errorf("properties: %w", err)
	}
	// Most options decode straight from the wire; the others through
	// protobuf.
	if !shared && len(opts) > 0 {
		opts = append([]byte(nil), opts...) // never written again
	}
	if o := (&ResourceOptions{}); decodeOptionsWire(opts, o) {
		a.Options = o
		a.URN = childURN(a.Parent, a.Type, a.Name)
		return a, nil
	}
	var err error
	var pb *pulumirpc.TransformResourceOptions
	if haveOpts {
		pb = &pulumirpc.TransformResourceOptions{}
		if err := proto.Unmarshal(opts, pb); err != nil {
			// protobuf's own wording varies between runs; say it plainly.
			return a, errors.New("options: not a valid TransformResourceOptions encoding")
		}
	}
	if a.Options, err = OptionsFromProto(pb); err != nil {
		return a, fmt.Errorf("options: %w", err)
	}
	a.URN = childURN(a.Parent, a.Type, a.Name)
	return a, nil
}

// encodePayload encodes res as a serialized TransformResponse, writing the
// properties straight to the wire. sizeHint is the request's size, which
// an identity-like result's response matches.
func encodePayload(res *Result, acceptsByteStrings bool, sizeHint int) ([]byte, error) {
	var ob []byte
	if o := res.Options; o != nil && wireEncodable(o) {
		// Most options encode straight to the wire; the others through
		// protobuf.
		if err := checkOptionsWire(o); err != nil {
			return nil, err
		}
		ob = appendOptionsWire(nil, o)
	} else if res.Options != nil {
		pb, err := res.Options.ToProto(acceptsByteStrings)
		if err != nil {
			return nil, err
		}
		if ob, err = proto.Marshal(pb); err != nil {
			return nil, err
		}
	}
	m, raw, sendProps := res.properties()
	return wireprops.EncodeResponse(wireprops.Response{
		Props: m, Raw: raw, SendRaw: sendProps,
		Options: ob, SendOptions: res.Options != nil,
	}, acceptsByteStrings, sizeHint)
}
