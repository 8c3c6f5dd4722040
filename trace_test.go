package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
)

// newTracer returns a tracer provider that keeps every ended span in
// memory, shut down with the test.
func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spanNamed returns the one ended span called name.
func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q", name)
	return found[0]
}

// awaitServerSpan waits until a served call's span has ended: the client
// can have its answer before the server's stats handler ends the span. It
// gives up after ten seconds and leaves the verdict to the assertions
// that follow.
func awaitServerSpan(exp *tracetest.InMemoryExporter) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, s := range exp.GetSpans() {
			if s.Name == "pulumirpc.Callbacks/Invoke" && s.SpanKind == trace.SpanKindServer {
				return
			}
		}
	}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// A registry traces each call without a socket: a span under the caller's,
// saying which callback ran for which resource and how it ended. A hook
// that answers with an error is marked as failed although the call
// succeeds.
func TestRegistryTracesEachCall(t *testing.T) {
	tp, exp := newTracer(t)
	reg := newTestRegistry(t, callbacks.WithTracerProvider(tp), callbacks.WithLogger(discardLogger()))
	hook, err := reg.Register(callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return &pulumirpc.ResourceHookResponse{Error: "no quota left"}, nil
	}), callbacks.Name("quota"))
	require.NoError(t, err)
	errHook, err := reg.Register(callbacks.ErrorHook(func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
		return &pulumirpc.ErrorHookResponse{Retry: true}, nil
	}))
	require.NoError(t, err)
	panics, err := reg.Register(callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		panic("the value, not the stack")
	}))
	require.NoError(t, err)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	const urn = "urn:pulumi:dev::shop::random:index/randomPet:RandomPet::pet"
	req, _ := proto.Marshal(&pulumirpc.ResourceHookRequest{Urn: urn, Type: "random:index/randomPet:RandomPet", Name: "pet"})
	_, err = reg.Invoke(ctx, hook, req)
	require.NoError(t, err, "a hook that fails answers in its response")
	req, _ = proto.Marshal(&pulumirpc.ErrorHookRequest{Urn: urn, Errors: []string{"throttled", "throttled"}})
	_, err = reg.Invoke(ctx, errHook, req)
	require.NoError(t, err)
	_, err = reg.Invoke(ctx, panics, nil)
	require.ErrorIs(t, err, callbacks.ErrPanicked)
	_, err = reg.Invoke(ctx, "no-such-token", nil)
	require.ErrorIs(t, err, callbacks.ErrUnknownToken)
	parent.End()

	var calls []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "callbacks.Registry/Invoke" {
			calls = append(calls, s)
		}
	}
	require.Len(t, calls, 4)
	for _, s := range calls {
		assert.Equal(t, parent.SpanContext().SpanID(), s.Parent.SpanID(), "every call is a child of the caller's span")
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind)
	}

	failed := attrs(calls[0])
	assert.Equal(t, "resource_hook", failed["pulumi.callback.kind"].AsString())
	assert.Equal(t, "quota", failed["pulumi.callback.name"].AsString())
	assert.Equal(t, hook, failed["pulumi.callback.token"].AsString())
	assert.Regexp(t, `/trace_test\.go:\d+$`, failed["pulumi.callback.site"].AsString(), "where it was registered")
	assert.Equal(t, urn, failed["pulumi.resource.urn"].AsString())
	assert.Equal(t, "random:index/randomPet:RandomPet", failed["pulumi.resource.type"].AsString())
	assert.Equal(t, "pet", failed["pulumi.resource.name"].AsString())
	assert.Equal(t, attribute.BOOL, failed["pulumi.dry_run"].Type())
	assert.Equal(t, "OK", failed["rpc.response.status_code"].AsString(), "the engine got an answer")
	assert.Equal(t, "response_error", failed["error.type"].AsString())
	assert.Equal(t, sdktrace.Status{Code: otelcodes.Error, Description: "no quota left"}, calls[0].Status)

	retried := attrs(calls[1])
	assert.Equal(t, "error_hook", retried["pulumi.callback.kind"].AsString())
	assert.Equal(t, int64(2), retried["pulumi.callback.attempt"].AsInt64())
	assert.Equal(t, otelcodes.Unset, calls[1].Status.Code)
	assert.NotContains(t, retried, attribute.Key("error.type"))

	panicked := attrs(calls[2])
	assert.Equal(t, "panic", panicked["error.type"].AsString())
	assert.Equal(t, "INTERNAL", panicked["rpc.response.status_code"].AsString())
	assert.Equal(t, otelcodes.Error, calls[2].Status.Code)
	assert.Contains(t, calls[2].Status.Description, "the value, not the stack")
	require.Len(t, calls[2].Events, 1)
	ev := calls[2].Events[0]
	assert.Equal(t, "exception", ev.Name)
	assert.Contains(t, ev.Attributes, attribute.String("exception.message", "the value, not the stack"))
	for _, s := range []string{calls[2].Status.Description, ev.Attributes[0].Value.String(), ev.Attributes[1].Value.String()} {
		assert.NotContains(t, s, "goroutine", "a panic's stack is never in its span")
	}

	unknown := attrs(calls[3])
	assert.Equal(t, "unknown_token", unknown["error.type"].AsString())
	assert.Equal(t, "NOT_FOUND", unknown["rpc.response.status_code"].AsString())
}

// Served, a call is one server span under the engine's client span, the
// trace context coming in the call's metadata, and a user's function
// traces its own work under it through its context.
func TestServerSpanContinuesTheEnginesTrace(t *testing.T) {
	tp, exp := newTracer(t)
	env := serve(t, callbacks.WithTracerProvider(tp))
	tracer := tp.Tracer("user")
	cb, err := env.srv.Register(t.Context(), callbacks.ResourceTransform(func(ctx context.Context, _ *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		_, span := tracer.Start(ctx, "user work")
		span.End()
		return nil, errors.New("refused")
	}), callbacks.Name("tag"))
	require.NoError(t, err)

	// The engine's side: a client span per call, its context sent as W3C
	// Trace Context.
	conn := env.dial(t, grpc.WithStatsHandler(otelgrpc.NewClientHandler(
		otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{}))))
	req, _ := proto.Marshal(&pulumirpc.TransformRequest{Type: "random:index/randomPet:RandomPet", Name: "pet", Custom: true})
	_, err = pulumirpc.NewCallbacksClient(conn).Invoke(t.Context(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: req})
	require.Error(t, err)

	awaitServerSpan(exp)
	var client, server tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "pulumirpc.Callbacks/Invoke" && s.SpanKind == trace.SpanKindClient {
			client = s
		}
		if s.Name == "pulumirpc.Callbacks/Invoke" && s.SpanKind == trace.SpanKindServer {
			server = s
		}
	}
	require.True(t, server.SpanContext.IsValid(), "no server span among %d spans", len(exp.GetSpans()))
	assert.Equal(t, client.SpanContext.TraceID(), server.SpanContext.TraceID())
	assert.Equal(t, client.SpanContext.SpanID(), server.Parent.SpanID(), "the server span is the engine's span's child")
	assert.True(t, server.Parent.IsRemote())

	got := attrs(server)
	assert.Equal(t, "resource_transform", got["pulumi.callback.kind"].AsString())
	assert.Equal(t, "tag", got["pulumi.callback.name"].AsString())
	assert.Equal(t, "random:index/randomPet:RandomPet", got["pulumi.resource.type"].AsString())
	assert.Equal(t, "UNKNOWN", got["rpc.response.status_code"].AsString())
	assert.Equal(t, "UNKNOWN", got["error.type"].AsString())
	assert.Equal(t, otelcodes.Error, server.Status.Code)
	assert.Equal(t, "refused", server.Status.Description)
	assert.Equal(t, server.SpanContext.SpanID(), spanNamed(t, exp, "user work").Parent.SpanID(),
		"the function's own span is under the call's")
	for _, s := range exp.GetSpans() {
		assert.False(t, strings.HasPrefix(s.Name, "grpc.health"), "health checks are not traced: %s", s.Name)
	}
}

// With no tracer provider set anywhere, nothing is traced and calls work.
func TestNoTracerProviderTracesNothing(t *testing.T) {
	env := serve(t)
	cb, err := env.srv.Register(t.Context(), callbacks.Raw(func(ctx context.Context, b []byte) ([]byte, error) {
		if trace.SpanFromContext(ctx).IsRecording() {
			return nil, errors.New("a span records with no provider set")
		}
		return b, nil
	}))
	require.NoError(t, err)
	out, err := env.client.Invoke(t.Context(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: []byte("x")})
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), out.GetResponse())
}

func TestWithTracerProviderNil(t *testing.T) {
	_, err := callbacks.NewRegistry(callbacks.WithTracerProvider(nil))
	require.ErrorIs(t, err, callbacks.ErrInvalidOption)
}

// A server traces with the global tracer provider the program set before
// making it (the Go SDK sets one in pulumi.Run when the engine traces),
// and one made while none is set installs no instrumentation. Not
// parallel: it sets the process's global provider.
func TestGlobalTracerProvider(t *testing.T) {
	untraced := serve(t)
	tp, exp := newTracer(t)
	before := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(before) })
	traced := serve(t)
	for _, env := range []*harness{untraced, traced} {
		cb, err := env.srv.Register(t.Context(), callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
		require.NoError(t, err)
		_, err = env.client.Invoke(t.Context(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken()})
		require.NoError(t, err)
	}
	awaitServerSpan(exp)
	s := spanNamed(t, exp, "pulumirpc.Callbacks/Invoke")
	assert.Equal(t, "raw_callback", attrs(s)["pulumi.callback.kind"].AsString())
}

// Each call is a span saying which callback ran, for which resource, and
// how it ended: here a hook that fails, which answers the engine normally
// but whose span is an error.
func ExampleWithTracerProvider() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reg, err := callbacks.NewRegistry(callbacks.WithTracerProvider(tp))
	if err != nil {
		log.Fatal(err)
	}
	token, err := reg.Register(callbacks.ResourceHook(
		func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			return &pulumirpc.ResourceHookResponse{Error: "no quota left"}, nil
		}), callbacks.Name("quota"))
	if err != nil {
		log.Fatal(err)
	}
	req, _ := proto.Marshal(&pulumirpc.ResourceHookRequest{
		Urn: "urn:pulumi:dev::shop::random:index/randomPet:RandomPet::pet", Type: "random:index/randomPet:RandomPet", Name: "pet"})
	if _, err := reg.Invoke(context.Background(), token, req); err != nil {
		log.Fatal(err)
	}
	s := exp.GetSpans()[0]
	fmt.Println(s.Name, s.Status.Code, s.Status.Description)
	for _, kv := range s.Attributes {
		switch kv.Key {
		case "pulumi.callback.kind", "pulumi.callback.name", "pulumi.resource.urn", "error.type":
			fmt.Println(kv.Key, "=", kv.Value.AsString())
		}
	}
	// Output:
	// callbacks.Registry/Invoke Error no quota left
	// pulumi.callback.kind = resource_hook
	// pulumi.callback.name = quota
	// pulumi.resource.urn = urn:pulumi:dev::shop::random:index/randomPet:RandomPet::pet
	// error.type = response_error
}
