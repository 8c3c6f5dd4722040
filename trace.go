package callbacks

import (
	"context"
	"errors"
	"strings"

	"github.com/langhost/callbacks/internal/calllog"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
)

// instrumentation names the tracer of this module's spans.
const instrumentation = "github.com/langhost/callbacks"

// The attributes of a call's span beyond the rpc.* ones of OpenTelemetry's
// gRPC instrumentation. error.type and the exception event follow
// OpenTelemetry's semantic conventions; the rest are Pulumi's own.
const (
	attrKind      = attribute.Key("pulumi.callback.kind")    // resource_transform, resource_hook, …
	attrName      = attribute.Key("pulumi.callback.name")    // the hook's or registration's name
	attrToken     = attribute.Key("pulumi.callback.token")   // the token the engine called
	attrSite      = attribute.Key("pulumi.callback.site")    // the user's line that registered it
	attrAttempt   = attribute.Key("pulumi.callback.attempt") // error hooks: failures so far
	attrFailOpen  = attribute.Key("pulumi.callback.failed_open")
	attrURN       = attribute.Key("pulumi.resource.urn")
	attrType      = attribute.Key("pulumi.resource.type") // for invoke transforms, the function's token
	attrResName   = attribute.Key("pulumi.resource.name")
	attrDryRun    = attribute.Key("pulumi.dry_run")
	attrErrorType = attribute.Key("error.type")
	attrRPCCode   = attribute.Key("rpc.response.status_code")
)

// kindAttrs are the values of pulumi.callback.kind, by Kind.
var kindAttrs = func() (a [kindCount]attribute.KeyValue) {
	for k := KindResourceTransform; k.valid(); k++ {
		a[k] = attrKind.String(strings.ReplaceAll(k.String(), " ", "_"))
	}
	return a
}()

// tracerProvider returns the provider the configuration names, or the
// global one. The global provider delegates to whatever provider is set
// later (the Go SDK sets one in pulumi.Run when the engine traces), so it
// is asked for once and kept.
func (c *config) tracerProvider() trace.TracerProvider {
	if c.tp != nil {
		return c.tp
	}
	return otel.GetTracerProvider()
}

// propagator reads and writes trace context on the wire as the engine does:
// W3C Trace Context, whatever the program's global propagator is.
var propagator = propagation.TraceContext{}

// serverStatsHandler traces the Callbacks service's calls with
// OpenTelemetry's gRPC instrumentation: a server span per Invoke, under the
// span the engine sent in the call's metadata. Health checks are not traced.
func (c *config) serverStatsHandler() stats.Handler {
	return otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(c.tracerProvider()),
		otelgrpc.WithPropagators(propagator),
		otelgrpc.WithFilter(func(info *stats.RPCTagInfo) bool {
			return strings.HasPrefix(info.FullMethodName, "/pulumirpc.Callbacks/")
		}))
}

// clientStatsHandler traces a client's calls to the engine as the server
// traces the engine's: a client span per call, its trace context sent in
// the call's metadata the way the engine reads it.
func (c *config) clientStatsHandler() stats.Handler {
	return otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(c.tracerProvider()), otelgrpc.WithPropagators(propagator))
}

// initialTracerProvider is the global tracer provider as this package found
// it: OpenTelemetry's default, which makes no spans until a provider is set.
var initialTracerProvider = otel.GetTracerProvider()

// tracing reports whether a server made now traces its calls: a provider
// was given with WithTracerProvider, or one has been set as the global one
// since this package was initialized (the Go SDK sets one in pulumi.Run,
// before the program runs, when the engine traces the deployment). A
// server that does not trace installs no instrumentation at all: gRPC's
// stats events alone cost a call about a tenth of its CPU time
// (BENCHMARKS.md, "Tracing").
func (c *config) tracing() bool {
	return c.tp != nil || otel.GetTracerProvider() != initialTracerProvider
}

// TracerProvider returns the tracer provider the server's spans come from:
// the one given with [WithTracerProvider], or the global one.
func (s *Server) TracerProvider() trace.TracerProvider { return s.reg.cfg.tracerProvider() }

// RecordFailure records that the current call's function failed although
// the call answers the engine normally: a hook that sends its error back in
// its response, which no gRPC status says. The call's span is marked as an
// error with err's message. The typed hooks of this module call it; a
// [Raw] or [ResourceHook] function that answers with an error may too.
// Outside a callback's context it does nothing.
func RecordFailure(ctx context.Context, err error) {
	cs := stateFrom(ctx)
	if cs == nil || err == nil {
		return
	}
	cs.mu.Lock()
	cs.failure = err.Error()
	cs.mu.Unlock()
}

// startSpan starts the span of a call that no server traces: a child of
// whatever span ctx carries.
func (r *Registry) startSpan(ctx context.Context) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, "callbacks.Registry/Invoke", trace.WithSpanKind(trace.SpanKindInternal))
}

// traceCall writes what the call was and how it ended into its span, if the
// span records. site is where the callback was registered; ce is the error
// the engine gets, nil if none; failedOpen is the error a fail-open
// registration turned into an empty response.
func traceCall(span trace.Span, served bool, cs *callState, info *CallInfo, site string, ce, failedOpen *Error) {
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	if info.Kind.valid() {
		attrs = append(attrs, kindAttrs[info.Kind])
	}
	attrs = append(attrs, attrToken.String(info.Token))
	if info.Name != "" {
		attrs = append(attrs, attrName.String(info.Name))
	}
	if site != "" {
		attrs = append(attrs, attrSite.String(site))
	}
	if info.URN != "" {
		attrs = append(attrs, attrURN.String(info.URN))
	}
	if info.Type != "" {
		attrs = append(attrs, attrType.String(info.Type))
	}
	if info.ResourceName != "" {
		attrs = append(attrs, attrResName.String(info.ResourceName))
	}
	if info.Kind.valid() && info.Kind != KindRaw {
		attrs = append(attrs, attrDryRun.Bool(info.DryRun))
	}
	if info.Attempt > 0 {
		attrs = append(attrs, attrAttempt.Int(info.Attempt))
	}
	var failure, panicValue string
	if cs != nil {
		cs.mu.Lock()
		failure, panicValue = cs.failure, cs.panicValue
		cs.mu.Unlock()
	}
	failed := ce
	if failed == nil && failedOpen != nil {
		failed = failedOpen
		attrs = append(attrs, attrFailOpen.Bool(true))
	}
	if !served {
		code := codes.OK
		if ce != nil {
			code = ce.Code
		}
		attrs = append(attrs, attrRPCCode.String(codeName(code)))
	}
	switch {
	case failed != nil:
		attrs = append(attrs, attrErrorType.String(errorType(failed)))
		span.SetStatus(otelcodes.Error, failed.Msg)
	case failure != "":
		attrs = append(attrs, attrErrorType.String("response_error"))
		span.SetStatus(otelcodes.Error, failure)
	}
	if panicValue != "" {
		// The value only: the stack is for the engine's debug log.
		span.AddEvent("exception", trace.WithAttributes(
			attribute.String("exception.type", "panic"), attribute.String("exception.message", panicValue)))
	}
	span.SetAttributes(attrs...)
}

// errorType is the error.type of a failed call: what this package's
// sentinel says went wrong, else the gRPC code the engine got.
func errorType(ce *Error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{ErrUnknownToken, "unknown_token"}, {ErrInvalidRequest, "invalid_request"}, {ErrPanicked, "panic"},
		{ErrTimeout, "timeout"}, {ErrEncode, "encode"}, {ErrInvalidResult, "invalid_result"},
	} {
		if errors.Is(ce, s.err) {
			return s.name
		}
	}
	return codeName(ce.Code)
}

// codeName is a gRPC code as OpenTelemetry's conventions spell it:
// "DEADLINE_EXCEEDED".
func codeName(c codes.Code) string { return calllog.CodeName(c) }
