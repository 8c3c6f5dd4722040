package callbacks

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Errors returned by this package wrap them, so callers can
// test with errors.Is; on the wire each maps to the gRPC code in its comment.
var (
	// ErrUnknownToken: the token names no registered callback (NotFound).
	ErrUnknownToken = errors.New("unknown callback token")
	// ErrInvalidRequest: the payload is not a valid request for the kind, or
	// the token is empty (InvalidArgument).
	ErrInvalidRequest = errors.New("invalid callback request")
	// ErrPanicked: the user function panicked (Internal).
	ErrPanicked = errors.New("callback panicked")
	// ErrTimeout: the callback ran past the deadline set with [Timeout] or
	// [KindTimeout] (DeadlineExceeded).
	ErrTimeout = errors.New("callback deadline exceeded")
	// ErrEncode: the function's response could not be encoded (Internal).
	ErrEncode = errors.New("callback response does not encode")
	// ErrInvalidResult: the function's result breaks the protocol's rules,
	// such as a state migration that drops a resource (Internal).
	ErrInvalidResult = errors.New("invalid callback result")
	// ErrNilFunc: a registration was given no function (InvalidArgument).
	ErrNilFunc = errors.New("callback function is nil")
	// ErrNilArgument: a registration was given a nil monitor, server or
	// other required argument (InvalidArgument).
	ErrNilArgument = errors.New("nil argument")
	// ErrServerClosed is returned by Serve and by registrations after
	// Shutdown or Close, like http.ErrServerClosed (Unavailable on the wire).
	ErrServerClosed = errors.New("callbacks: server closed")
	// ErrNotServing: a callback was requested from a server that has no
	// listener yet, so it has no target the engine could dial.
	ErrNotServing = errors.New("callbacks: server is not serving yet")
)

// Error is the error returned for a failed callback invocation. It carries the
// gRPC code the engine sees (through GRPCStatus) and wraps the cause, which is
// one of the sentinels above or the user function's own error.
type Error struct {
	Code  codes.Code // the status code sent to the engine
	Kind  Kind       // the callback's kind; zero when the token was unknown
	Name  string     // the registration's name, if it has one
	Token string     // the callback's token, if the failure concerns a call
	Msg   string     // the status message sent to the engine
	Err   error      // the cause
}

func (e *Error) Error() string {
	if e == nil {
		return "callbacks: <nil *Error>"
	}
	return e.Msg
}

// Unwrap returns the cause, so errors.Is(err, ErrUnknownToken) and friends
// work, and so does errors.Is against the user's own error values.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// GRPCStatus makes the error carry its code across grpc-go's status
// handling. The message is clipped to 4 KiB: it travels in
// a header, and an oversized header breaks the whole connection the engine
// shares between all callbacks, not just this call.
func (e *Error) GRPCStatus() *status.Status {
	if e == nil {
		return status.New(codes.Internal, "callbacks: nil *Error")
	}
	return status.New(e.Code, clip(e.Msg, maxStatusMessage))
}

// maxStatusMessage bounds the status message sent on the wire.
const maxStatusMessage = 4 << 10

// maxEcho bounds each value from a request (token, name, type, URN) that an
// error message repeats.
const maxEcho = 256

// clip shortens s to at most n bytes, cut on a UTF-8 boundary, saying how
// long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}

// label names a registration for messages: `resource transform "tag"`.
func label(k Kind, name string) string {
	if name == "" {
		return k.String()
	}
	return fmt.Sprintf("%s %q", k, clip(name, maxEcho))
}

// classify turns whatever a call produced into an *Error with the right code.
// ctx is the call's context, including any deadline this package set.
func classify(ctx context.Context, ci *CallInfo, err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		if ce != nil {
			return ce
		}
		// A typed nil *Error must neither pass as success nor be unwrapped.
		return &Error{Code: codes.Internal, Kind: ci.Kind, Name: ci.Name, Token: ci.Token, Err: errNilError,
			Msg: fmt.Sprintf("callbacks: %s returned a nil *callbacks.Error", label(ci.Kind, ci.Name))}
	}
	e := &Error{Kind: ci.Kind, Name: ci.Name, Token: ci.Token, Err: err}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), errOwnDeadline) {
		e.Code = codes.DeadlineExceeded
		e.Err = fmt.Errorf("%w: %w", ErrTimeout, err)
		e.Msg = fmt.Sprintf("callbacks: %s%s did not answer within its deadline", label(ci.Kind, ci.Name), ci.resourceSuffix())
		return e
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
		e.Code, e.Msg = st.Code(), st.Message()
		return e
	}
	switch {
	case errors.Is(err, context.Canceled) && errors.Is(context.Cause(ctx), context.Canceled):
		e.Code = codes.Canceled
		e.Msg = fmt.Sprintf("callbacks: %s%s did not fail but was cancelled by its caller (an engine cancels when another step "+
			"failed or the deployment was interrupted): %v", label(ci.Kind, ci.Name), ci.resourceSuffix(), err)
		return e
	case errors.Is(err, context.Canceled):
		e.Code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		e.Code = codes.DeadlineExceeded
	default:
		e.Code = codes.Unknown
	}
	e.Msg = err.Error()
	return e
}

var errNilError = errors.New("nil *callbacks.Error")

// errOwnDeadline is the cancellation cause of deadlines this package sets,
// telling them apart from the engine's own cancellation.
var errOwnDeadline = errors.New("callbacks: registration deadline")
