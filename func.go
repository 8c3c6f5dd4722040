package callbacks

import (
	"context"
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Func is a user function ready to register: its kind plus one untyped
// adapter that decodes the payload, calls the function and encodes the
// result. Build one with [NewFunc], or with one of its instances:
// [ResourceTransform], [InvokeTransform], [ResourceHook], [ErrorHook],
// [StateMigration] and [Raw]. The zero Func (and one built from a nil
// function) is refused by registration with [ErrNilFunc].
type Func struct {
	kind   Kind
	decode decoder
}

// decoder is what every Func is reduced to: it decodes the request and
// records in cs what the request says about the resource. The registry runs
// it on the goroutine the call arrived on, then the call's run on a
// goroutine of its own, then, back on the first goroutine, its encode.
type decoder func(ctx context.Context, cs *callState, payload []byte, owned bool) (call, error)

// call is a decoded request: run calls the function with it, and encode
// encodes what the function returned.
type call interface {
	run(ctx context.Context) error
	encode(ctx context.Context) ([]byte, error)
}

// NewFunc builds a Func of kind k from three parts:
//
//   - decode turns the payload into the request, on the goroutine the call
//     arrived on, so a request that does not decode never reaches fn. With
//     owned, the payload belongs to the call and is never written again
//     (the server's calls, and [Registry.InvokeOwned]), so the request may
//     share its bytes; without it, the payload belongs to the caller of
//     [Registry.Invoke], and decode must copy what the request keeps of
//     it ([Raw] excepted). It may fill in info's URN, Type, ResourceName, DryRun and Attempt, even
//     when it fails: they label the call's errors, logs, reports and
//     observer events, and fn sees them in [CallInfoFrom]. Other changes to
//     info are ignored. An error fails the call with InvalidArgument,
//     wrapping [ErrInvalidRequest].
//   - fn is the function, called on a goroutine of its own with the call's
//     context. Its error fails the call as any function's does (see the
//     package documentation), and encode is not called.
//   - encode turns what fn returned, nil included, into the response bytes,
//     back on the goroutine the call arrived on, after fn returned and only
//     if the call's context had not ended by then. An error fails the call
//     with Internal, wrapping [ErrEncode], or [ErrInvalidResult] if it wraps
//     that (the result breaks the protocol's rules), or with
//     InvalidArgument if it wraps [ErrInvalidRequest] (a part of the request
//     that decode left to be decoded on demand did not decode). Nil bytes
//     are the empty response.
//
// An error that is an [*Error] keeps its code. Every kind this package and the typed packages of this module know is
// built this way; a language host with messages of its own uses [KindRaw].
// A nil decode, fn or encode gives a Func that registration refuses.
func NewFunc[Req, Res any](
	k Kind,
	decode func(ctx context.Context, payload []byte, owned bool, info *CallInfo) (Req, error),
	fn func(ctx context.Context, req Req) (Res, error),
	encode func(ctx context.Context, req Req, res Res) ([]byte, error),
) Func {
	if decode == nil || fn == nil || encode == nil {
		return Func{kind: k}
	}
	return Func{kind: k, decode: func(ctx context.Context, cs *callState, payload []byte, owned bool) (call, error) {
		// fn's goroutine has not started: nothing else reads cs yet.
		before := cs.info
		req, err := decode(ctx, payload, owned, &cs.info)
		cs.keep(&before)
		if err != nil {
			return nil, requestError(cs, err)
		}
		return &typedCall[Req, Res]{fn: fn, enc: encode, cs: cs, req: req}, nil
	}}
}

// typedCall is a call of a Func built by NewFunc.
type typedCall[Req, Res any] struct {
	fn  func(context.Context, Req) (Res, error)
	enc func(context.Context, Req, Res) ([]byte, error)
	cs  *callState
	req Req
	res Res
}

func (c *typedCall[Req, Res]) run(ctx context.Context) error {
	res, err := c.fn(ctx, c.req)
	c.res = res
	return err
}

func (c *typedCall[Req, Res]) encode(ctx context.Context) ([]byte, error) {
	out, err := c.enc(ctx, c.req, c.res)
	if err != nil {
		return nil, responseError(c.cs, err)
	}
	return out, nil
}

// requestError is the error for a request that decode refused.
func requestError(cs *callState, err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	ci := cs.snapshot()
	return &Error{
		Code: codes.InvalidArgument, Kind: ci.Kind, Name: ci.Name, Token: ci.Token,
		Msg: fmt.Sprintf("callbacks: %s%s: request does not decode: %v", label(ci.Kind, ci.Name), ci.resourceSuffix(), err),
		Err: fmt.Errorf("%w: %w", ErrInvalidRequest, err),
	}
}

// responseError is the error for a result that encode refused.
func responseError(cs *callState, err error) error {
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	ci := cs.snapshot()
	ce := &Error{Code: codes.Internal, Kind: ci.Kind, Name: ci.Name, Token: ci.Token, Err: err}
	what := fmt.Sprintf("callbacks: %s%s", label(ci.Kind, ci.Name), ci.resourceSuffix())
	switch {
	case errors.Is(err, ErrInvalidRequest):
		ce.Code, ce.Msg = codes.InvalidArgument, fmt.Sprintf("%s: %v", what, err)
	case errors.Is(err, ErrInvalidResult):
		ce.Msg = fmt.Sprintf("%s: %v", what, err)
	default:
		ce.Msg = fmt.Sprintf("%s: response does not encode: %v", what, err)
		ce.Err = fmt.Errorf("%w: %w", ErrEncode, err)
	}
	return ce
}

// Raw wraps a function over undecoded payloads, for language hosts that
// bring their own messages: it receives the payload bytes as sent, not a
// copy (under [Registry.Invoke], the caller's own slice: the one exception
// to Invoke's copying, so fn must not keep it past the call), and returns
// the response bytes as they are to be sent, which it must not change
// afterwards.
func Raw(fn func(ctx context.Context, request []byte) ([]byte, error)) Func {
	return NewFunc(KindRaw, rawDecode, fn, rawEncode)
}

func rawDecode(_ context.Context, payload []byte, _ bool, _ *CallInfo) ([]byte, error) {
	return payload, nil
}

func rawEncode(_ context.Context, _, res []byte) ([]byte, error) { return res, nil }

// ResourceTransform wraps a function over the resource transform messages.
// A nil response with a nil error is sent as an empty response: no change.
func ResourceTransform(fn func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error)) Func {
	return protoFunc(KindResourceTransform, fn, func(r *pulumirpc.TransformRequest, ci *CallInfo) {
		ci.Type, ci.ResourceName = r.GetType(), r.GetName()
	})
}

// InvokeTransform wraps a function over the invoke transform messages. A nil
// response with a nil error is sent as an empty response: no change.
func InvokeTransform(fn func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error)) Func {
	return protoFunc(KindInvokeTransform, fn, func(r *pulumirpc.TransformInvokeRequest, ci *CallInfo) {
		ci.Type = r.GetToken()
	})
}

// ResourceHook wraps a function over the resource hook messages. A nil
// response with a nil error is sent as an empty response: success. To fail
// the hook with a message the user sees, return a response whose Error is
// set; a returned error fails the call with a gRPC status instead.
func ResourceHook(fn func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error)) Func {
	return protoFunc(KindResourceHook, answersFailure(fn), func(r *pulumirpc.ResourceHookRequest, ci *CallInfo) {
		ci.URN, ci.Type, ci.ResourceName = r.GetUrn(), r.GetType(), r.GetName()
	})
}

// ErrorHook wraps a function over the error hook messages. A nil response
// with a nil error is sent as an empty response: do not retry.
func ErrorHook(fn func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error)) Func {
	return protoFunc(KindErrorHook, answersFailure(fn), func(r *pulumirpc.ErrorHookRequest, ci *CallInfo) {
		ci.URN, ci.Type, ci.ResourceName = r.GetUrn(), r.GetType(), r.GetName()
		ci.Attempt = len(r.GetErrors())
	})
}

// answersFailure records a hook's answer that carries an error (see
// [RecordFailure]).
func answersFailure[Req any, Res interface{ GetError() string }](fn func(context.Context, Req) (Res, error)) func(context.Context, Req) (Res, error) {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, req Req) (Res, error) {
		res, err := fn(ctx, req)
		if msg := res.GetError(); err == nil && msg != "" {
			RecordFailure(ctx, errors.New(msg))
		}
		return res, err
	}
}

// StateMigration wraps a function over the state migration messages. A nil
// response with a nil error is sent as an empty response: state unchanged.
func StateMigration(fn func(context.Context, *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error)) Func {
	return protoFunc(KindStateMigration, fn, func(r *pulumirpc.StateMigrationRequest, ci *CallInfo) {
		ci.URN = r.GetUrn()
	})
}

// protoPtr is satisfied by *M for a generated message type M.
type protoPtr[M any] interface {
	*M
	proto.Message
}

// protoFunc is [NewFunc] over generated messages: the protobuf runtime
// decodes and encodes, and describe says what the request tells about the
// resource.
func protoFunc[Req, Res any, PReq protoPtr[Req], PRes protoPtr[Res]](
	k Kind,
	fn func(context.Context, PReq) (PRes, error),
	describe func(PReq, *CallInfo),
) Func {
	decode := func(_ context.Context, payload []byte, _ bool, info *CallInfo) (PReq, error) {
		req := PReq(new(Req))
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, fmt.Errorf("not a %s: %w", req.ProtoReflect().Descriptor().FullName(), err)
		}
		describe(req, info)
		return req, nil
	}
	encode := func(_ context.Context, _ PReq, res PRes) ([]byte, error) {
		if res == nil {
			return nil, nil
		}
		return proto.Marshal(res)
	}
	return NewFunc(k, decode, fn, encode)
}
