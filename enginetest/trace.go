package enginetest

import (
	"context"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// WithTracing makes the simulator trace the deployment the way the engine
// does under `pulumi up --otel-traces`, with spans made by tp: a
// "deployment" span over the whole deployment (under parent's span, if
// parent is valid, as the engine's spans are under the CLI's); a server
// span for each call of the program to the ResourceMonitor and Engine
// services, continuing the trace context the call carries; and a client
// span for each call to a callback server (pulumirpc.Callbacks/Invoke),
// its trace context sent in the call's metadata as W3C Trace Context. A
// callback the program's calls cause (a transform) is under the call's
// span; one the engine makes of its own accord (a hook) is under the
// deployment's. A nil tp traces nothing, the default.
func WithTracing(tp trace.TracerProvider, parent trace.SpanContext) Option {
	return optionFunc(func(c *config) { c.tp, c.traceParent = tp, parent })
}

// traceOptions returns the deployment's context, carrying its span, and
// the options that trace the simulator's server and its clients.
func (c *config) traceOptions(base context.Context) (context.Context, trace.Span, []grpc.ServerOption, []grpc.DialOption) {
	if c.tp == nil {
		return base, nil, nil, nil
	}
	prop := otelgrpc.WithPropagators(propagation.TraceContext{})
	if c.traceParent.IsValid() {
		base = trace.ContextWithRemoteSpanContext(base, c.traceParent)
	}
	base, span := c.tp.Tracer("github.com/langhost/callbacks/enginetest").Start(base, "deployment")
	return base, span,
		[]grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(c.tp), prop))},
		[]grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(c.tp), prop))}
}

// callbackContext is the context of a call to a callback server: ctx if it
// is traced (the program's call that caused it), else the deployment's.
func (e *Engine) callbackContext(ctx context.Context) context.Context {
	if e.span == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return trace.ContextWithSpan(ctx, e.span)
}

// endSpan ends the deployment's span, if it is traced.
func (e *Engine) endSpan() {
	if e.span != nil {
		e.span.End()
	}
}
