package callbacks

import (
	"context"
	"errors"
	"fmt"

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
	// ErrNilFunc: a registration was given no function.
	ErrNilFunc = errors.New("callback function is nil")
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
	Kind  Kind       // zero when the token was unknown
	Name  string     // the registration's name, if it has one
	Token string
	Msg   string // the status message sent to the engine
	Err   error  // the cause
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause, so errors.Is(err, ErrUnknownToken) and friends
// work, and so does errors.Is against the user's own error values.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus makes the error carry its code across grpc-go's status handling.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Msg) }

// label names a registration for messages: `resource transform "tag"`.
func label(k Kind, name string) string {
	if name == "" {
		return k.String()
	}
	return fmt.Sprintf("%s %q", k, name)
}

// classify turns whatever a call produced into an *Error with the right code.
// ctx is the call's context, including any deadline this package set.
func classify(ctx context.Context, ci *CallInfo, err error) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	e := &Error{Kind: ci.Kind, Name: ci.Name, Token: ci.Token, Err: err}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), errOwnDeadline) {
		e.Code = codes.DeadlineExceeded
		e.Err = fmt.Errorf("%w: %w", ErrTimeout, err)
		e.Msg = fmt.Sprintf("callbacks: %s%s did not answer within its deadline", label(ci.Kind, ci.Name), ci.resourceSuffix())
		return e
	}
	if st, ok := status.FromError(err); ok {
		e.Code, e.Msg = st.Code(), st.Message()
		return e
	}
	switch {
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

// errOwnDeadline is the cancellation cause of deadlines this package sets,
// telling them apart from the engine's own cancellation.
var errOwnDeadline = errors.New("callbacks: registration deadline")
