package hooks_test

import (
	"context"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
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
	return wiretest.Invoke(t, pulumirpc.NewCallbacksClient(conn), cb, req, resp)
}

// allFeatures is what a current engine advertises, minus STATE_MIGRATIONS.
var allFeatures = []pulumirpc.ResourceMonitorFeature{
	monitor.Transforms, monitor.InvokeTransforms, monitor.ResourceHooks, monitor.ErrorHooks,
	monitor.SendsOptionsToHooks, monitor.ByteString,
}

// fakeEngine is a current engine with the given features that accepts every
// resource hook, error hook and stack transform; tests change its fields.
func fakeEngine(features ...monitor.Feature) *monitortest.Fake {
	return &monitortest.Fake{
		DeploymentInfo:         monitortest.CurrentEngine(features...),
		RegisterResourceHook:   func(context.Context, *pulumirpc.RegisterResourceHookRequest) error { return nil },
		RegisterErrorHook:      func(context.Context, *pulumirpc.RegisterErrorHookRequest) error { return nil },
		RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
	}
}

// recorded returns the registrations f has received.
func recorded(f *monitortest.Fake) (hooks []*pulumirpc.RegisterResourceHookRequest, errHooks []*pulumirpc.RegisterErrorHookRequest, transforms []*pulumirpc.Callback) {
	return monitortest.Requests[*pulumirpc.RegisterResourceHookRequest](f, "RegisterResourceHook"),
		monitortest.Requests[*pulumirpc.RegisterErrorHookRequest](f, "RegisterErrorHook"),
		monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackTransform")
}
