package program_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// A program's callbacks are in the engine's trace, on the simulator as
// under `pulumi up --otel-traces`: each call the engine makes is a server
// span of the program's under the engine's client span, labelled with the
// callback and its resource; a failing hook's span is an error; the
// program's own calls to the engine (registrations, reports) are client
// spans the engine's server spans continue.
func TestCallbacksInTheEnginesTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	eng := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"), enginetest.WithTracing(tp, trace.SpanContext{}))
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			mon, err := program.Monitor(ctx, callbacks.WithTracerProvider(tp))
			if err != nil {
				return err
			}
			c := ctx.Context()
			_, err1 := transforms.RegisterStack(c, mon, func(context.Context, *transforms.Args) (*transforms.Result, error) {
				return nil, nil
			}, callbacks.Name("tag"))
			audit, err2 := hooks.Register(c, mon, "audit", func(ctx context.Context, a *hooks.Args) error {
				callbacks.Info(ctx, "auditing "+a.Name)
				return errors.New("audit trail unavailable")
			}, hooks.IgnoreErrors())
			if err := errors.Join(err1, err2); err != nil {
				return err
			}
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", pulumi.Map{}, &r,
				program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}}))
		})
	})
	require.NoError(t, res.ProgramErr)
	require.NoError(t, res.Err)

	// A served call's span ends after its answer is sent: wait (ten
	// seconds at most) until the transform's and the hook's have.
	served := func() (n int) {
		for _, s := range exp.GetSpans() {
			if s.Name == "pulumirpc.Callbacks/Invoke" && s.SpanKind == trace.SpanKindServer {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); served() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	spans := exp.GetSpans()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	parentOf := func(s tracetest.SpanStub) (tracetest.SpanStub, bool) {
		p, ok := byID[s.Parent.SpanID()]
		return p, ok
	}
	kinds := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.Name != "pulumirpc.Callbacks/Invoke" || s.SpanKind != trace.SpanKindServer {
			continue
		}
		a := attrs(s)
		kinds[a["pulumi.callback.kind"]] = s
		engine, ok := parentOf(s)
		require.True(t, ok, "the callback span's parent was not exported")
		assert.Equal(t, trace.SpanKindClient, engine.SpanKind, "the callback span is under the engine's client span")
		assert.Equal(t, "pulumirpc.Callbacks/Invoke", engine.Name)
	}
	require.Contains(t, kinds, "resource_transform")
	require.Contains(t, kinds, "resource_hook")
	transform := attrs(kinds["resource_transform"])
	assert.Equal(t, "tag", transform["pulumi.callback.name"])
	assert.Regexp(t, `program/trace_test\.go:\d+$`, transform["pulumi.callback.site"], "the line that registered it")
	assert.Equal(t, "test:index:Thing", transform["pulumi.resource.type"])
	assert.Equal(t, "thing", transform["pulumi.resource.name"])

	hook := kinds["resource_hook"]
	assert.Equal(t, "audit", attrs(hook)["pulumi.callback.name"])
	assert.Equal(t, eng.URN(eng.StackURN(), "test:index:Thing", "thing"), attrs(hook)["pulumi.resource.urn"])
	assert.Equal(t, sdktrace.Status{Code: otelcodes.Error, Description: "audit trail unavailable"}, hook.Status)

	// The program's own calls: client spans, continued by the engine.
	clients := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindClient {
			clients[s.Name] = s
		}
	}
	for _, name := range []string{"pulumirpc.ResourceMonitor/GetDeploymentInfo",
		"pulumirpc.ResourceMonitor/RegisterStackTransform", "pulumirpc.ResourceMonitor/RegisterResourceHook"} {
		c, ok := clients[name]
		if assert.True(t, ok, "no client span %s", name) {
			continued := false
			for _, s := range spans {
				continued = continued || s.SpanKind == trace.SpanKindServer && s.Parent.SpanID() == c.SpanContext.SpanID()
			}
			assert.True(t, continued, "the engine's span for %s is not under the program's", name)
		}
	}
	log, ok := clients["pulumirpc.Engine/Log"]
	require.True(t, ok, "no client span for the hook's report")
	assert.Equal(t, hook.SpanContext.SpanID(), log.Parent.SpanID(), "the hook's report is under the hook's span")
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// A migration the SDK's callback server carries is traced as every
// callback is: its span, under the SDK's server span, names the callback,
// its resource and how it ended.
func TestMigrationsInTheTrace(t *testing.T) {
	prior := created(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	eng := enginetest.New(t, enginetest.WithState(prior))
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			if _, err := program.Monitor(ctx, callbacks.WithTracerProvider(tp)); err != nil {
				return err
			}
			upgrade, err := program.Migrations(ctx, renameLength, callbacks.Name("rename"), callbacks.Timeout(time.Minute))
			if err != nil {
				return err
			}
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", pulumi.Map{"size": pulumi.Int(2)}, &r, upgrade)
		})
	})
	require.NoError(t, res.Err, eng.Trace())
	var found []map[string]string
	for _, s := range exp.GetSpans() {
		if a := attrs(s); a["pulumi.callback.kind"] == "state_migration" {
			found = append(found, a)
		}
	}
	require.Len(t, found, 1, "one migration span")
	a := found[0]
	assert.Equal(t, "rename", a["pulumi.callback.name"])
	assert.Equal(t, string(eng.URN(eng.StackURN(), "test:index:Thing", "thing")), a["pulumi.resource.urn"])
	assert.Equal(t, "test:index:Thing", a["pulumi.resource.type"])
	assert.Equal(t, "thing", a["pulumi.resource.name"])
	assert.Equal(t, "OK", a["rpc.response.status_code"])
	assert.Regexp(t, `program/trace_test\.go:\d+$`, a["pulumi.callback.site"], "the line that registered it")
}
