// Package reach gives the typed packages typed access to the plumbing that
// package callbacks and package monitor keep out of their public API (see
// internal/access).
package reach

import (
	"context"
	"errors"
	"fmt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/access"
	"github.com/langhost/callbacks/monitor"
)

// Prepared is what a [PreparedAs] check returns: the call of the user's
// function and the encoding of its result.
type Prepared = func(context.Context) ([]byte, error)

// PreparedAs registers, as a callback of kind k, a function over undecoded
// payloads in two parts: prep checks the request on the goroutine the call
// arrived on (so that the check, as deep as the request nests, grows no new
// stack) and returns what runs on the call's own goroutine.
func PreparedAs(k callbacks.Kind, prep func(ctx context.Context, payload []byte) (Prepared, error)) callbacks.Func {
	return access.PreparedAs.(func(callbacks.Kind, func(context.Context, []byte) (func(context.Context) ([]byte, error), error)) callbacks.Func)(k, prep)
}

// SetCallResource records which resource the current call is about.
func SetCallResource(ctx context.Context, urn, typ, name string) {
	access.SetCallResource.(func(context.Context, string, string, string))(ctx, urn, typ, name)
}

// SetCallAttempt records, for an error hook, how many times the operation
// has failed so far.
func SetCallAttempt(ctx context.Context, attempt int) {
	access.SetCallAttempt.(func(context.Context, int))(ctx, attempt)
}

// Names returns the hook name space of m's deployment.
func Names(m *monitor.Monitor) *access.Names {
	return access.MonitorNames.(func(*monitor.Monitor) *access.Names)(m)
}

// Attached returns the slot in which package transforms keeps the state of
// the transforms attached through m.
func Attached(m *monitor.Monitor) *access.Slot {
	return access.MonitorAttached.(func(*monitor.Monitor) *access.Slot)(m)
}

// Prepare tells m's server whether the deployment is a preview.
func Prepare(ctx context.Context, m *monitor.Monitor) error {
	return access.MonitorPrepare.(func(context.Context, *monitor.Monitor) error)(ctx, m)
}

// NewResourceHookOption builds an option for resource hooks only.
func NewResourceHookOption(f func(*access.HookConfig)) callbacks.ResourceHookOption {
	return access.NewResourceHookOption.(func(func(*access.HookConfig)) callbacks.ResourceHookOption)(f)
}

// NewHookOption builds an option for both hook kinds.
func NewHookOption(f func(*access.HookConfig)) callbacks.HookOption {
	return access.NewHookOption.(func(func(*access.HookConfig)) callbacks.HookOption)(f)
}

// HookConfig applies hook registration options.
func HookConfig[O any](opts []O) *access.HookConfig {
	apply := access.ApplyHookOption.(func(any, *access.HookConfig))
	c := &access.HookConfig{}
	for _, o := range opts {
		if any(o) != nil {
			apply(o, c)
		}
	}
	return c
}

// RegisterOptions returns the registration options collected in c.
func RegisterOptions(c *access.HookConfig) []callbacks.RegisterOption {
	out := make([]callbacks.RegisterOption, 0, len(c.Register))
	for _, o := range c.Register {
		out = append(out, o.(callbacks.RegisterOption))
	}
	return out
}

// Fail builds the error a typed package returns for a failed registration
// of a callback of kind k: an *callbacks.Error that wraps err, so that
// errors.Is finds err's sentinels, with a code that says what went wrong.
func Fail(k callbacks.Kind, what string, err error) error {
	code := codes.Unknown
	var ce *callbacks.Error
	switch {
	case errors.As(err, &ce) && ce != nil:
		code = ce.Code
	case errors.Is(err, callbacks.ErrNilArgument), errors.Is(err, callbacks.ErrNilFunc),
		errors.Is(err, callbacks.ErrInvalidOption), errors.Is(err, monitor.ErrNoServer),
		errors.Is(err, monitor.ErrNoMonitor):
		code = codes.InvalidArgument
	case errors.Is(err, monitor.ErrMissingFeature), errors.Is(err, access.ErrNameTaken):
		code = codes.FailedPrecondition
	default:
		if st, ok := status.FromError(err); ok {
			code = st.Code()
		}
	}
	return &callbacks.Error{Code: code, Kind: k, Err: err, Msg: fmt.Sprintf("%s: %v", what, err)}
}

// Nil is an error wrapping callbacks.ErrNilArgument for a missing argument.
func Nil(what string) error { return fmt.Errorf("%w: %s", callbacks.ErrNilArgument, what) }

// CallError builds the error for a failure of a typed adapter itself (a
// request that does not decode, a result that does not encode or breaks the
// protocol), labelled with the registration the call belongs to and
// wrapping sentinel and err. pkg prefixes the message, such as "hooks".
func CallError(ctx context.Context, pkg string, kind callbacks.Kind, code codes.Code, sentinel error, what string, err error) error {
	info, _ := callbacks.CallInfoFrom(ctx)
	label := kind.String()
	if info.Name != "" {
		label = fmt.Sprintf("%s %q", label, info.Name)
	}
	return &callbacks.Error{
		Code: code, Kind: kind, Name: info.Name, Token: info.Token,
		Msg: fmt.Sprintf("%s: %s: %s: %v", pkg, label, what, err),
		Err: fmt.Errorf("%w: %w", sentinel, err),
	}
}
