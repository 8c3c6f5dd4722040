package hooks_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestMain(m *testing.M) {
	// The SDK's property marshalling links glog, whose flush daemon runs
	// for the life of the process.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

// newServer starts a real callback server on loopback, closed with the test.
func newServer(t *testing.T) *callbacks.Server {
	t.Helper()
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// invoke calls cb over gRPC the way the engine does, with req marshalled as
// the payload, and decodes the response into resp when the call succeeds.
func invoke(t *testing.T, cb *pulumirpc.Callback, req, resp proto.Message) error {
	t.Helper()
	conn, err := grpc.NewClient(cb.GetTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	payload, err := proto.Marshal(req)
	require.NoError(t, err)
	out, err := pulumirpc.NewCallbacksClient(conn).Invoke(t.Context(), &pulumirpc.CallbackInvokeRequest{
		Token: cb.GetToken(), Request: payload,
	})
	if err != nil {
		return err
	}
	require.NoError(t, proto.Unmarshal(out.GetResponse(), resp))
	return nil
}

// allFeatures is what a current engine advertises, minus STATE_MIGRATIONS.
var allFeatures = []pulumirpc.ResourceMonitorFeature{
	monitor.Transforms, monitor.InvokeTransforms, monitor.ResourceHooks, monitor.ErrorHooks,
	monitor.SendsOptionsToHooks, monitor.ByteString,
}

// fakeMonitor is a ResourceMonitor whose answers are set per test through
// func fields; nil fields give a current engine's answers. It records the
// registration requests it receives.
type fakeMonitor struct {
	pulumirpc.UnimplementedResourceMonitorServer

	deploymentInfo    func() (*pulumirpc.DeploymentInfo, error)
	supportsFeature   func(id string) (bool, error)
	resourceHook      func(*pulumirpc.RegisterResourceHookRequest) error
	errorHook         func(*pulumirpc.RegisterErrorHookRequest) error
	stackTransformErr error

	mu              sync.Mutex
	resourceHooks   []*pulumirpc.RegisterResourceHookRequest
	errorHooks      []*pulumirpc.RegisterErrorHookRequest
	stackTransforms []*pulumirpc.Callback
}

var _ pulumirpc.ResourceMonitorServer = (*fakeMonitor)(nil)

func (f *fakeMonitor) GetDeploymentInfo(context.Context, *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	if f.deploymentInfo != nil {
		return f.deploymentInfo()
	}
	return &pulumirpc.DeploymentInfo{SupportedFeatures: allFeatures}, nil
}

func (f *fakeMonitor) SupportsFeature(_ context.Context, req *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	ok := true
	if f.supportsFeature != nil {
		var err error
		if ok, err = f.supportsFeature(req.GetId()); err != nil {
			return nil, err
		}
	}
	return &pulumirpc.SupportsFeatureResponse{HasSupport: ok}, nil
}

func (f *fakeMonitor) RegisterResourceHook(_ context.Context, req *pulumirpc.RegisterResourceHookRequest) (*emptypb.Empty, error) {
	f.mu.Lock()
	f.resourceHooks = append(f.resourceHooks, req)
	f.mu.Unlock()
	if f.resourceHook != nil {
		if err := f.resourceHook(req); err != nil {
			return nil, err
		}
	}
	return &emptypb.Empty{}, nil
}

func (f *fakeMonitor) RegisterErrorHook(_ context.Context, req *pulumirpc.RegisterErrorHookRequest) (*emptypb.Empty, error) {
	f.mu.Lock()
	f.errorHooks = append(f.errorHooks, req)
	f.mu.Unlock()
	if f.errorHook != nil {
		if err := f.errorHook(req); err != nil {
			return nil, err
		}
	}
	return &emptypb.Empty{}, nil
}

func (f *fakeMonitor) RegisterStackTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	f.mu.Lock()
	f.stackTransforms = append(f.stackTransforms, cb)
	f.mu.Unlock()
	if f.stackTransformErr != nil {
		return nil, f.stackTransformErr
	}
	return &emptypb.Empty{}, nil
}

func (f *fakeMonitor) recorded() (hooks []*pulumirpc.RegisterResourceHookRequest, errHooks []*pulumirpc.RegisterErrorHookRequest, transforms []*pulumirpc.Callback) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.resourceHooks), slices.Clone(f.errorHooks), slices.Clone(f.stackTransforms)
}

// serve serves f on an in-memory listener and returns a monitor that talks
// to it; both are stopped with the test.
func (f *fakeMonitor) serve(t *testing.T) *monitor.Monitor {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	pulumirpc.RegisterResourceMonitorServer(s, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///fake-monitor",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-done
	})
	return monitor.NewFromConn(conn)
}
