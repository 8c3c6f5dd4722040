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
	engine atomic.Pointer[engineReporter] // set by a server with an engine address

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
	cfg, err := newRegistryConfig(opts)
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
// encoded response. The payload stays the caller's: the call copies what it
// keeps of it. Every error is an [*Error] carrying the gRPC code the engine
// should see; see the package documentation for the mapping. The call is
// traced in a span of its own, a child of the span ctx carries (a [Server]
// traces the RPC instead; see the package documentation, "Tracing").
func (r *Registry) Invoke(ctx context.Context, token string, payload []byte) ([]byte, error) {
	ctx, span := r.startSpan(ctx)
	defer span.End()
	return r.invoke(ctx, span, false, token, payload, false, nil)
}

// InvokeOwned is [Registry.Invoke] for a payload handed over to the call:
// the caller never reads or writes it again, so the decoded request may
// share its bytes instead of copying them. The server invokes this way,
// with the bytes its codec received.
func (r *Registry) InvokeOwned(ctx context.Context, token string, payload []byte) ([]byte, error) {
	ctx, span := r.startSpan(ctx)
	defer span.End()
	return r.invoke(ctx, span, false, token, payload, true, nil)
}

// invoke is Invoke or InvokeOwned in span, which is the server's span for
// the RPC when served; a server counts its functions while they run in
// running (nil for none).
func (r *Registry) invoke(ctx context.Context, span trace.Span, served bool, token string, payload []byte, owned bool, running *runningFuncs) ([]byte, error) {
	e := r.lookup(token)
	if e == nil {
		ce := r.refuse(ctx, token)
		traceCall(span, served, nil, &CallInfo{Token: token}, "", ce, nil)
		return nil, ce
	}
	cs := &callState{reg: r, running: running, info: CallInfo{
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
	obs := r.cfg.observer
	var start time.Time
	if obs != nil {
		start = time.Now()
		obs.CallStarted(ctx, cs.info)
	}
	var out []byte
	c, err := r.decode(ctx, e, cs, payload, owned)
	if err == nil {
		err = r.run(ctx, cs, c)
	}
	if err == nil {
		out, err = r.encode(ctx, cs, c)
	}
	var ce, failedOpen *Error
	info := cs.snapshot()
	if err != nil {
		ce = classify(ctx, &info, err)
		if e.failOpen && (errors.Is(ce, ErrPanicked) || errors.Is(ce, ErrTimeout)) {
			r.report(ctx, SeverityWarning, info.URN, fmt.Sprintf(
				"%s failed open: %s; the engine was sent an empty response", label(e.kind, e.name), ce.Msg))
			out, ce, failedOpen = nil, nil, ce
		}
	}
	traceCall(span, served, cs, &info, e.site, ce, failedOpen)
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

// decode runs e's decoder on payload on the goroutine the call arrived on.
// A panic in the decoder only fails the call.
func (r *Registry) decode(ctx context.Context, e *entry, cs *callState, payload []byte, owned bool) (c call, err error) {
	defer func() {
		if p := recover(); p != nil {
			info := cs.snapshot()
			c, err = nil, r.panicked(ctx, &info, p)
		}
	}()
	return e.decode(ctx, cs, payload, owned)
}

// run calls the function on a goroutine of its own and waits for it or for
// the call's context. That way a deadline or the engine's cancellation ends
// the call even when the function ignores its context (it keeps running
// until it returns; only its result is dropped), and a function that ends
// its goroutine with runtime.Goexit (t.FailNow in a test, for one) fails
// the call instead of leaving the engine waiting forever.
//
// A server's calls are counted while their functions run (see
// Server.Invoke), so that the server can name those still running when it
// stops; a function is counted out before its result is handed over.
func (r *Registry) run(ctx context.Context, cs *callState, c call) error {
	done := make(chan error, 1)
	cs.running.add(cs)
	finish := func(err error) {
		cs.running.remove(cs)
		done <- err
	}
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			p := recover()
			info := cs.snapshot()
			if p != nil {
				finish(r.panicked(ctx, &info, p))
				return
			}
			finish(&Error{Code: codes.Internal, Kind: info.Kind, Name: info.Name, Token: info.Token, Err: ErrPanicked,
				Msg: fmt.Sprintf("callbacks: %s%s exited its goroutine (runtime.Goexit) without answering", label(info.Kind, info.Name), info.resourceSuffix())})
		}()
		err := c.run(ctx)
		returned = true
		finish(err)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// encode encodes the function's result, back on the goroutine the call
// arrived on. A panic in the encoder only fails the call.
func (r *Registry) encode(ctx context.Context, cs *callState, c call) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			info := cs.snapshot()
			out, err = nil, r.panicked(ctx, &info, p)
		}
	}()
	return c.encode(ctx)
}

// maxPanicValue bounds the panic value an error repeats.
const maxPanicValue = 1 << 10

func (r *Registry) panicked(ctx context.Context, ci *CallInfo, p any) error {
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
	msg := fmt.Sprintf("%s%s panicked: %s", label(ci.Kind, ci.Name), ci.resourceSuffix(), value)
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
