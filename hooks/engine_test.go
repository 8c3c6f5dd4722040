package hooks_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

const thingType = "test:index:Thing"

// deployment is one run of a program against the simulated engine.
type deployment struct {
	t      *testing.T
	engine *enginetest.Engine
	srv    *callbacks.Server
	mon    *monitor.Monitor
}

func startDeployment(t *testing.T, opts ...enginetest.Option) *deployment {
	t.Helper()
	e, err := enginetest.Start(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := wiretest.Listen(t)
	mon, err := monitor.Dial(e.MonitorAddr(), srv)
	require.NoError(t, err)
	return &deployment{t: t, engine: e, srv: srv, mon: mon}
}

func (d *deployment) register(name string, inputs resource.PropertyMap, b *transforms.HooksBinding) error {
	d.t.Helper()
	return d.registerCtx(d.t.Context(), name, inputs, b)
}

// registerCtx registers with ctx, which the test may end as the death of
// the program ends its calls.
func (d *deployment) registerCtx(ctx context.Context, name string, inputs resource.PropertyMap, b *transforms.HooksBinding) error {
	obj, err := plugin.MarshalProperties(inputs, plugin.MarshalOptions{KeepSecrets: true})
	if err != nil {
		return err
	}
	_, err = d.mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: thingType, Name: name, Custom: true, Object: obj,
		AcceptSecrets: true, AcceptResources: true, Hooks: hooks.BindingToProto(b),
	})
	return err
}

// finish ends the program the way it must: signal, wait, then stop serving.
func (d *deployment) finish() *enginetest.Result {
	d.t.Helper()
	// The test's own deadline bounds the wait.
	ctx := d.t.Context()
	require.NoError(d.t, d.mon.Finish(ctx))
	res, err := d.engine.Wait(ctx)
	require.NoError(d.t, err)
	return res
}

// TestEngineLifecycle runs two deployments: the first creates a resource
// whose hooks are attached by a stack transform; the second no longer
// declares it, re-registers the delete hook under the same name and sees it
// run after SignalAndWaitForShutdown.
func TestEngineLifecycle(t *testing.T) {
	t.Parallel()

	// First run: create.
	d := startDeployment(t)
	var created capture[*hooks.Args]
	_, err := hooks.Register(t.Context(), d.mon, "audit", func(_ context.Context, a *hooks.Args) error {
		created.set(a)
		return nil
	})
	require.NoError(t, err)
	_, err = hooks.Register(t.Context(), d.mon, "cleanup", noop)
	require.NoError(t, err)
	err = hooks.Attach(t.Context(), d.mon, transforms.Matching(transforms.ByType(thingType)),
		&transforms.HooksBinding{BeforeCreate: names("audit"), AfterDelete: names("cleanup")})
	require.NoError(t, err)

	require.NoError(t, d.register("db", resource.PropertyMap{
		"password": resource.MakeSecret(resource.NewProperty("hunter2")),
		"size":     resource.NewProperty(3.0),
	}, &transforms.HooksBinding{AfterDelete: names("cleanup")}))

	a, n := created.get()
	require.Equal(t, 1, n, "before_create must have run once\n%s", d.engine.Trace())
	assert.Equal(t, "db", a.Name)
	assert.Equal(t, thingType, a.Type)
	assert.Empty(t, a.ID, "before_create has no ID yet")
	require.True(t, a.NewInputs()["password"].IsSecret(), "got %v", a.NewInputs()["password"])
	assert.Equal(t, "hunter2", a.NewInputs()["password"].SecretValue().Element.StringValue())
	require.NotNil(t, a.NewOptions(), "the engine sends options to hooks")
	require.NotNil(t, a.NewOptions().Hooks)
	assert.Equal(t, map[string][]string{"BeforeCreate": {"audit"}, "AfterDelete": {"cleanup"}}, hooks.BindingNames(a.NewOptions().Hooks),
		"Attach merges with the binding the resource already had")

	res := d.finish()
	require.NoError(t, res.Err)
	prior := res.State

	// Second run: the resource is gone from the program.
	d2 := startDeployment(t, enginetest.WithState(prior))
	var deleted capture[*hooks.Args]
	_, err = hooks.Register(t.Context(), d2.mon, "cleanup", func(_ context.Context, a *hooks.Args) error {
		deleted.set(a)
		return nil
	})
	require.NoError(t, err)
	_, n = deleted.get()
	require.Equal(t, 0, n, "nothing is deleted before the program signals")

	res = d2.finish()
	require.NoError(t, res.Err)
	a, n = deleted.get()
	require.Equal(t, 1, n, "after_delete must have run once; trace:\n%s", d2.engine.Trace())
	assert.Equal(t, "db", a.Name)
	assert.NotEmpty(t, a.ID)
	assert.True(t, a.OldInputs()["password"].IsSecret())
	assert.Nil(t, a.NewInputs())
	assert.NotNil(t, a.OldOutputs())
}

func TestEngineHookFailure(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	_, err := hooks.Register(t.Context(), d.mon, "guard", func(context.Context, *hooks.Args) error {
		return errors.New("Oh no")
	})
	require.NoError(t, err)
	// As in the engine, the failed registration is never answered: the
	// deployment ends and reports the hook's failure on the resource, and
	// the registration waits until the program goes away.
	ctx, kill := context.WithCancel(t.Context())
	defer kill()
	registered := make(chan error, 1)
	go func() {
		registered <- d.registerCtx(ctx, "db", resource.PropertyMap{}, &transforms.HooksBinding{BeforeCreate: names("guard")})
	}()
	res, err := d.engine.Wait(t.Context())
	require.NoError(t, err)
	select {
	case err := <-registered:
		t.Fatalf("the engine answered the failed registration: %v", err)
	default:
	}
	kill()
	require.Equal(t, codes.Canceled, status.Code(<-registered), "the registration ends only with the program")
	require.True(t, res.Failed)
	assert.Contains(t, res.Err.Error(), `before hook "guard" failed: Oh no`)
	var msgs []string
	for _, diag := range res.Diagnostics {
		msgs = append(msgs, diag.Message)
	}
	assert.Contains(t, msgs, `before hook "guard" failed: Oh no`)
	assert.Contains(t, msgs, "update failed")
}

func TestEngineErrorHookRetry(t *testing.T) {
	t.Parallel()
	prov := &enginetest.FakeProvider{OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
		if req.Attempt == 1 {
			return nil, errors.New("throttled")
		}
		return &enginetest.CreateResponse{ID: "db-1", Outputs: req.Inputs}, nil
	}}
	d := startDeployment(t, enginetest.WithProvider(prov))
	var seen capture[*hooks.ErrorArgs]
	retry, err := hooks.RegisterErrorHook(t.Context(), d.mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
		seen.set(a)
		return a.Attempt() < 3, nil
	})
	require.NoError(t, err)

	require.NoError(t, d.register("db", resource.PropertyMap{"k": resource.NewProperty("v")}, &transforms.HooksBinding{OnError: []transforms.HookRef{retry}}))
	a, n := seen.get()
	require.Equal(t, 1, n, "the error hook runs once per failure\n%s", d.engine.Trace())
	assert.Equal(t, hooks.OperationCreate, a.FailedOperation)
	assert.Equal(t, 1, a.Attempt())
	assert.Contains(t, a.LastError(), "throttled")
	assert.Equal(t, "v", a.NewInputs()["k"].StringValue())
	require.NoError(t, d.finish().Err)
}

func TestEngineOldEngine(t *testing.T) {
	t.Parallel()
	d := startDeployment(t, enginetest.OldEngine())
	_, err := hooks.Register(t.Context(), d.mon, "h", noop)
	require.ErrorIs(t, err, monitor.ErrMissingFeature)
	assert.Empty(t, d.engine.Events("RegisterResourceHook"))
}
