package hooks

import (
	"context"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/reach"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
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
// [callbacks.ErrInvalidRequest] (InvalidArgument).
func Adapt(fn Func) callbacks.Func {
	if fn == nil {
		return callbacks.ResourceHook(nil)
	}
	return callbacks.ResourceHook(func(ctx context.Context, req *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		args, err := DecodeRequest(req)
		if err != nil {
			return nil, reach.CallError(ctx, "hooks", callbacks.KindResourceHook, codes.InvalidArgument, callbacks.ErrInvalidRequest,
				req.GetUrn()+": request does not decode", err)
		}
		if err := fn(ctx, args); err != nil {
			return &pulumirpc.ResourceHookResponse{Error: errorText(err)}, nil
		}
		return nil, nil
	})
}

// AdaptErrorHook turns fn into a [callbacks.Func]; see [Adapt]. fn's error
// goes in ErrorHookResponse.error.
func AdaptErrorHook(fn ErrorFunc) callbacks.Func {
	if fn == nil {
		return callbacks.ErrorHook(nil)
	}
	return callbacks.ErrorHook(func(ctx context.Context, req *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
		args, err := DecodeErrorRequest(req)
		if err != nil {
			return nil, reach.CallError(ctx, "hooks", callbacks.KindErrorHook, codes.InvalidArgument, callbacks.ErrInvalidRequest,
				req.GetUrn()+": request does not decode", err)
		}
		retry, err := fn(ctx, args)
		if err != nil {
			return &pulumirpc.ErrorHookResponse{Error: errorText(err)}, nil
		}
		if !retry {
			return nil, nil
		}
		return &pulumirpc.ErrorHookResponse{Retry: true}, nil
	})
}

// errorText is the message sent for a hook's error. The engine reads an
// empty message as success, so an error must never be sent as "".
func errorText(err error) string {
	if msg := err.Error(); msg != "" {
		return msg
	}
	return "hook failed with an error that has no message"
}
