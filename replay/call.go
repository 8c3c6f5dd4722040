package replay

import (
	"fmt"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
)

// LineError is what [Read] yields for a line of the log it cannot read, or a
// callback call it cannot understand: corrupt or truncated JSON, a payload
// that is not valid base64 or does not decode as its kind, a token the log
// never registered, a callback kind this module does not know. Reading goes
// on after it.
type LineError struct {
	// Line is the 1-based line of the log the error is about.
	Line int
	// Err says what is wrong.
	Err error
}

// Error returns "log line N: " and the cause.
func (e *LineError) Error() string { return fmt.Sprintf("log line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// Call is one callback call of a log: the engine asking a program's function
// (a transform, a hook, an error hook, a state migration) and what it got
// back. A Call is a plain value; its methods do not change it and may be
// used from several goroutines.
type Call struct {
	// Seq is the call's 1-based order among the log's callback calls, by
	// completion; calls that never completed come last.
	Seq int
	// Line is the log line that completed the call, or for a Pending call
	// the line that started it.
	Line int
	// Pending says the log ends before the call completed: the engine
	// asked and the log holds no answer (a hook that hangs, a CLI stopped
	// while it waited). Response is nil and Err "", Start is when the call
	// started, and Duration how long it had run when the log ended (the
	// latest time the log gives, less Start). Read yields such calls after
	// all the others, in the order they started; only a log of two entries
	// per call can tell them.
	Pending bool
	// Kind is the kind of function called, from the registration that named
	// the token.
	Kind callbacks.Kind
	// Token is the callback's token, which changes on every run.
	Token string
	// Registration is where the program registered the token.
	Registration Registration
	// URN is the resource the call is about ("" for invoke transforms). For
	// a resource transform it is computed from the request's parent, type
	// and name, as the engine computes it.
	URN resource.URN
	// Type is the resource's type.
	Type string
	// Name is the resource's name.
	Name string
	// Invoke is an invoke transform's function token, "" for other kinds.
	Invoke string
	// Request and Response are the payloads as logged: the protobuf
	// encodings of the kind's request and response messages. Response is
	// nil when the call failed.
	Request, Response []byte
	// Err is the error the engine got from the call, "" if none.
	Err string
	// Start is when the engine made the call: the log's end time less the
	// duration.
	Start time.Time
	// Duration is how long the call took, as the engine measured it.
	Duration time.Duration
}

// Registration says where a program registered a callback's token.
type Registration struct {
	// Method is the monitor method that registered the token:
	// "RegisterStackTransform", "RegisterStackInvokeTransform",
	// "RegisterResourceHook", "RegisterErrorHook", or "RegisterResource" for
	// a resource's own transforms and state migrations.
	Method string
	// Name is a hook's or an error hook's name.
	Name string
	// Order is 1-based: the position among the stack transforms (or the
	// stack invoke transforms) in registration order within one run of the
	// program, or the position in the resource's transforms or
	// stateMigrations list.
	Order int
	// Resource is, for RegisterResource, the resource the callback is
	// attached to.
	Resource resource.URN
}

// String names where the program registered the call's function, as Run's
// messages name it: "stack transform #1", "stack invoke transform #1", a
// hook's or an error hook's name, a resource's own "transform #1 of the
// resource" or "migration #1", and "transform #1 of pet" for a transform
// registered on another resource (here one named pet) and called for
// this one.
func (c *Call) String() string { return keyFor(c.Kind, c.Registration).name(c.URN) }

// Messages decodes the call's payloads as the engine's protocol messages of
// its kind: *pulumirpc.TransformRequest and *pulumirpc.TransformResponse for
// a resource transform, and likewise TransformInvoke*, ResourceHook*,
// ErrorHook* and StateMigration* messages. res is nil when the call has no
// response (it failed).
func (c *Call) Messages() (req, res proto.Message, err error) {
	req, res = newMessages(c.Kind)
	if req == nil {
		return nil, nil, fmt.Errorf("replay: no messages for a call of kind %v", c.Kind)
	}
	if err := proto.Unmarshal(c.Request, req); err != nil {
		return nil, nil, fmt.Errorf("the request of callback call %d does not decode as a %v: %w", c.Seq, c.Kind, err)
	}
	if c.Response == nil {
		return req, nil, nil
	}
	if err := proto.Unmarshal(c.Response, res); err != nil {
		return nil, nil, fmt.Errorf("the response of callback call %d does not decode as a %v: %w", c.Seq, c.Kind, err)
	}
	return req, res, nil
}
