package transforms_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestMain(m *testing.M) {
	// The SDK's plugin package starts glog's flush daemon at init.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

// startServer starts a real callbacks server on loopback and a client
// connected to it; both are closed when the test ends.
func startServer(t *testing.T) (*callbacks.Server, pulumirpc.CallbacksClient) {
	t.Helper()
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	conn, err := grpc.NewClient(srv.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return srv, pulumirpc.NewCallbacksClient(conn)
}

// call plays the engine: it sends req to the callback cb over the wire and
// decodes the answer.
func call(t *testing.T, client pulumirpc.CallbacksClient, cb *pulumirpc.Callback, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
	t.Helper()
	payload, err := proto.Marshal(req)
	require.NoError(t, err)
	res, err := client.Invoke(t.Context(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: payload})
	if err != nil {
		return nil, err
	}
	out := &pulumirpc.TransformResponse{}
	require.NoError(t, proto.Unmarshal(res.GetResponse(), out))
	return out, nil
}

// requireProtoEqual fails with both messages in text form when they differ.
func requireProtoEqual(t *testing.T, want, got proto.Message) {
	t.Helper()
	if !proto.Equal(want, got) {
		t.Fatalf("messages differ\n--- want\n%s\n--- got\n%s",
			prototext.Format(want), prototext.Format(got))
	}
}

func identity(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
	return a.Result(), nil
}

const (
	stackURN  = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
	parentURN = "urn:pulumi:dev::proj::my:mod:Comp::parent"
)

// Wire forms of the special values, as the engine sends them.

func sigObject(sig string, fields map[string]*structpb.Value) *structpb.Value {
	m := map[string]*structpb.Value{resource.SigKey: structpb.NewStringValue(sig)}
	for k, v := range fields {
		m[k] = v
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: m})
}

func outputValue(value *structpb.Value, secret bool, deps ...string) *structpb.Value {
	f := map[string]*structpb.Value{}
	if value != nil {
		f["value"] = value
	}
	if secret {
		f["secret"] = structpb.NewBoolValue(true)
	}
	if len(deps) > 0 {
		l := make([]*structpb.Value, len(deps))
		for i, d := range deps {
			l[i] = structpb.NewStringValue(d)
		}
		f["dependencies"] = structpb.NewListValue(&structpb.ListValue{Values: l})
	}
	return sigObject(resource.OutputValueSig, f)
}

func str(s string) *structpb.Value { return structpb.NewStringValue(s) }

func list(vs ...*structpb.Value) *structpb.Value {
	return structpb.NewListValue(&structpb.ListValue{Values: vs})
}

func object(kv ...any) *structpb.Value { return structpb.NewStructValue(structOf(kv...)) }

func structOf(kv ...any) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := 0; i < len(kv); i += 2 {
		s.Fields[kv[i].(string)] = kv[i+1].(*structpb.Value)
	}
	return s
}

// fakeMonitor is a ResourceMonitor whose behaviour comes from func fields;
// a nil field answers UNIMPLEMENTED. It counts RegisterStackTransform calls.
type fakeMonitor struct {
	pulumirpc.UnimplementedResourceMonitorServer

	deploymentInfo  func() (*pulumirpc.DeploymentInfo, error)
	supportsFeature func(id string) (bool, error)
	registerStack   func(*pulumirpc.Callback) error

	mu         sync.Mutex
	registered []*pulumirpc.Callback
}

var _ pulumirpc.ResourceMonitorServer = (*fakeMonitor)(nil)

func (f *fakeMonitor) GetDeploymentInfo(ctx context.Context, e *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	if f.deploymentInfo == nil {
		return f.UnimplementedResourceMonitorServer.GetDeploymentInfo(ctx, e)
	}
	return f.deploymentInfo()
}

func (f *fakeMonitor) SupportsFeature(ctx context.Context, req *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	if f.supportsFeature == nil {
		return f.UnimplementedResourceMonitorServer.SupportsFeature(ctx, req)
	}
	ok, err := f.supportsFeature(req.GetId())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.SupportsFeatureResponse{HasSupport: ok}, nil
}

func (f *fakeMonitor) RegisterStackTransform(ctx context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	f.mu.Lock()
	f.registered = append(f.registered, proto.CloneOf(cb))
	f.mu.Unlock()
	if f.registerStack == nil {
		return f.UnimplementedResourceMonitorServer.RegisterStackTransform(ctx, cb)
	}
	if err := f.registerStack(cb); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (f *fakeMonitor) calls() []*pulumirpc.Callback {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pulumirpc.Callback(nil), f.registered...)
}

// serveMonitor serves f in memory and returns a monitor wrapper for it.
func serveMonitor(t *testing.T, f *fakeMonitor) *monitor.Monitor {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	pulumirpc.RegisterResourceMonitorServer(gs, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///monitor",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		<-done
	})
	return monitor.NewFromConn(conn)
}
