package invoketransforms

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wireprops"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Field numbers of TransformInvokeRequest and TransformInvokeResponse.
const (
	reqToken   = 1
	reqArgs    = 2
	reqOptions = 3
	resArgs    = 1
	resOptions = 2
)

// errBadRequest says that the payload is not a valid protobuf encoding. The
// adapter's message names the request already, so this carries no prefix.
var errBadRequest = errors.New("malformed protobuf encoding")

// decodePayload decodes a serialized TransformInvokeRequest into Args,
// checking the arguments' encoding without decoding them. Even on error,
// the returned Args holds the token if it was read. With shared, b is never
// written again, and decoded strings may share it.
func decodePayload(b []byte, shared bool) (*Args, error) {
	a := &Args{}
	var args, opts []byte
	var haveArgs, haveOpts bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return a, errBadRequest
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= reqToken && num <= reqOptions {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return a, errBadRequest
			}
			b = b[m:]
			switch num {
			case reqToken:
				if !utf8.Valid(v) {
					return a, errors.New("a string field holds invalid UTF-8")
				}
				a.Token = string(v)
			case reqArgs:
				// A repeated embedded message is merged, as protobuf
				// merges it: the concatenation decodes to the merge.
				if haveArgs {
					args = append(append([]byte(nil), args...), v...)
				} else {
					args, haveArgs = v, true
				}
			default:
				if haveOpts {
					opts = append(append([]byte(nil), opts...), v...)
				} else {
					opts, haveOpts = v, true
				}
			}
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return a, errBadRequest
		}
		b = b[m:]
	}
	// Check the arguments' encoding now and decode them when they are asked
	// for; encodings only a decode can judge are decoded now.
	if err := a.args.Check(args, shared); err != nil {
		return a, fmt.Errorf("args: %w", err)
	}
	var pb *pulumirpc.TransformInvokeOptions
	if haveOpts {
		pb = &pulumirpc.TransformInvokeOptions{}
		if err := proto.Unmarshal(opts, pb); err != nil {
			// protobuf's own wording varies between runs; say it plainly.
			return a, errors.New("options: not a valid TransformInvokeOptions encoding")
		}
	}
	a.Options = OptionsFromProto(pb)
	return a, nil
}

// encodePayload encodes res as a serialized TransformInvokeResponse,
// writing the arguments straight to the wire. sizeHint is the request's
// size, which an identity-like result's response matches.
func encodePayload(res *Result, acceptsByteStrings bool, sizeHint int) ([]byte, error) {
	var ob []byte
	if res.Options != nil {
		var err error
		if ob, err = proto.Marshal(res.Options.ToProto()); err != nil {
			return nil, err
		}
	}
	m, raw, sendArgs := res.arguments()
	return wireprops.EncodeResponse(wireprops.Response{
		Props: m, Raw: raw, SendRaw: sendArgs,
		Options: ob, SendOptions: res.Options != nil,
	}, acceptsByteStrings, sizeHint)
}
