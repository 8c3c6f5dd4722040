package hooks

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
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

// newFunc builds the callbacks.Func the engine calls for resource hook
// fn. dryRun is what the engine said when the hook was registered: the
// request does not say it. The engine receives fn's error in
// ResourceHookResponse.error, not as a gRPC failure; a request that does
// not decode fails the call with InvalidArgument, whether fn would have
// read the part that does not decode or not: the maps and options are
// checked before fn is called, and decoded only when fn reads them.
func newFunc(fn Func, dryRun bool) callbacks.Func {
	decode := func(_ context.Context, b []byte, owned bool, info *callbacks.CallInfo) (*Args, error) {
		args, err := decodePayload(b, owned)
		info.URN, info.Type, info.ResourceName, info.DryRun = string(args.URN), args.Type, args.Name, dryRun
		return args, err
	}
	call := func(ctx context.Context, args *Args) (outcome, error) {
		err := fn(ctx, args)
		callbacks.RecordFailure(ctx, err) // the engine gets it in the response
		return outcome{err: err}, nil
	}
	encode := func(_ context.Context, args *Args, o outcome) ([]byte, error) {
		return o.encode(args.err())
	}
	return callbacks.NewFunc(callbacks.KindResourceHook, decode, call, encode)
}

// newErrorFunc builds the callbacks.Func the engine calls for error hook
// fn, as newFunc does for resource hooks. fn's error goes in
// ErrorHookResponse.error.
func newErrorFunc(fn ErrorFunc, dryRun bool) callbacks.Func {
	decode := func(_ context.Context, b []byte, owned bool, info *callbacks.CallInfo) (*ErrorArgs, error) {
		args, err := decodeErrorPayload(b, owned)
		info.URN, info.Type, info.ResourceName, info.DryRun = string(args.URN), args.Type, args.Name, dryRun
		info.Attempt = args.Attempt()
		return args, err
	}
	call := func(ctx context.Context, args *ErrorArgs) (outcome, error) {
		retry, err := fn(ctx, args)
		callbacks.RecordFailure(ctx, err)
		return outcome{retry: retry, err: err}, nil
	}
	encode := func(_ context.Context, args *ErrorArgs, o outcome) ([]byte, error) {
		return o.encode(args.err())
	}
	return callbacks.NewFunc(callbacks.KindErrorHook, decode, call, encode)
}

// outcome is what a hook function returned: its error, which the engine
// shows the user, and for an error hook whether to retry.
type outcome struct {
	retry bool
	err   error
}

// encode encodes o as the hook's response, a ResourceHookResponse or, for
// an error hook, an ErrorHookResponse: both say the error in field 1, and
// the first lacks only the retry. unread is why a map or option set the
// hook read did not decode, if one did not: the hook saw an empty value in
// its place, and whatever it made of it must not reach the engine.
func (o outcome) encode(unread error) ([]byte, error) {
	if unread != nil {
		return nil, fmt.Errorf("%w: %w", callbacks.ErrInvalidRequest, unread)
	}
	res := &pulumirpc.ErrorHookResponse{Retry: o.retry}
	if o.err != nil {
		// The engine reads an empty message as success, so an error is
		// never sent as "".
		res.Error, res.Retry = o.err.Error(), false
		if res.Error == "" {
			res.Error = "hook failed with an error that has no message"
		}
		if !utf8.ValidString(res.Error) {
			return nil, errors.New("the hook's error message is not valid UTF-8")
		}
	}
	return proto.Marshal(res)
}
