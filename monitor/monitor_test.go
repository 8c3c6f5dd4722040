package monitor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

func TestRequire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fake        *monitortest.Fake
		require     []monitor.Feature
		wantMissing string // "" means no error
		wantLegacy  bool   // SupportsFeature must have been asked
	}{
		{name: "current engine has it", fake: &monitortest.Fake{DeploymentInfo: monitortest.CurrentPreview(monitor.Transforms, monitor.ResourceHooks)},
			require: []monitor.Feature{monitor.Transforms, monitor.ResourceHooks}},
		{name: "current engine lacks it", fake: &monitortest.Fake{DeploymentInfo: monitortest.CurrentPreview(monitor.Transforms)},
			require: []monitor.Feature{monitor.Transforms, monitor.ErrorHooks}, wantMissing: "error hooks (ERROR_HOOKS)"},
		{name: "old engine says false", fake: &monitortest.Fake{SupportsFeature: monitortest.OldEngine()},
			require: []monitor.Feature{monitor.ResourceHooks}, wantMissing: "resource hooks (RESOURCE_HOOKS)", wantLegacy: true},
		{name: "old engine says true", fake: &monitortest.Fake{SupportsFeature: monitortest.OldEngine("transforms")},
			require: []monitor.Feature{monitor.Transforms}, wantLegacy: true},
		{name: "state migrations have no legacy id", fake: &monitortest.Fake{SupportsFeature: func(context.Context, string) (bool, error) { return true, nil }},
			require: []monitor.Feature{monitor.StateMigrations}, wantMissing: "state migrations (STATE_MIGRATIONS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := monitortest.Serve(t, tt.fake)
			err := m.Require(context.Background(), tt.require...)
			if tt.wantMissing == "" {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, monitor.ErrMissingFeature)
				assert.Contains(t, err.Error(), tt.wantMissing)
			}
			assert.Equal(t, tt.wantLegacy, tt.fake.Count("SupportsFeature") > 0)
			// The answer is cached: asking again makes no new GetDeploymentInfo call.
			before := tt.fake.Count("GetDeploymentInfo")
			_ = m.Require(context.Background(), tt.require...)
			assert.Equal(t, before, tt.fake.Count("GetDeploymentInfo"))
		})
	}
}

func TestDeploymentInfoFailureIsNotCached(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	fake := &monitortest.Fake{DeploymentInfo: func(context.Context) (*pulumirpc.DeploymentInfo, error) {
		if fail.Load() {
			return nil, status.Error(codes.Unavailable, "try later")
		}
		return &pulumirpc.DeploymentInfo{DryRun: true}, nil
	}}
	m := monitortest.Serve(t, fake)
	_, err := m.DeploymentInfo(context.Background())
	require.Error(t, err)
	fail.Store(false)
	info, err := m.DeploymentInfo(context.Background())
	require.NoError(t, err)
	assert.True(t, info.GetDryRun())
}

func TestFromEnv(t *testing.T) {
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	defer srv.Close()
	t.Setenv(monitor.EnvMonitor, "")
	_, err = monitor.FromEnv(srv)
	require.ErrorIs(t, err, monitor.ErrNoMonitor)
	_, err = monitor.Dial("127.0.0.1:1", nil)
	require.ErrorIs(t, err, callbacks.ErrNilArgument)

	addr := monitortest.Listen(t, &monitortest.Fake{DeploymentInfo: monitortest.CurrentPreview(monitor.Transforms)})
	for name, open := range map[string]func() (*monitor.Monitor, error){
		"env": func() (*monitor.Monitor, error) {
			t.Setenv(monitor.EnvMonitor, addr)
			return monitor.FromEnv(srv)
		},
		"dial": func() (*monitor.Monitor, error) { return monitor.Dial(addr, srv) },
	} {
		m, err := open()
		require.NoError(t, err, name)
		require.NoError(t, m.Require(context.Background(), monitor.Transforms), name)
	}
}

func TestSignalUnimplementedIsDone(t *testing.T) {
	t.Parallel()
	m := monitortest.Serve(t, &monitortest.Fake{})
	require.NoError(t, m.SignalAndWaitForShutdown(context.Background()))
}

// Finish keeps the callback server answering while the engine runs the delete
// hooks inside SignalAndWaitForShutdown, and stops it only afterwards.
func TestFinishServesUntilSignalReturns(t *testing.T) {
	t.Parallel()
	var hookCalls atomic.Int32
	var once sync.Once
	var cb *pulumirpc.Callback
	fake := &monitortest.Fake{SignalAndWaitForShutdown: func(ctx context.Context) error {
		var err error
		once.Do(func() { err = callHook(ctx, cb) }) // the engine's delete hook
		return err
	}}
	m := monitortest.Serve(t, fake)
	srv := m.Server()
	cb, err := srv.Register(context.Background(), callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		hookCalls.Add(1)
		return nil, nil
	}))
	require.NoError(t, err)
	require.NoError(t, m.Finish(t.Context()))
	assert.Equal(t, int32(1), hookCalls.Load())
	_, err = srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	assert.ErrorIs(t, err, callbacks.ErrServerClosed, "Finish shuts the server down")
}

func callHook(ctx context.Context, cb *pulumirpc.Callback) error {
	conn, err := grpc.NewClient(cb.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = pulumirpc.NewCallbacksClient(conn).Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: cb.Token})
	return err
}

func TestFinishReportsSignalError(t *testing.T) {
	t.Parallel()
	m := monitortest.Serve(t, &monitortest.Fake{SignalAndWaitForShutdown: func(context.Context) error { return errors.New("Already waiting for shutdown") }})
	srv := m.Server()
	err := m.Finish(context.Background())
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "Already waiting for shutdown"))
	_, err = srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	assert.ErrorIs(t, err, callbacks.ErrServerClosed, "the server is shut down even when the signal fails")
}

// On an engine that predates GetDeploymentInfo, each SupportsFeature answer
// is asked once and then remembered as it was, false as well as true.
func TestLegacyAnswersAreCachedAsGiven(t *testing.T) {
	t.Parallel()
	fake := &monitortest.Fake{SupportsFeature: monitortest.OldEngine("transforms")}
	mon := monitortest.Serve(t, fake)
	for range 2 {
		ok, err := mon.Supports(t.Context(), monitor.Transforms)
		require.NoError(t, err)
		assert.True(t, ok, "transforms")
		ok, err = mon.Supports(t.Context(), monitor.ErrorHooks)
		require.NoError(t, err)
		assert.False(t, ok, "errorHooks, asked again")
	}
	assert.Equal(t, 2, fake.Count("SupportsFeature"), "each feature is asked once")
}
