package monitor_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeMonitor is a ResourceMonitor built from func fields; nil ones answer
// UNIMPLEMENTED.
type fakeMonitor struct {
	pulumirpc.UnimplementedResourceMonitorServer
	info     func() (*pulumirpc.DeploymentInfo, error)
	supports func(id string) (bool, error)
	signal   func(context.Context) error

	infoCalls, supportsCalls atomic.Int32
}

func (f *fakeMonitor) GetDeploymentInfo(context.Context, *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	f.infoCalls.Add(1)
	if f.info == nil {
		return nil, status.Error(codes.Unimplemented, "no")
	}
	return f.info()
}

func (f *fakeMonitor) SupportsFeature(_ context.Context, r *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	f.supportsCalls.Add(1)
	if f.supports == nil {
		return &pulumirpc.SupportsFeatureResponse{}, nil
	}
	ok, err := f.supports(r.GetId())
	return &pulumirpc.SupportsFeatureResponse{HasSupport: ok}, err
}

func (f *fakeMonitor) SignalAndWaitForShutdown(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	if f.signal == nil {
		return nil, status.Error(codes.Unimplemented, "no")
	}
	return &emptypb.Empty{}, f.signal(ctx)
}

// serve starts fake on loopback and returns a Monitor dialled to it.
func serve(t *testing.T, fake *fakeMonitor) *monitor.Monitor {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	pulumirpc.RegisterResourceMonitorServer(s, fake)
	go func() { _ = s.Serve(lis) }()
	m, err := monitor.Dial(lis.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = m.Close()
		s.Stop()
	})
	return m
}

func current(features ...monitor.Feature) func() (*pulumirpc.DeploymentInfo, error) {
	return func() (*pulumirpc.DeploymentInfo, error) {
		return &pulumirpc.DeploymentInfo{DryRun: true, SupportedFeatures: features}, nil
	}
}

func TestRequire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fake        *fakeMonitor
		require     []monitor.Feature
		wantMissing string // "" means no error
		wantLegacy  bool   // SupportsFeature must have been asked
	}{
		{name: "current engine has it", fake: &fakeMonitor{info: current(monitor.Transforms, monitor.ResourceHooks)},
			require: []monitor.Feature{monitor.Transforms, monitor.ResourceHooks}},
		{name: "current engine lacks it", fake: &fakeMonitor{info: current(monitor.Transforms)},
			require: []monitor.Feature{monitor.Transforms, monitor.ErrorHooks}, wantMissing: "error hooks (ERROR_HOOKS)"},
		{name: "old engine says false", fake: &fakeMonitor{},
			require: []monitor.Feature{monitor.ResourceHooks}, wantMissing: "resource hooks (RESOURCE_HOOKS)", wantLegacy: true},
		{name: "old engine says true", fake: &fakeMonitor{supports: func(id string) (bool, error) { return id == "transforms", nil }},
			require: []monitor.Feature{monitor.Transforms}, wantLegacy: true},
		{name: "state migrations have no legacy id", fake: &fakeMonitor{supports: func(string) (bool, error) { return true, nil }},
			require: []monitor.Feature{monitor.StateMigrations}, wantMissing: "state migrations (STATE_MIGRATIONS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := serve(t, tt.fake)
			err := m.Require(context.Background(), tt.require...)
			if tt.wantMissing == "" {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, monitor.ErrMissingFeature)
				assert.Contains(t, err.Error(), tt.wantMissing)
			}
			assert.Equal(t, tt.wantLegacy, tt.fake.supportsCalls.Load() > 0)
			// The answer is cached: asking again makes no new GetDeploymentInfo call.
			before := tt.fake.infoCalls.Load()
			_ = m.Require(context.Background(), tt.require...)
			assert.Equal(t, before, tt.fake.infoCalls.Load())
		})
	}
}

func TestDeploymentInfoFailureIsNotCached(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	fake := &fakeMonitor{info: func() (*pulumirpc.DeploymentInfo, error) {
		if fail.Load() {
			return nil, status.Error(codes.Unavailable, "try later")
		}
		return &pulumirpc.DeploymentInfo{DryRun: true}, nil
	}}
	m := serve(t, fake)
	_, err := m.DryRun(context.Background())
	require.Error(t, err)
	fail.Store(false)
	dry, err := m.DryRun(context.Background())
	require.NoError(t, err)
	assert.True(t, dry)
}

func TestAttachSetsDryRun(t *testing.T) {
	t.Parallel()
	m := serve(t, &fakeMonitor{info: current()})
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	defer srv.Close()
	require.NoError(t, m.Attach(context.Background(), srv))
	seen := make(chan bool, 1)
	cb, err := srv.Register(callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
		info, _ := callbacks.CallInfoFrom(ctx)
		seen <- info.DryRun
		return nil, nil
	}))
	require.NoError(t, err)
	_, err = srv.Registry().Invoke(context.Background(), cb.Token, nil)
	require.NoError(t, err)
	assert.True(t, <-seen)
}

func TestReserveName(t *testing.T) {
	t.Parallel()
	m := monitor.New(nil)
	require.NoError(t, m.ReserveName("h", 1))
	err := m.ReserveName("h", 2)
	require.ErrorIs(t, err, monitor.ErrNameTaken)
	assert.Contains(t, err.Error(), "monitor_test.go:", "the error names the first registration's site")
	v, ok := m.Named("h")
	assert.True(t, ok)
	assert.Equal(t, 1, v)
	require.Error(t, m.ReserveName("", 3))
	m.ReleaseName("h")
	require.NoError(t, m.ReserveName("h", 4))
}

func TestFromEnvAndConstruct(t *testing.T) {
	t.Setenv(monitor.EnvMonitor, "")
	_, err := monitor.FromEnv()
	require.ErrorIs(t, err, monitor.ErrNoMonitor)
	_, err = monitor.FromConstruct(&pulumirpc.ConstructRequest{})
	require.ErrorIs(t, err, monitor.ErrNoMonitor)

	fake := &fakeMonitor{info: current(monitor.Transforms)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	pulumirpc.RegisterResourceMonitorServer(s, fake)
	go func() { _ = s.Serve(lis) }()
	defer s.Stop()
	for name, open := range map[string]func() (*monitor.Monitor, error){
		"env": func() (*monitor.Monitor, error) {
			t.Setenv(monitor.EnvMonitor, lis.Addr().String())
			return monitor.FromEnv()
		},
		"construct": func() (*monitor.Monitor, error) {
			return monitor.FromConstruct(&pulumirpc.ConstructRequest{MonitorEndpoint: lis.Addr().String()})
		},
	} {
		m, err := open()
		require.NoError(t, err, name)
		require.NoError(t, m.Require(context.Background(), monitor.Transforms), name)
		require.NoError(t, m.Close(), name)
	}
}

func TestSignalUnimplementedIsDone(t *testing.T) {
	t.Parallel()
	m := serve(t, &fakeMonitor{})
	require.NoError(t, m.SignalAndWaitForShutdown(context.Background()))
}

// Finish keeps the callback server answering while the engine runs the delete
// hooks inside SignalAndWaitForShutdown, and stops it only afterwards.
func TestFinishServesUntilSignalReturns(t *testing.T) {
	t.Parallel()
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	var hookCalls atomic.Int32
	cb, err := srv.Register(callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		hookCalls.Add(1)
		return nil, nil
	}))
	require.NoError(t, err)

	var once sync.Once
	fake := &fakeMonitor{signal: func(ctx context.Context) error {
		var err error
		once.Do(func() { err = callHook(ctx, cb) }) // the engine's delete hook
		return err
	}}
	m := serve(t, fake)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, m.Finish(ctx, srv))
	assert.Equal(t, int32(1), hookCalls.Load())
	_, err = srv.Register(callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
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
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	m := serve(t, &fakeMonitor{signal: func(context.Context) error { return errors.New("Already waiting for shutdown") }})
	err = m.Finish(context.Background(), srv)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "Already waiting for shutdown"))
	_, err = srv.Register(callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	assert.ErrorIs(t, err, callbacks.ErrServerClosed, "the server is shut down even when the signal fails")
}
