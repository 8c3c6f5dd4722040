package callbacks

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// CallInfo describes the callback invocation a function is serving. Get it
// with [CallInfoFrom]; [Logger] returns a logger already tagged with it.
type CallInfo struct {
	// Kind is the callback's kind.
	Kind Kind
	// Name is the registration's name (see [Name]); it may be empty.
	Name string
	// Token is the token the engine called the callback with.
	Token string

	// The resource the call is about, as the Func's decoder found it in
	// the request (see [NewFunc]). Resource transforms get Type and
	// ResourceName from the request and, in package transforms, the URN
	// the resource will have; invoke transforms put the function token in
	// Type.
	URN          string
	Type         string
	ResourceName string

	// DryRun is true during a preview. The request does not say so: the
	// typed packages of this module learn it from the engine when they
	// register, and their decoders set it. It is false for the protobuf
	// builders and Raw.
	DryRun bool
	// Attempt is, for error hooks, how many times the operation has failed so
	// far (1 on the first failure); zero for other kinds.
	Attempt int
	// Deadline is the deadline this package put on the call, if any.
	Deadline time.Time
	// AcceptsByteStrings is the registration's [AcceptsByteStrings] choice:
	// whether the engine was told it may send, and will accept back,
	// non-UTF-8 strings as byte-string envelopes.
	AcceptsByteStrings bool
}

func (ci *CallInfo) resourceSuffix() string {
	switch {
	case ci.URN != "":
		return " for " + clip(ci.URN, maxEcho)
	case ci.ResourceName != "":
		return " for " + clip(ci.Type, maxEcho) + " " + clip(ci.ResourceName, maxEcho)
	case ci.Type != "":
		return " for " + clip(ci.Type, maxEcho)
	}
	return ""
}

// callState is what a call's context carries: the info plus the registry
// whose logger and reporter serve it. The resource fields of info are filled
// in as the request is decoded (see NewFunc) and read both by the
// function's own goroutine (see Registry.run), which may outlive the call,
// and by the goroutine that answers the engine, so they are guarded by mu.
type callState struct {
	reg  *Registry
	mu   sync.Mutex
	info CallInfo

	failure    string // the error a function answered with (RecordFailure)
	panicValue string // the value of a panic, clipped
}

// keep puts back what a decoder given &cs.info may not change (see
// NewFunc): everything but the resource, DryRun and Attempt.
func (cs *callState) keep(before *CallInfo) {
	cs.mu.Lock()
	ci := &cs.info
	ci.Kind, ci.Name, ci.Token = before.Kind, before.Name, before.Token
	ci.Deadline, ci.AcceptsByteStrings = before.Deadline, before.AcceptsByteStrings
	cs.mu.Unlock()
}

func (cs *callState) snapshot() CallInfo {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.info
}

type callKey struct{}

func stateFrom(ctx context.Context) *callState {
	cs, _ := ctx.Value(callKey{}).(*callState)
	return cs
}

// CallInfoFrom returns the description of the callback invocation ctx belongs
// to, and false when ctx is not a callback's context.
func CallInfoFrom(ctx context.Context) (CallInfo, bool) {
	if cs := stateFrom(ctx); cs != nil {
		return cs.snapshot(), true
	}
	return CallInfo{}, false
}

// Logger returns the server's logger tagged with the current call's kind,
// registration name, token and resource. Outside a callback it returns
// slog.Default().
func Logger(ctx context.Context) *slog.Logger {
	cs := stateFrom(ctx)
	if cs == nil {
		return slog.Default()
	}
	info := cs.snapshot()
	return cs.reg.cfg.logger.With(info.attrs()...)
}

func (ci *CallInfo) attrs() []any {
	a := []any{slog.String("kind", ci.Kind.String()), slog.String("token", ci.Token)}
	if ci.Name != "" {
		a = append(a, slog.String("name", ci.Name))
	}
	if ci.URN != "" {
		a = append(a, slog.String("urn", ci.URN))
	}
	if ci.Type != "" {
		a = append(a, slog.String("type", ci.Type))
	}
	if ci.ResourceName != "" {
		a = append(a, slog.String("resource", ci.ResourceName))
	}
	if ci.DryRun {
		a = append(a, slog.Bool("dry_run", true))
	}
	if ci.Attempt > 0 {
		a = append(a, slog.Int("attempt", ci.Attempt))
	}
	return a
}
