// Package registration holds what the typed packages (transforms,
// invoketransforms, hooks, migrations) share about registering callbacks:
// the checks of their arguments, the error a failed registration returns,
// the error of a result that does not encode, and the name a binding sends
// for a hook reference with none. It is built on the public API of package
// callbacks and package monitor, and on the codec's error for a value with
// no wire form.
package registration

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/monitor"
)

// Check refuses a monitor that is nil or bound to no server, and a nil
// function, before anything is registered.
func Check(mon *monitor.Monitor, nilFunc bool) error {
	switch {
	case mon == nil || mon.Server() == nil:
		return fmt.Errorf("%w: monitor", callbacks.ErrNilArgument)
	case nilFunc:
		return callbacks.ErrNilFunc
	}
	return nil
}

// Failed is the error a typed package returns for a failed registration of
// a callback of kind k: a [*callbacks.Error] that wraps err, so that
// errors.Is finds err's sentinels, with a code that says what went wrong.
// what says what was being registered, such as "transforms: registering a
// stack transform".
func Failed(k callbacks.Kind, what string, err error) error {
	code := codes.Unknown
	switch ce, isErr := errors.AsType[*callbacks.Error](err); {
	case isErr && ce != nil:
		code = ce.Code
	case errors.Is(err, callbacks.ErrNilArgument), errors.Is(err, callbacks.ErrNilFunc),
		errors.Is(err, callbacks.ErrInvalidOption), errors.Is(err, monitor.ErrNoMonitor):
		code = codes.InvalidArgument
	case errors.Is(err, monitor.ErrMissingFeature):
		code = codes.FailedPrecondition
	default:
		if st, ok := status.FromError(err); ok {
			code = st.Code()
		}
	}
	return &callbacks.Error{Code: code, Kind: k, Err: err, Msg: fmt.Sprintf("%s: %v", what, err)}
}

// ResultError is err, from encoding a call's result: a value that no
// property value may hold (a Go int, say) wraps [callbacks.ErrInvalidResult],
// so the call fails as a broken result rather than a panic; otherwise, when
// the registration refuses byte strings (callbacks.AcceptsByteStrings(false)),
// err comes with that reason, which is then the likely cause.
func ResultError(err error, acceptsByteStrings bool) error {
	if _, ok := errors.AsType[*wire.InvalidValueError](err); ok {
		return fmt.Errorf("%w: %w", callbacks.ErrInvalidResult, err)
	}
	if err != nil && !acceptsByteStrings {
		return fmt.Errorf("%w (byte strings are refused: the callback is registered with callbacks.AcceptsByteStrings(false))", err)
	}
	return err
}

// NoHook is the name a binding sends for a hook reference with no name, a
// nil *hooks.Hook most often, so that the engine's "hook … was not
// registered" says what is wrong rather than quoting an empty name.
const NoHook = "(nil hook: did the Register call that made it fail?)"

// RefName is the name a binding sends for a reference named name: name
// itself, or [NoHook] for an empty one.
func RefName(name string) string {
	if name == "" {
		return NoHook
	}
	return name
}
