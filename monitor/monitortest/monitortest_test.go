package monitortest_test

import (
	"context"
	"errors"
	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"testing"

	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestMain(m *testing.M) {
	// The example links the SDK, whose plugin package starts glog's flush
	// daemon at init.
	leakcheck.Main(m, goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

// Every method answers UNIMPLEMENTED when its field is nil, and every call
// is recorded all the same.
func TestNilFieldsAnswerUnimplemented(t *testing.T) {
	t.Parallel()
	fake := &monitortest.Fake{}
	c := monitortest.Serve(t, fake).Client()
	ctx := t.Context()
	calls := []struct {
		method string
		call   func() error
	}{
		{"GetDeploymentInfo", func() error { _, err := c.GetDeploymentInfo(ctx, &emptypb.Empty{}); return err }},
		{"SupportsFeature", func() error {
			_, err := c.SupportsFeature(ctx, &pulumirpc.SupportsFeatureRequest{Id: "transforms"})
			return err
		}},
		{"RegisterStackTransform", func() error { _, err := c.RegisterStackTransform(ctx, &pulumirpc.Callback{Token: "t"}); return err }},
		{"RegisterStackInvokeTransform", func() error {
			_, err := c.RegisterStackInvokeTransform(ctx, &pulumirpc.Callback{Token: "i"})
			return err
		}},
		{"RegisterResourceHook", func() error {
			_, err := c.RegisterResourceHook(ctx, &pulumirpc.RegisterResourceHookRequest{Name: "h"})
			return err
		}},
		{"RegisterErrorHook", func() error {
			_, err := c.RegisterErrorHook(ctx, &pulumirpc.RegisterErrorHookRequest{Name: "e"})
			return err
		}},
		{"SignalAndWaitForShutdown", func() error { _, err := c.SignalAndWaitForShutdown(ctx, &emptypb.Empty{}); return err }},
		{"RegisterResource", func() error {
			_, err := c.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{Type: "t", Name: "n"})
			return err
		}},
	}
	for _, tc := range calls {
		assert.Equal(t, codes.Unimplemented, status.Code(tc.call()), tc.method)
	}

	got := fake.Calls()
	require.Len(t, got, len(calls))
	for i, tc := range calls {
		assert.Equal(t, tc.method, got[i].Method)
		assert.Equal(t, 1, fake.Count(tc.method))
	}
	assert.True(t, proto.Equal(&pulumirpc.SupportsFeatureRequest{Id: "transforms"}, got[1].Request))
	hooks := monitortest.Requests[*pulumirpc.RegisterResourceHookRequest](fake, "RegisterResourceHook")
	require.Len(t, hooks, 1)
	assert.Equal(t, "h", hooks[0].GetName())
	assert.Empty(t, monitortest.Requests[*pulumirpc.ResourceInvokeRequest](fake, "Invoke"))
}

// The fields' answers reach the client, errors with their status, and the
// fields see the requests as sent.
func TestFieldsAnswer(t *testing.T) {
	t.Parallel()
	refused := status.Error(codes.FailedPrecondition, "refused")
	var seen []string
	fake := &monitortest.Fake{
		SupportsFeature: func(_ context.Context, id string) (bool, error) {
			if id == "broken" {
				return false, status.Error(codes.Internal, "broken")
			}
			return id == "transforms", nil
		},
		RegisterStackTransform: func(_ context.Context, cb *pulumirpc.Callback) error {
			seen = append(seen, cb.GetToken())
			cb.Token = "changed by the handler"
			return nil
		},
		RegisterStackInvokeTransform: func(context.Context, *pulumirpc.Callback) error { return refused },
		RegisterResourceHook:         func(context.Context, *pulumirpc.RegisterResourceHookRequest) error { return nil },
		RegisterErrorHook:            func(context.Context, *pulumirpc.RegisterErrorHookRequest) error { return refused },
		SignalAndWaitForShutdown:     func(context.Context) error { return errors.New("already waiting") },
	}
	c := monitortest.Serve(t, fake).Client()
	ctx := t.Context()

	res, err := c.SupportsFeature(ctx, &pulumirpc.SupportsFeatureRequest{Id: "transforms"})
	require.NoError(t, err)
	assert.True(t, res.GetHasSupport())
	res, err = c.SupportsFeature(ctx, &pulumirpc.SupportsFeatureRequest{Id: "resourceHooks"})
	require.NoError(t, err)
	assert.False(t, res.GetHasSupport())
	_, err = c.SupportsFeature(ctx, &pulumirpc.SupportsFeatureRequest{Id: "broken"})
	assert.Equal(t, codes.Internal, status.Code(err))

	_, err = c.RegisterStackTransform(ctx, &pulumirpc.Callback{Token: "tok"})
	require.NoError(t, err)
	assert.Equal(t, []string{"tok"}, seen)
	_, err = c.RegisterStackInvokeTransform(ctx, &pulumirpc.Callback{Token: "tok"})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	_, err = c.RegisterResourceHook(ctx, &pulumirpc.RegisterResourceHookRequest{Name: "h"})
	require.NoError(t, err)
	_, err = c.RegisterErrorHook(ctx, &pulumirpc.RegisterErrorHookRequest{Name: "e"})
	assert.Equal(t, codes.FailedPrecondition, status.Code(err))
	_, err = c.SignalAndWaitForShutdown(ctx, &emptypb.Empty{})
	assert.ErrorContains(t, err, "already waiting")

	transforms := monitortest.Requests[*pulumirpc.Callback](fake, "RegisterStackTransform")
	require.Len(t, transforms, 1)
	assert.Equal(t, "tok", transforms[0].GetToken(), "the record keeps the request as it arrived")
	assert.Equal(t, 3, fake.Count("SupportsFeature"))
}

func TestEngines(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	current := monitortest.Serve(t, &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms)})
	require.NoError(t, current.Require(ctx, monitor.Transforms))
	assert.ErrorIs(t, current.Require(ctx, monitor.ResourceHooks), monitor.ErrMissingFeature)
	info, err := current.DeploymentInfo(ctx)
	require.NoError(t, err)
	assert.False(t, info.GetDryRun())

	preview := monitortest.Serve(t, &monitortest.Fake{DeploymentInfo: monitortest.CurrentPreview()})
	info, err = preview.DeploymentInfo(ctx)
	require.NoError(t, err)
	assert.True(t, info.GetDryRun())

	fake := &monitortest.Fake{SupportsFeature: monitortest.OldEngine("transforms")}
	old := monitortest.Serve(t, fake)
	require.NoError(t, old.Require(ctx, monitor.Transforms))
	assert.ErrorIs(t, old.Require(ctx, monitor.ResourceHooks), monitor.ErrMissingFeature)
	assert.Equal(t, 1, fake.Count("GetDeploymentInfo"))
	assert.Equal(t, 2, fake.Count("SupportsFeature"))
}

// Listen serves on loopback TCP, for code that dials the monitor itself.
func TestListen(t *testing.T) {
	t.Parallel()
	fake := &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.ResourceHooks)}
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	defer srv.Close()
	mon, err := monitor.Dial(monitortest.Listen(t, fake), srv)
	require.NoError(t, err)
	require.NoError(t, mon.Require(t.Context(), monitor.ResourceHooks))
	assert.Equal(t, 1, fake.Count("GetDeploymentInfo"))
}

func TestUnknownMethodPanics(t *testing.T) {
	t.Parallel()
	fake := &monitortest.Fake{}
	assert.PanicsWithValue(t, "monitortest: the ResourceMonitor service has no method RegisterStackTransforms", func() {
		fake.Count("RegisterStackTransforms")
	})
	assert.Panics(t, func() { monitortest.Requests[*pulumirpc.Callback](fake, "") })
}
