package callbacks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/langhost/callbacks/internal/calllog"
	"github.com/langhost/callbacks/internal/callsite"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Registry maps tokens to registered functions and invokes them. It needs no
// socket: [Registry.Invoke] is the whole callback protocol minus the transport,
// and a [Server] only adapts it to gRPC.
//
// A Registry is safe for concurrent use: registrations, unregistrations and
// invocations may happen from any number of goroutines. Lookups take a read
// lock on a map, so their cost does not grow with the number of entries.
type Registry struct {
	cfg    config
	tracer trace.Tracer
	engine atomic.Pointer[engineReporter]   // set by a server with an engine address
	calls  atomic.Pointer[calllog.Exporter] // set by a server that records calls in Pulumi's log

	mu      sync.RWMutex
	entries map[string]*entry
}

// entry is one registration. It is immutable once stored.
type entry struct {
	kind        Kind
	name        string
	decode      decoder
	timeout     time.Duration
	failOpen    bool
	rejectBytes bool
	site        string // the user's line that registered it, for spans
}

// NewRegistry returns an empty registry configured by opts. An option with an
// invalid value is an error wrapping [ErrInvalidOption].
func NewRegistry(opts ...RegistryOption) (*Registry, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newRegistry(cfg), nil
}

func newRegistry(cfg config) *Registry {
	return &Registry{cfg: cfg, entries: make(map[string]*entry),
		tracer: cfg.tracerProvider().Tracer(instrumentation)}
}

// Register stores f under a new random (version 4 UUID) token and returns the
// token. It fails with [ErrNilFunc] for a Func without a function and with
// [ErrInvalidOption] for an option with an invalid value, both as an [*Error].
func (r *Registry) Register(f Func, opts ...RegisterOption) (string, error) {
	e, err := newEntry(f, opts)
	if err != nil {
		return "", err
	}
	return r.store(e), nil
}

func newEntry(f Func, opts []RegisterOption) (*entry, error) {
	if f.decode == nil || !f.kind.valid() {
		return nil, &Error{Code: codes.InvalidArgument, Kind: f.kind, Err: ErrNilFunc,
			Msg: fmt.Sprintf("callbacks: registering %s: %v", f.kind, ErrNilFunc)}
	}
	e := &entry{kind: f.kind, decode: f.decode, site: callsite.Site()}
	if err := e.apply(opts); err != nil {
		return nil, &Error{Code: codes.InvalidArgument, Kind: f.kind, Err: err,
			Msg: fmt.Sprintf("callbacks: registering %s: %v", f.kind, err)}
	}
	return e, nil
}

// apply applies opts to e, skipping nil ones, and stops at the first
// invalid one.
func (e *entry) apply(opts []RegisterOption) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.applyReg(e); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) store(e *entry) string {
	for {
		token := uuid.NewString()
		r.mu.Lock()
		if _, taken := r.entries[token]; !taken {
			r.entries[token] = e
			r.mu.Unlock()
			return token
		}
		// A collision of random UUIDs means a broken random source; never
		// hand out one token twice.
		r.mu.Unlock()
	}
}

// Unregister removes the registration for token and reports whether there was
// one. Calls already running finish; later calls get NotFound. Tokens are
// never reused, so an unregistered token never reaches another function.
func (r *Registry) Unregister(token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.entries[token]
	delete(r.entries, token)
	return ok
}

// Lookup reports the kind and name registered under token.
func (r *Registry) Lookup(token string) (kind Kind, name string, ok bool) {
	e := r.lookup(token)
	if e == nil {
		return 0, "", false
	}
	return e.kind, e.name, true
}

// Len returns the number of registrations.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.entries)
}

func (r *Registry) lookup(token string) *entry {
	r.mu.RLock()
	e := r.entries[token]
	r.mu.RUnlock()
	return e
}

// Invoke runs the callback registered under token on payload and returns the
// encoded response. The payload stays the caller's: the request keeps no
// reference to it (only [Raw] hands it on, still the caller's). Every error
// is an [*Error] carrying the gRPC code the engine should see; see the
// package documentation for the mapping. The call is traced in a span of its
// own, a child of the span ctx carries (a [Server] traces the RPC instead;
// see the package documentation, "Tracing").
func (r *Registry) Invoke(ctx context.Context, token string, payload []byte) ([]byte, error) {
	ctx, span := r.startSpan(ctx)
	defer span.End()
	return r.invoke(ctx, token, payload, invocation{span: span})
}

// InvokeOwned is [Registry.Invoke] for a payload handed over to the call:
// the caller never reads or writes it again, so the decoded request may
// share its bytes instead of copying them. A [Server] hands its calls over
// the same way, with the bytes its codec received.
func (r *Registry) InvokeOwned(ctx context.Context, token string, payload []byte) ([]byte, error) {
	ctx, span := r.startSpan(ctx)
	defer span.End()
	return r.invoke(ctx, token, payload, invocation{span: span, owned: true})
}

// invocation says how a call reached the registry.
type invocation struct {
	span    trace.Span    // the call's span
	served  bool          // a server's call: span is the RPC's
	owned   bool          // the payload is the call's own (see InvokeOwned)
	running *runningFuncs // the server's functions still running, nil for none
}

// invoke is Invoke, InvokeOwned and a server's call, as how says.
func (r *Registry) invoke(ctx context.Context, token string, payload []byte, how invocation) ([]byte, error) {
	e := r.lookup(token)
	if e == nil {
		ce := r.refuse(ctx, token)
		traceCall(how.span, how.served, nil, &CallInfo{Token: token}, "", ce, nil)
		if lg := r.calls.Load(); lg != nil {
			lc := logCall(&CallInfo{Token: token}, "", how.span)
			lg.Start(lc, nil)
			lg.Finish(lc, logEnd(nil, ce, nil, 0))
		}
		return nil, ce
	}
	cs := &callState{reg: r, info: CallInfo{
		Kind: e.kind, Name: e.name, Token: token, AcceptsByteStrings: !e.rejectBytes}}
	ctx = context.WithValue(ctx, callKey{}, cs)
	timeout := e.timeout
	if timeout == 0 {
		timeout = r.cfg.kindTimeout[e.kind]
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errOwnDeadline)
		defer cancel()
		cs.info.Deadline, _ = ctx.Deadline()
	}
	obs, lg := r.cfg.observer, r.calls.Load()
	var start time.Time
	if obs != nil || lg != nil {
		start = time.Now()
	}
	if obs != nil {
		obs.CallStarted(ctx, cs.info)
	}
	var out []byte
	c, err := recovered(r, ctx, cs, func() (call, error) { return e.decode(ctx, cs, payload, how.owned) })
	// The record of the call's start, in Pulumi's log, names its resource:
	// it goes once the request is decoded, before the function runs, and
	// keeps the request for the end record if that needs it.
	var lc *calllog.Call
	if lg != nil {
		info := cs.snapshot()
		lc = logCall(&info, e.site, how.span)
		lg.Start(lc, payload)
	}
	if err == nil {
		err = r.run(ctx, cs, how.running, label(e.kind, e.name), c)
	}
	if err == nil {
		out, err = recovered(r, ctx, cs, func() ([]byte, error) { return c.encode(ctx) })
	}
	var ce, failedOpen *Error
	info := cs.snapshot()
	if err != nil {
		ce = classify(ctx, &info, err)
		if e.failOpen && fault(ce) {
			r.report(ctx, SeverityWarning, info.URN, fmt.Sprintf(
				"%s failed open: %s; the engine was sent an empty response", label(e.kind, e.name), ce.Msg))
			out, ce, failedOpen = nil, nil, ce
		}
	}
	traceCall(how.span, how.served, cs, &info, e.site, ce, failedOpen)
	if lg != nil {
		end := logEnd(cs, ce, failedOpen, time.Since(start))
		end.Answer, end.AnswerFixed = out, how.served
		lg.Finish(lc, end)
	}
	if obs != nil {
		code := codes.OK
		if ce != nil {
			code = ce.Code
		}
		obs.CallFinished(ctx, info, code, time.Since(start))
	}
	if ce != nil {
		r.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "callback failed",
			slog.String("kind", e.kind.String()), slog.String("name", e.name),
			slog.String("code", ce.Code.String()), slog.String("error", ce.Msg))
		return nil, ce
	}
	return out, nil
}

// fault reports whether err is a function's failure to answer (a panic,
// runtime.Goexit or a deadline of this package's): what FailOpen forgives.
func fault(err error) bool { return errors.Is(err, ErrPanicked) || errors.Is(err, ErrTimeout) }

// refuse answers a call whose token is empty or unknown.
func (r *Registry) refuse(ctx context.Context, token string) *Error {
	ce := &Error{Code: codes.NotFound, Token: token, Err: ErrUnknownToken,
		Msg: fmt.Sprintf("callbacks: unknown callback token %q", clip(token, maxEcho))}
	if token == "" {
		ce.Code, ce.Err, ce.Msg = codes.InvalidArgument, ErrInvalidRequest, "callbacks: empty callback token"
	}
	if obs := r.cfg.observer; obs != nil {
		info := CallInfo{Token: token}
		obs.CallStarted(ctx, info)
		obs.CallFinished(ctx, info, ce.Code, 0)
	}
	return ce
}

// recovered runs f, the decoder or the encoder, on the goroutine the call
// arrived on: a panic in it only fails the call.
func recovered[T any](r *Registry, ctx context.Context, cs *callState, f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			info := cs.snapshot()
			err = r.panicked(ctx, &info, label(info.Kind, info.Name), p)
		}
	}()
	return f()
}

// runner is what run runs: a decoded call, or a function given to
// Runner.Run.
type runner interface {
	run(ctx context.Context) error
}

// run is the one way this module runs a user function, registered or run
// inside one (Runner.Run): on a goroutine of its own, waiting for it or for
// ctx, so that a deadline or the engine's cancellation ends the call even
// when the function ignores its context (only its result is dropped). A
// panic is recovered where it happened, so the stack logged names the
// user's line; runtime.Goexit (t.FailNow in a test) fails the call at once,
// not as an overrun. what names the function in errors. A server's
// functions are counted in running until they return (see Server.Invoke).
func (r *Registry) run(ctx context.Context, cs *callState, running *runningFuncs, what string, fn runner) error {
	done := make(chan error, 1)
	running.add(cs)
	go func() {
		err := errGoexit // unless fn returns or panics
		defer func() {
			if p := recover(); p != nil {
				info := cs.snapshot()
				err = r.panicked(ctx, &info, what, p)
			} else if err == errGoexit {
				info := cs.snapshot()
				err = &Error{Code: codes.Internal, Kind: info.Kind, Name: info.Name, Token: info.Token, Err: ErrPanicked,
					Msg: fmt.Sprintf("callbacks: %s%s exited its goroutine (runtime.Goexit) without answering", what, info.resourceSuffix())}
			}
			running.remove(cs)
			done <- err
		}()
		err = fn.run(ctx)
	}()
	select {
	case err := <-done:
		if ctx.Err() != nil {
			// It returned as its time ran out: the deadline's verdict,
			// whichever of the two this goroutine saw first.
			return context.Cause(ctx)
		}
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// A Runner runs functions inside a callback as a registration with its
// options runs its own, as transforms.Attach runs its bindings.
type Runner struct{ e entry }

// NewRunner returns a Runner for opts ([Name], [Timeout], [FailOpen]). An
// invalid option, or AcceptsByteStrings(false), is an error wrapping
// [ErrInvalidOption].
func NewRunner(opts ...RegisterOption) (*Runner, error) {
	rn := &Runner{}
	err := rn.e.apply(opts)
	if err == nil && rn.e.rejectBytes {
		err = invalid("AcceptsByteStrings(false) applies to a registration, not to a function run inside one")
	}
	return rn, err
}

// Name is the [Name] given, or "".
func (rn *Runner) Name() string { return rn.e.name }

// Run runs fn, named what in messages, in the callback whose context is
// ctx, as the registry runs a registered function: on a goroutine of its
// own, with ctx bounded by the [Timeout], if any. It returns fn's error
// once fn returns. A panic (its stack, from fn's own line, goes where a
// registered function's goes), runtime.Goexit, or an overrun of the
// Timeout, even by a function that ignores its context, ends the run at
// once with an [*Error] wrapping [ErrPanicked] or [ErrTimeout]; with
// [FailOpen], such a fault is reported as a warning under the call's
// resource instead, and Run returns failedOpen and a nil error. After an
// error, fn may still be running.
func (rn *Runner) Run(ctx context.Context, what string, fn func(ctx context.Context) error) (failedOpen bool, err error) {
	cs := stateFrom(ctx)
	if cs == nil {
		cs = &callState{reg: detached}
	}
	runCtx := ctx
	var own error
	if rn.e.timeout > 0 {
		own = fmt.Errorf("%w: %s did not answer within %v", ErrTimeout, what, rn.e.timeout)
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, rn.e.timeout, own)
		defer cancel()
	}
	err = cs.reg.run(runCtx, cs, nil, what, runFunc(fn))
	info := cs.snapshot()
	if own != nil && runCtx.Err() != nil && context.Cause(runCtx) == own {
		err = &Error{Code: codes.DeadlineExceeded, Kind: info.Kind, Name: info.Name, Token: info.Token,
			Err: fmt.Errorf("%w: %w", own, context.DeadlineExceeded),
			Msg: fmt.Sprintf("callbacks: %s%s did not answer within %v", what, info.resourceSuffix(), rn.e.timeout)}
	}
	if err != nil && rn.e.failOpen && fault(err) {
		cs.reg.report(ctx, SeverityWarning, info.URN, err.Error()+"; it fails open, so it changed nothing")
		return true, nil
	}
	return false, err
}

// Isolates reports whether Run may leave its function running or forgive
// its fault (a Timeout or FailOpen): give it a copy of what it shares with
// the caller, to keep only when Run returns no error and not failedOpen.
func (rn *Runner) Isolates() bool { return rn.e.timeout > 0 || rn.e.failOpen }

type runFunc func(ctx context.Context) error // a function given to Runner.Run

func (f runFunc) run(ctx context.Context) error { return f(ctx) }

// detached serves Runner.Run outside a callback: the default logger.
var detached = newRegistry(func() config { c := defaultConfig(); c.finish(); return c }())

var errGoexit = errors.New("callbacks: runtime.Goexit") // a function's result until it returns

// maxPanicValue bounds the panic value an error repeats.
const maxPanicValue = 1 << 10

// panicked is the error for a panic with value p of the function what, in
// the call ci; it logs the stack, so it runs where the panic was recovered.
func (r *Registry) panicked(ctx context.Context, ci *CallInfo, what string, p any) error {
	// The user sees the panic's value (clipped), as they would see an error
	// the function returned. The stack is for whoever asks for it: the
	// engine's log gets it at debug severity, which `pulumi up` shows only
	// with --debug, and a logger set with WithLogger at debug level. A
	// Reporter set with WithReporter gets what callbacks report, not this.
	// The message says where the stack went.
	value := clip(fmt.Sprint(p), maxPanicValue)
	if cs := stateFrom(ctx); cs != nil {
		cs.mu.Lock()
		cs.panicValue = value
		cs.mu.Unlock()
	}
	msg := fmt.Sprintf("%s%s panicked: %s", what, ci.resourceSuffix(), value)
	stack := string(debug.Stack())
	r.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "callback panicked",
		slog.String("kind", ci.Kind.String()), slog.String("name", ci.Name), slog.String("token", ci.Token),
		slog.String("panic", value), slog.String("stack", stack))
	where := " (its stack goes to a debug-level logger: callbacks.WithLogger)"
	if e := r.engine.Load(); e != nil && r.cfg.reporter == nil {
		r.report(ctx, SeverityDebug, ci.URN, msg+"\n"+stack)
		where = " (its stack is in the engine's debug log: pulumi up --debug)"
	}
	return &Error{
		Code: codes.Internal, Kind: ci.Kind, Name: ci.Name, Token: ci.Token, Err: ErrPanicked,
		Msg: msg + where,
	}
}

// reporter returns where reports go: the reporter set with WithReporter, else
// the engine of a server with an engine address, else the logger.
func (r *Registry) reporter() Reporter {
	if r.cfg.reporter != nil {
		return r.cfg.reporter
	}
	if e := r.engine.Load(); e != nil {
		return e
	}
	return loggerReporter{r.cfg.logger}
}

func (r *Registry) report(ctx context.Context, sev Severity, urn, msg string) {
	if err := r.reporter().Report(ctx, sev, urn, msg); err != nil {
		r.cfg.logger.LogAttrs(ctx, sev.level(), msg, slog.String("urn", urn),
			slog.String("undelivered", status.Convert(err).Message()))
	}
}

// runningFuncs is the set of a server's user functions whose goroutines
// have not returned. A nil set counts nothing: a registry invoked without a
// server does not track its functions.
type runningFuncs struct {
	mu sync.Mutex
	m  map[*callState]struct{}
}

func (f *runningFuncs) add(cs *callState) {
	if f == nil {
		return
	}
	f.mu.Lock()
	if f.m == nil {
		f.m = make(map[*callState]struct{})
	}
	f.m[cs] = struct{}{}
	f.mu.Unlock()
}

func (f *runningFuncs) remove(cs *callState) {
	if f == nil {
		return
	}
	f.mu.Lock()
	delete(f.m, cs)
	f.mu.Unlock()
}

// list returns the calls whose functions are still running, in no order.
func (f *runningFuncs) list() []CallInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	infos := make([]CallInfo, 0, len(f.m))
	for cs := range f.m {
		infos = append(infos, cs.snapshot())
	}
	return infos
}

// reportOutliving names, once each, the functions still running after their
// server stopped: their calls have ended (the engine went away, or a
// deadline or Shutdown's context ended them) but the functions ignored
// their contexts and go on, holding whatever they hold, and nothing will
// read their results. The engine is gone or going, so the report goes to
// the logger at warning level, and to a Reporter set with WithReporter.
func (r *Registry) reportOutliving(ctx context.Context, running *runningFuncs) {
	for _, info := range running.list() {
		msg := fmt.Sprintf("callbacks: %s%s is still running after its server stopped (its deployment ended); nothing will read its result",
			label(info.Kind, info.Name), info.resourceSuffix())
		r.cfg.logger.Log(ctx, slog.LevelWarn, msg, info.attrs()...)
		if rep := r.cfg.reporter; rep != nil {
			_ = rep.Report(ctx, SeverityWarning, info.URN, msg)
		}
	}
}
