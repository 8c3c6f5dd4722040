package invoketransforms

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wireprops"
	"google.golang.org/protobuf/encoding/protowire"
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
	var token, args, opts []byte
	var haveArgs, haveOpts bool
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			a.setToken(token, shared)
			return a, errBadRequest
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= reqToken && num <= reqOptions {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				a.setToken(token, shared)
				return a, errBadRequest
			}
			b = b[m:]
			switch num {
			case reqToken:
				if !utf8.Valid(v) {
					a.setToken(token, shared)
					return a, errors.New("a string field holds invalid UTF-8")
				}
				token = v
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
			a.setToken(token, shared)
			return a, errBadRequest
		}
		b = b[m:]
	}
	if !shared && len(token)+len(opts) > 0 {
		// The strings of the token and the options share one copy, made
		// here, which is never written again.
		c := make([]byte, len(token)+len(opts))
		copy(c, token)
		copy(c[len(token):], opts)
		token, opts = c[:len(token)], c[len(token):]
	}
	a.Token = view(token)
	// Check the arguments' encoding now and decode them when they are asked
	// for; encodings only a decode can judge are decoded now.
	if err := a.args.Check(args, shared); err != nil {
		return a, fmt.Errorf("args: %w", err)
	}
	o := &InvokeOptions{}
	if err := decodeOptions(opts, o); err != nil {
		return a, err
	}
	a.Options = o
	return a, nil
}

// setToken sets a's token to b, a copy of it unless shared.
func (a *Args) setToken(b []byte, shared bool) {
	if shared {
		a.Token = view(b)
	} else {
		a.Token = string(b)
	}
}

// encodePayload encodes res as a serialized TransformInvokeResponse,
// writing the arguments and the options straight to the wire. sizeHint is
// the request's size, which an identity-like result's response matches.
func encodePayload(res *Result, acceptsByteStrings bool, sizeHint int) ([]byte, error) {
	if res.Options != nil {
		if err := checkOptions(res.Options); err != nil {
			return nil, err
		}
	}
	m, raw, sendArgs := res.arguments()
	if m == nil {
		// Nothing to encode: the arguments as received (if sent) and the
		// options, in one exactly sized buffer.
		size, osize := 0, 0
		if sendArgs {
			size += 1 + protowire.SizeBytes(len(raw))
		}
		if res.Options != nil {
			osize = sizeOptions(res.Options)
			size += 1 + protowire.SizeBytes(osize)
		}
		out := make([]byte, 0, size)
		if sendArgs {
			out = protowire.AppendTag(out, resArgs, protowire.BytesType)
			out = protowire.AppendBytes(out, raw)
		}
		if res.Options != nil {
			out = protowire.AppendTag(out, resOptions, protowire.BytesType)
			out = protowire.AppendVarint(out, uint64(osize))
			out = appendOptions(out, res.Options)
		}
		return out, nil
	}
	var ob []byte
	if res.Options != nil {
		ob = appendOptions(make([]byte, 0, sizeOptions(res.Options)), res.Options)
	}
	return wireprops.EncodeResponse(wireprops.Response{
		Props: m, Raw: raw, SendRaw: sendArgs,
		Options: ob, SendOptions: res.Options != nil,
	}, acceptsByteStrings, sizeHint)
}
