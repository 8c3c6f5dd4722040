package hooks

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/langhost/callbacks"
	wirepayload "github.com/langhost/callbacks/internal/payload"
	"github.com/langhost/callbacks/internal/reach"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
)

// Func is a resource hook. Returning an error fails the hook: the engine
// shows the error's message to the user as `before hook "NAME" failed: MSG`
// (or "after hook"), or only as a warning for hooks registered with
// [IgnoreErrors]. A failing before-hook stops the step before the provider
// is called; a failing after-hook leaves the step done but fails the
// deployment.
//
// ctx is the call's context: [callbacks.CallInfoFrom] describes the call
// (its DryRun field says whether the deployment is a preview, which the
// request itself does not), [callbacks.Logger] and [callbacks.Warn] report
// about the resource, and ctx ends when the engine gives up or the deadline
// set with [callbacks.Timeout] passes. Hooks for different resources may run
// concurrently.
type Func func(ctx context.Context, args *Args) error

// ErrorFunc is an error hook. Returning retry=true asks the engine to try the
// failed operation again, at once; the engine retries if any error hook of
// the resource asks to, and gives up after 100 attempts (see
// [ErrorArgs.Attempt]). Returning an error stops the engine from running the
// remaining error hooks and fails the step with
// `error hooks execution failed: error hook "NAME" failed: MSG`; retry is
// then ignored.
type ErrorFunc func(ctx context.Context, args *ErrorArgs) (retry bool, err error)

// Adapt turns fn into a [callbacks.Func], for callers that register hooks
// with the engine themselves. [Register] uses it. The engine receives fn's
// error in ResourceHookResponse.error, not as a gRPC failure; a request that
// does not decode fails the call with a [*callbacks.Error] wrapping
// [callbacks.ErrInvalidRequest] (InvalidArgument), whether fn would have
// read the part that does not decode or not: the maps and options are
// checked before fn is called, and decoded only when fn reads them.
func Adapt(fn Func) callbacks.Func {
	if fn == nil {
		return callbacks.ResourceHook(nil)
	}
	return reach.PreparedAs(callbacks.KindResourceHook, func(ctx context.Context, payload []byte) (reach.Prepared, error) {
		args, err := decodePayload(payload, wirepayload.Owned(ctx))
		if err != nil {
			return nil, invalid(ctx, callbacks.KindResourceHook, string(args.URN), err)
		}
		reach.SetCallResource(ctx, string(args.URN), args.Type, args.Name)
		return func(ctx context.Context) ([]byte, error) {
			err := fn(ctx, args)
			if bad := args.err(); bad != nil {
				// fn saw an empty value in place of what did not decode;
				// whatever it made of it must not reach the engine.
				return nil, invalid(ctx, callbacks.KindResourceHook, string(args.URN), bad)
			}
			if err != nil {
				return errorResponse(ctx, callbacks.KindResourceHook, string(args.URN), err)
			}
			return nil, nil
		}, nil
	})
}

// AdaptErrorHook turns fn into a [callbacks.Func]; see [Adapt]. fn's error
// goes in ErrorHookResponse.error.
func AdaptErrorHook(fn ErrorFunc) callbacks.Func {
	if fn == nil {
		return callbacks.ErrorHook(nil)
	}
	return reach.PreparedAs(callbacks.KindErrorHook, func(ctx context.Context, payload []byte) (reach.Prepared, error) {
		args, err := decodeErrorPayload(payload, wirepayload.Owned(ctx))
		if err != nil {
			return nil, invalid(ctx, callbacks.KindErrorHook, string(args.URN), err)
		}
		reach.SetCallResource(ctx, string(args.URN), args.Type, args.Name)
		reach.SetCallAttempt(ctx, args.Attempt())
		return func(ctx context.Context) ([]byte, error) {
			retry, err := fn(ctx, args)
			if bad := args.err(); bad != nil {
				return nil, invalid(ctx, callbacks.KindErrorHook, string(args.URN), bad)
			}
			switch {
			case err != nil:
				return errorResponse(ctx, callbacks.KindErrorHook, string(args.URN), err)
			case retry:
				return protowire.AppendVarint(protowire.AppendTag(nil, resRetry, protowire.VarintType), 1), nil
			}
			return nil, nil
		}, nil
	})
}

// Field numbers of ResourceHookResponse and ErrorHookResponse.
const (
	resError = 1
	resRetry = 2
)

// errorResponse encodes a response that carries err's message, which, being
// a protobuf string, must be valid UTF-8.
func errorResponse(ctx context.Context, k callbacks.Kind, urn string, err error) ([]byte, error) {
	msg := errorText(err)
	if !utf8.ValidString(msg) {
		return nil, reach.CallError(ctx, "hooks", k, codes.Internal, callbacks.ErrEncode,
			urn+": response does not encode", errors.New("the hook's error message is not valid UTF-8"))
	}
	return protowire.AppendString(protowire.AppendTag(nil, resError, protowire.BytesType), msg), nil
}

func invalid(ctx context.Context, k callbacks.Kind, urn string, err error) error {
	return reach.CallError(ctx, "hooks", k, codes.InvalidArgument, callbacks.ErrInvalidRequest,
		urn+": request does not decode", err)
}

// errorText is the message sent for a hook's error. The engine reads an
// empty message as success, so an error must never be sent as "".
func errorText(err error) string {
	if msg := err.Error(); msg != "" {
		return msg
	}
	return "hook failed with an error that has no message"
}
