package callbacks

import (
	"context"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Func is a user function ready to register: its kind plus one untyped
// adapter that decodes the payload, calls the function and encodes the
// result. Build one with [ResourceTransform], [InvokeTransform],
// [ResourceHook], [ErrorHook], [StateMigration] or [Raw]. The zero Func (and
// one built from a nil function) is refused by registration with [ErrNilFunc].
type Func struct {
	kind    Kind
	call    handler  // Raw's
	prepare preparer // every other kind's
}

// Kind reports which kind of callback f is.
func (f Func) Kind() Kind { return f.kind }

// handler is the shape of a Raw registration: there is nothing to check.
type handler func(ctx context.Context, cs *callState, payload []byte) ([]byte, error)

// preparer is the shape every registration but Raw is reduced to: it
// decodes or checks the request, records in cs what the request says about
// the resource, and returns what calls the function and encodes its
// result. The registry runs it on the goroutine the call arrived on, and
// only what it returns on the call's own goroutine, which starts with a
// small stack: the check, as deep as the request nests, then grows no new
// goroutine's stack, and a request that does not decode is refused without
// starting a goroutine.
type preparer func(ctx context.Context, cs *callState, payload []byte) (func(context.Context) ([]byte, error), error)

// RawFunc is a function over undecoded payloads, for language hosts that
// bring their own messages.
type RawFunc func(ctx context.Context, request []byte) ([]byte, error)

// Raw wraps a function that receives the payload bytes as sent and returns the
// response bytes as they are to be sent.
func Raw(fn RawFunc) Func {
	if fn == nil {
		return Func{kind: KindRaw}
	}
	return Func{kind: KindRaw, call: func(ctx context.Context, _ *callState, payload []byte) ([]byte, error) {
		return fn(ctx, payload)
	}}
}

// ResourceTransform wraps a function over the resource transform messages.
// A nil response with a nil error is sent as an empty response: no change.
func ResourceTransform(fn func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error)) Func {
	return adapt(KindResourceTransform, fn, func(r *pulumirpc.TransformRequest, ci *CallInfo) {
		ci.Type, ci.ResourceName = r.GetType(), r.GetName()
	})
}

// InvokeTransform wraps a function over the invoke transform messages. A nil
// response with a nil error is sent as an empty response: no change.
func InvokeTransform(fn func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error)) Func {
	return adapt(KindInvokeTransform, fn, func(r *pulumirpc.TransformInvokeRequest, ci *CallInfo) {
		ci.Type = r.GetToken()
	})
}

// ResourceHook wraps a function over the resource hook messages. A nil
// response with a nil error is sent as an empty response: success. To fail
// the hook with a message the user sees, return a response whose Error is
// set; a returned error fails the call with a gRPC status instead.
func ResourceHook(fn func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error)) Func {
	return adapt(KindResourceHook, fn, func(r *pulumirpc.ResourceHookRequest, ci *CallInfo) {
		ci.URN, ci.Type, ci.ResourceName = r.GetUrn(), r.GetType(), r.GetName()
	})
}

// ErrorHook wraps a function over the error hook messages. A nil response
// with a nil error is sent as an empty response: do not retry.
func ErrorHook(fn func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error)) Func {
	return adapt(KindErrorHook, fn, func(r *pulumirpc.ErrorHookRequest, ci *CallInfo) {
		ci.URN, ci.Type, ci.ResourceName = r.GetUrn(), r.GetType(), r.GetName()
		ci.Attempt = len(r.GetErrors())
	})
}

// StateMigration wraps a function over the state migration messages. A nil
// response with a nil error is sent as an empty response: state unchanged.
func StateMigration(fn func(context.Context, *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error)) Func {
	return adapt(KindStateMigration, fn, func(r *pulumirpc.StateMigrationRequest, ci *CallInfo) {
		ci.URN = r.GetUrn()
	})
}

// protoPtr is satisfied by *M for a generated message type M.
type protoPtr[M any] interface {
	*M
	proto.Message
}

// adapt is the one place where payloads are decoded and responses encoded.
func adapt[Req, Res any, PReq protoPtr[Req], PRes protoPtr[Res]](
	kind Kind,
	fn func(context.Context, PReq) (PRes, error),
	describe func(PReq, *CallInfo),
) Func {
	if fn == nil {
		return Func{kind: kind}
	}
	return Func{kind: kind, prepare: func(ctx context.Context, cs *callState, payload []byte) (func(context.Context) ([]byte, error), error) {
		ci := &cs.info // kind, name and token never change during a call
		req := PReq(new(Req))
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, &Error{
				Code: codes.InvalidArgument, Kind: ci.Kind, Name: ci.Name, Token: ci.Token,
				Msg: fmt.Sprintf("callbacks: %s: request does not decode as %s: %v",
					label(ci.Kind, ci.Name), req.ProtoReflect().Descriptor().FullName(), err),
				Err: fmt.Errorf("%w: %w", ErrInvalidRequest, err),
			}
		}
		cs.update(func(ci *CallInfo) { describe(req, ci) })
		return func(ctx context.Context) ([]byte, error) {
			res, err := fn(ctx, req)
			if err != nil {
				return nil, err
			}
			if res == nil {
				return nil, nil
			}
			out, err := proto.Marshal(res)
			if err != nil {
				return nil, &Error{
					Code: codes.Internal, Kind: ci.Kind, Name: ci.Name, Token: ci.Token,
					Msg: fmt.Sprintf("callbacks: %s: response does not encode: %v", label(ci.Kind, ci.Name), err),
					Err: fmt.Errorf("%w: %w", ErrEncode, err),
				}
			}
			return out, nil
		}, nil
	}}
}

// preparedAs registers, as a callback of kind k, a function that checks its
// request before its call; see [preparer]. The typed packages use it
// (through internal/access).
func preparedAs(k Kind, prep func(ctx context.Context, payload []byte) (func(context.Context) ([]byte, error), error)) Func {
	if prep == nil {
		return Func{kind: k}
	}
	return Func{kind: k, prepare: func(ctx context.Context, _ *callState, payload []byte) (func(context.Context) ([]byte, error), error) {
		return prep(ctx, payload)
	}}
}
