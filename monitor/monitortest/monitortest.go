// Package monitortest provides a fake Pulumi ResourceMonitor for tests of
// code that talks to the engine through a [monitor.Monitor].
//
// Set the answers a test needs as func fields of a [Fake], [Serve] it, hand
// the returned Monitor to the code under test, and check the calls the fake
// got with [Fake.Calls], [Fake.Count] or [Requests]. A nil field answers
// UNIMPLEMENTED, as an engine without that method does; [CurrentEngine],
// [CurrentPreview] and [OldEngine] give the answers of real engines.
package monitortest

import (
	"context"
	"net"
	"path"
	"slices"
	"sync"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Fake is a ResourceMonitor whose answers come from its func fields. A nil
// field answers UNIMPLEMENTED, and so do the methods that have no field. The
// fields are read while the fake serves: set them before [Serve] or
// [Listen], and synchronise any state they share with the test.
//
// Every call the fake gets is recorded, whether or not it is answered.
//
// A Fake is not itself a ResourceMonitorServer (its fields carry the
// methods' names); Serve and Listen serve it.
type Fake struct {
	// DeploymentInfo answers GetDeploymentInfo.
	DeploymentInfo func(ctx context.Context) (*pulumirpc.DeploymentInfo, error)
	// SupportsFeature answers SupportsFeature for the legacy feature id.
	SupportsFeature func(ctx context.Context, id string) (bool, error)
	// RegisterStackTransform accepts the transform when it returns nil.
	RegisterStackTransform func(ctx context.Context, cb *pulumirpc.Callback) error
	// RegisterStackInvokeTransform accepts the invoke transform when it
	// returns nil.
	RegisterStackInvokeTransform func(ctx context.Context, cb *pulumirpc.Callback) error
	// RegisterResourceHook accepts the hook when it returns nil.
	RegisterResourceHook func(ctx context.Context, req *pulumirpc.RegisterResourceHookRequest) error
	// RegisterErrorHook accepts the hook when it returns nil.
	RegisterErrorHook func(ctx context.Context, req *pulumirpc.RegisterErrorHookRequest) error
	// SignalAndWaitForShutdown answers SignalAndWaitForShutdown; a real
	// engine returns once it has run the remaining steps.
	SignalAndWaitForShutdown func(ctx context.Context) error

	mu    sync.Mutex
	calls []Call
}

// Call is a call the fake got.
type Call struct {
	// Method is the method's name in the ResourceMonitor service, such as
	// "RegisterStackTransform".
	Method string
	// Request is a copy of the request as the fake received it.
	Request proto.Message
}

// Calls returns the calls the fake has got, in the order they arrived.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Count returns how many calls to method the fake has got. It panics if the
// ResourceMonitor service has no such method.
func (f *Fake) Count(method string) int {
	checkMethod(method)
	n := 0
	for _, c := range f.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Requests returns the requests of the calls to method that f has got, in
// the order they arrived, as T (the method's request type, such as
// *pulumirpc.Callback for "RegisterStackTransform"). It panics if the
// ResourceMonitor service has no such method.
func Requests[T proto.Message](f *Fake, method string) []T {
	checkMethod(method)
	var reqs []T
	for _, c := range f.Calls() {
		if c.Method == method {
			reqs = append(reqs, c.Request.(T))
		}
	}
	return reqs
}

// methods holds the names of the ResourceMonitor service's methods.
var methods = func() map[string]bool {
	m := make(map[string]bool)
	for _, d := range pulumirpc.ResourceMonitor_ServiceDesc.Methods {
		m[d.MethodName] = true
	}
	return m
}()

func checkMethod(method string) {
	if !methods[method] {
		panic("monitortest: the ResourceMonitor service has no method " + method)
	}
}

// record is a unary interceptor that records each call before it is
// answered.
func (f *Fake) record(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var clone proto.Message
	if m, ok := req.(proto.Message); ok {
		clone = proto.Clone(m)
	}
	f.mu.Lock()
	f.calls = append(f.calls, Call{Method: path.Base(info.FullMethod), Request: clone})
	f.mu.Unlock()
	return handler(ctx, req)
}

// Serve serves f in memory and returns a Monitor connected to it, bound to a
// callback server on loopback made with opts (see [callbacks.Listen]). The
// connection and both servers are closed when tb's test ends.
func Serve(tb testing.TB, f *Fake, opts ...callbacks.ServerOption) *monitor.Monitor {
	tb.Helper()
	lis := bufconn.Listen(1 << 20)
	stop := start(f, lis)
	conn, err := grpc.NewClient("passthrough:///monitortest",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(callbacks.DefaultMaxMessageSize),
			grpc.MaxCallSendMsgSize(callbacks.DefaultMaxMessageSize)))
	if err != nil {
		stop()
		tb.Fatalf("monitortest: connecting to the fake monitor: %v", err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		stop()
	})
	srv, err := callbacks.Listen(opts...)
	if err != nil {
		tb.Fatalf("monitortest: starting the callback server: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	mon, err := monitor.New(pulumirpc.NewResourceMonitorClient(conn), srv)
	if err != nil {
		tb.Fatalf("monitortest: %v", err)
	}
	return mon
}

// Listen serves f on a loopback TCP port, as the engine serves its monitor,
// and returns the address to give [monitor.Dial], PULUMI_MONITOR or a
// ConstructRequest. The server is stopped when tb's test ends.
func Listen(tb testing.TB, f *Fake) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("monitortest: listening for the fake monitor: %v", err)
	}
	tb.Cleanup(start(f, lis))
	return lis.Addr().String()
}

// start serves f on lis with the engine's message limits and returns a func
// that stops the server and waits for it.
func start(f *Fake, lis net.Listener) (stop func()) {
	s := grpc.NewServer(
		grpc.UnaryInterceptor(f.record),
		grpc.MaxRecvMsgSize(callbacks.DefaultMaxMessageSize),
		grpc.MaxSendMsgSize(callbacks.DefaultMaxMessageSize))
	pulumirpc.RegisterResourceMonitorServer(s, server{f: f})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	return func() {
		s.Stop()
		<-done
	}
}

// CurrentEngine answers GetDeploymentInfo as a current engine running an
// update with the given features does.
func CurrentEngine(features ...monitor.Feature) func(context.Context) (*pulumirpc.DeploymentInfo, error) {
	return deploymentInfo(false, features)
}

// CurrentPreview answers GetDeploymentInfo as a current engine running a
// preview with the given features does: like [CurrentEngine], with DryRun
// set.
func CurrentPreview(features ...monitor.Feature) func(context.Context) (*pulumirpc.DeploymentInfo, error) {
	return deploymentInfo(true, features)
}

func deploymentInfo(dryRun bool, features []monitor.Feature) func(context.Context) (*pulumirpc.DeploymentInfo, error) {
	features = slices.Clone(features)
	return func(context.Context) (*pulumirpc.DeploymentInfo, error) {
		return &pulumirpc.DeploymentInfo{DryRun: dryRun, SupportedFeatures: slices.Clone(features)}, nil
	}
}

// OldEngine answers SupportsFeature as an engine that predates
// GetDeploymentInfo does: true for the given legacy ids (such as
// "transforms" or "resourceHooks") and false for any other. Leave
// DeploymentInfo nil with it, so that GetDeploymentInfo answers
// UNIMPLEMENTED as such an engine does.
func OldEngine(ids ...string) func(ctx context.Context, id string) (bool, error) {
	ids = slices.Clone(ids)
	return func(_ context.Context, id string) (bool, error) {
		return slices.Contains(ids, id), nil
	}
}

// server answers the ResourceMonitor service from a Fake's fields.
type server struct {
	pulumirpc.UnimplementedResourceMonitorServer
	f *Fake
}

func (s server) GetDeploymentInfo(ctx context.Context, req *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	if s.f.DeploymentInfo == nil {
		return s.UnimplementedResourceMonitorServer.GetDeploymentInfo(ctx, req)
	}
	return s.f.DeploymentInfo(ctx)
}

func (s server) SupportsFeature(ctx context.Context, req *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	if s.f.SupportsFeature == nil {
		return s.UnimplementedResourceMonitorServer.SupportsFeature(ctx, req)
	}
	ok, err := s.f.SupportsFeature(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.SupportsFeatureResponse{HasSupport: ok}, nil
}

func (s server) RegisterStackTransform(ctx context.Context, req *pulumirpc.Callback) (*emptypb.Empty, error) {
	return accept(ctx, req, s.f.RegisterStackTransform, s.UnimplementedResourceMonitorServer.RegisterStackTransform)
}

func (s server) RegisterStackInvokeTransform(ctx context.Context, req *pulumirpc.Callback) (*emptypb.Empty, error) {
	return accept(ctx, req, s.f.RegisterStackInvokeTransform, s.UnimplementedResourceMonitorServer.RegisterStackInvokeTransform)
}

func (s server) RegisterResourceHook(ctx context.Context, req *pulumirpc.RegisterResourceHookRequest) (*emptypb.Empty, error) {
	return accept(ctx, req, s.f.RegisterResourceHook, s.UnimplementedResourceMonitorServer.RegisterResourceHook)
}

func (s server) RegisterErrorHook(ctx context.Context, req *pulumirpc.RegisterErrorHookRequest) (*emptypb.Empty, error) {
	return accept(ctx, req, s.f.RegisterErrorHook, s.UnimplementedResourceMonitorServer.RegisterErrorHook)
}

func (s server) SignalAndWaitForShutdown(ctx context.Context, req *emptypb.Empty) (*emptypb.Empty, error) {
	var fn func(context.Context, *emptypb.Empty) error
	if s.f.SignalAndWaitForShutdown != nil {
		fn = func(ctx context.Context, _ *emptypb.Empty) error { return s.f.SignalAndWaitForShutdown(ctx) }
	}
	return accept(ctx, req, fn, s.UnimplementedResourceMonitorServer.SignalAndWaitForShutdown)
}

// accept answers a call whose response is empty: with fn's error, or with
// unimplemented's answer when fn is nil.
func accept[R any](ctx context.Context, req R, fn func(context.Context, R) error,
	unimplemented func(context.Context, R) (*emptypb.Empty, error),
) (*emptypb.Empty, error) {
	if fn == nil {
		return unimplemented(ctx, req)
	}
	if err := fn(ctx, req); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}
