package invoketransforms

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wire/wirefield"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
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

// errTokenUTF8 says that the request's token is not valid UTF-8.
var errTokenUTF8 = errors.New("a string field holds invalid UTF-8")

// decodePayload decodes a serialized TransformInvokeRequest into Args,
// checking the arguments' encoding without decoding them. Even on error,
// the returned Args holds the token if it was read. With shared, b is never
// written again, and decoded strings may share it.
//
// It runs on the goroutine the call arrived on, before the function's own
// goroutine starts (see callbacks.NewFunc): checking the arguments, which
// goes as deep as they nest, grows no new goroutine's stack.
func decodePayload(b []byte, shared bool) (*Args, error) {
	a := &Args{}
	args, opts, err := a.scan(b, shared)
	if err != nil {
		return a, err
	}
	// Check the arguments' encoding now and decode them when they are asked
	// for; encodings only a decode can judge are decoded now.
	if err := a.args.Check(args, shared); err != nil {
		return a, argsError(err)
	}
	if err := decodeOptions(opts, &a.opts); err != nil {
		return a, err
	}
	a.Options = &a.opts
	return a, nil
}

// argsError is the error for arguments that do not decode.
//
//go:noinline
func argsError(err error) error {
	return fmt.Errorf("args: %w", err)
}

// scan reads the fields of a serialized TransformInvokeRequest: it sets a's
// token, even on error if it was read, and returns the encoded arguments
// and options. Unless shared, the token and the options are copied (in one
// allocation), since the strings decoded from them share their bytes.
func (a *Args) scan(b []byte, shared bool) (args, opts []byte, err error) {
	var token []byte
	var haveArgs, haveOpts bool
scan:
	for size := len(b); len(b) > 0; {
		at := size - len(b)
		num, typ, n := wirefield.ConsumeTag(b)
		if n < 0 {
			err = errBadRequest
			break scan
		}
		b = b[n:]
		if typ == protowire.BytesType && num >= reqToken && num <= reqOptions {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				err = errBadRequest
				break scan
			}
			b = b[m:]
			a.layout.Note(num, reqArgs, reqOptions, at, at+n+m-len(v), at+n+m)
			switch num {
			case reqToken:
				if !utf8.Valid(v) {
					err = errTokenUTF8
					break scan
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
			err = errBadRequest
			break scan
		}
		b = b[m:]
	}
	if !shared && len(token)+len(opts) > 0 {
		// The copy is never written again.
		c := make([]byte, len(token)+len(opts))
		copy(c, token)
		copy(c[len(token):], opts)
		token, opts = c[:len(token)], c[len(token):]
	}
	a.Token = wirefield.View(token)
	return args, opts, err
}

// encodePayload encodes res as a serialized TransformInvokeResponse,
// writing the arguments and the options straight to the wire. req is the
// Args the call's request decoded to and payload the request's bytes, whose
// size an identity-like result's response matches (both nil outside a
// call). With inPlace, the bytes belong to the call, and a response that
// sends the arguments back unread and the options as received is made in
// them, without a copy.
func encodePayload(res *Result, acceptsByteStrings bool, req *Args, payload []byte, inPlace bool) ([]byte, error) {
	if res.Options != nil {
		if err := checkOptions(res.Options); err != nil {
			return nil, err
		}
	}
	m, raw, sendArgs := res.arguments()
	if m != nil {
		return encodeWithMap(m, res.Options, acceptsByteStrings, len(payload))
	}
	if inPlace && req != nil && res.from == req && raw != nil {
		if out, ok := answerInPlace(req, payload, res.Options); ok {
			return out, nil
		}
	}
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

// answerInPlace makes the response that sends req's arguments as received
// and o in payload, the request's bytes, if o encodes as the request's
// options did (see wire.Layout.Answer).
//
//go:noinline
func answerInPlace(req *Args, payload []byte, o *InvokeOptions) ([]byte, bool) {
	var ob []byte
	if o != nil {
		ob = appendOptions(make([]byte, 0, sizeOptions(o)), o)
	}
	return req.layout.Answer(payload, reqArgs, reqOptions, o != nil, ob)
}

// encodeWithMap encodes a response whose arguments are the map m, written
// straight to the wire. It is a function of its own so that encodePayload,
// which a function that reads nothing runs, keeps a small frame.
//
//go:noinline
func encodeWithMap(m resource.PropertyMap, o *InvokeOptions, acceptsByteStrings bool, sizeHint int) ([]byte, error) {
	var ob []byte
	if o != nil {
		ob = appendOptions(make([]byte, 0, sizeOptions(o)), o)
	}
	return wire.EncodeResponse(wire.Response{
		Props: m, SendRaw: true,
		Options: ob, SendOptions: o != nil,
	}, acceptsByteStrings, sizeHint)
}
