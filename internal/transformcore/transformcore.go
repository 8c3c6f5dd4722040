// Package transformcore is what the two transform kinds, resource
// transforms (package transforms) and invoke transforms (package
// invoketransforms), share: a request's property map kept encoded until
// read and answered in the request's own bytes when sent back unread, and
// the callbacks.Func that decodes, calls and encodes. Each typed package
// keeps its own plain Args and Result and documents them.
package transformcore

import (
	"context"
	"fmt"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Props is the property map of a transform's request (a resource's
// inputs, an invoke's arguments) and the request it arrived in. The zero
// Props is an empty map outside a call.
type Props struct {
	lazy wire.Lazy
	msg  *wire.Message // the request as it arrived; nil outside a call
}

// Decode decodes payload into pb, leaving the map in field num encoded in
// p until read. With owned, payload belongs to the call and is never
// written again.
func (p *Props) Decode(payload []byte, owned bool, pb proto.Message, num protowire.Number) error {
	msg, err := wire.DecodeRequest(payload, owned, pb, wire.Field{Num: num, Into: &p.lazy})
	p.msg = msg
	return err
}

// Map returns the map, decoding it on the first call. Never nil.
func (p *Props) Map() resource.PropertyMap { return p.lazy.Map() }

// Set replaces the map.
func (p *Props) Set(m resource.PropertyMap) { p.lazy.Set(m) }

// Unread reports whether the map was never read nor replaced: a result
// that sends it back then sends its bytes as they came.
func (p *Props) Unread() bool {
	_, unread := p.lazy.Unread()
	return unread
}

// Reply encodes a response whose map field is num: props when not nil,
// else from's map as it is (its bytes while unread), else no map; rest
// holds the response's other fields, or is nil.
func (p *Props) Reply(num protowire.Number, props resource.PropertyMap, from *Props, rest proto.Message, acceptsByteStrings bool) ([]byte, error) {
	r := wire.Reply{Num: num, Props: props, Rest: rest}
	if props == nil && from != nil {
		r.From = &from.lazy
	}
	return p.msg.EncodeReply(r, acceptsByteStrings)
}

// Copy encodes a message whose map field is num, holding the map as it is
// (its bytes while unread), followed by rest's fields (rest may be nil).
// Unlike Reply, it never uses the request's own bytes, which it leaves as
// they are: the copy is for decoding again, not for answering.
func (p *Props) Copy(num protowire.Number, rest proto.Message) ([]byte, error) {
	var none *wire.Message
	return none.EncodeReply(wire.Reply{Num: num, From: &p.lazy, Rest: rest}, true)
}

// Options returns *o, made empty first if it is nil, after edit (if not
// nil) changed it: what WithOptions of both kinds does.
func Options[O any](o **O, edit func(*O)) *O {
	if *o == nil {
		*o = new(O)
	}
	if edit != nil {
		edit(*o)
	}
	return *o
}

// Kind describes one transform kind to NewFunc.
type Kind[A, R any] struct {
	Kind callbacks.Kind
	// Field names the map in errors: "properties", "args".
	Field string
	// Decode decodes a request and labels the call in info, even when it
	// fails.
	Decode func(payload []byte, owned bool, info *callbacks.CallInfo) (*A, error)
	// Props returns the map of a decoded request.
	Props func(*A) *Props
	// Encode encodes a result of a call whose request was a.
	Encode func(a *A, res *R, acceptsByteStrings bool) ([]byte, error)
}

// NewFunc builds the callbacks.Func the engine calls for fn. A map that
// passed the check when the request arrived but then did not decode fails
// the call with InvalidArgument, whatever fn returned.
func NewFunc[A, R any](k Kind[A, R], fn func(context.Context, *A) (*R, error)) callbacks.Func {
	decode := func(_ context.Context, b []byte, owned bool, info *callbacks.CallInfo) (*A, error) {
		return k.Decode(b, owned, info)
	}
	call := func(ctx context.Context, a *A) (*R, error) {
		res, err := fn(ctx, a)
		if k.Props(a).lazy.Err() != nil {
			// fn saw an empty map in place of the request's; whatever it
			// made of it must not reach the engine, and encode refuses
			// the call.
			return nil, nil
		}
		return res, err
	}
	encode := func(ctx context.Context, a *A, res *R) ([]byte, error) {
		if err := k.Props(a).lazy.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", callbacks.ErrInvalidRequest, k.Field, err)
		}
		if res == nil {
			return nil, nil
		}
		info, _ := callbacks.CallInfoFrom(ctx)
		out, err := k.Encode(a, res, info.AcceptsByteStrings)
		return out, registration.ResultError(err, info.AcceptsByteStrings)
	}
	return callbacks.NewFunc(k.Kind, decode, call, encode)
}
