package callbacks_test

// The one harness of this package's tests: a server with an engine-like
// client (over loopback or bufconn), a fake Engine.Log, and small builders.

import (
	"context"
	"fmt"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/langhost/callbacks"
)

// newTestRegistry returns a registry made with opts, failing tb if the
// options are refused.
func newTestRegistry(tb testing.TB, opts ...callbacks.RegistryOption) *callbacks.Registry {
	tb.Helper()
	reg, err := callbacks.NewRegistry(opts...)
	if err != nil {
		tb.Fatalf("NewRegistry: %v", err)
	}
	return reg
}

// discardLogger is a logger that drops everything, for tests that provoke
// failures on purpose.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// engine is a test stand-in for the Pulumi engine's side of a callback: one
// client connection to a server, as the engine keeps one per target.
type engine struct {
	conn   *grpc.ClientConn
	client pulumirpc.CallbacksClient
}

func (e *engine) invoke(ctx context.Context, token string, req proto.Message) ([]byte, error) {
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return e.invokeBytes(ctx, token, payload)
}

func (e *engine) invokeBytes(ctx context.Context, token string, payload []byte) ([]byte, error) {
	res, err := e.client.Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: token, Request: payload})
	if err != nil {
		return nil, err
	}
	return res.GetResponse(), nil
}

// transport starts a server and an engine connected to it.
type transport struct {
	name  string
	start func(t *testing.T, opts ...callbacks.ServerOption) (*callbacks.Server, *engine)
}

var transports = []transport{
	{"loopback", startLoopback},
	{"bufconn", startBufconn},
}

func startLoopback(t *testing.T, opts ...callbacks.ServerOption) (*callbacks.Server, *engine) {
	t.Helper()
	srv, err := callbacks.Listen(opts...)
	require.NoError(t, err)
	return srv, dialEngine(t, srv, srv.Target())
}

func startBufconn(t *testing.T, opts ...callbacks.ServerOption) (*callbacks.Server, *engine) {
	t.Helper()
	env := relServe(t, opts...)
	return env.srv, &engine{conn: env.conn, client: env.client}
}

func dialEngine(t *testing.T, srv *callbacks.Server, target string, extra ...grpc.DialOption) *engine {
	t.Helper()
	t.Cleanup(func() { _ = srv.Close() })
	conn := relDial(t, target, extra...)
	return &engine{conn: conn, client: pulumirpc.NewCallbacksClient(conn)}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

// relEnv is a served registry plus an engine-like client connected to it.
type relEnv struct {
	srv    *callbacks.Server
	lis    *bufconn.Listener
	conn   *grpc.ClientConn
	client pulumirpc.CallbacksClient
}

// relServe starts a server on an in-memory bufconn listener and dials it the
// way the engine does (plaintext, 400 MiB limits). Both end with the test.
func relServe(t testing.TB, opts ...callbacks.ServerOption) *relEnv {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	all := append([]callbacks.ServerOption{callbacks.WithListener(lis), callbacks.Target(relBufTarget)}, opts...)
	srv, err := callbacks.Listen(all...)
	if err != nil {
		_ = lis.Close()
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	env := &relEnv{srv: srv, lis: lis}
	env.conn = env.dial(t)
	env.client = pulumirpc.NewCallbacksClient(env.conn)
	return env
}

// dial opens another client connection to the server.
func (e *relEnv) dial(t testing.TB, extra ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return relDial(t, relBufTarget, append([]grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return e.lis.DialContext(ctx)
	})}, extra...)...)
}

// relDial opens a client connection like the engine's and closes it when the
// test ends (before any server cleanup registered earlier).
func relDial(t testing.TB, target string, extra ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(400<<20), grpc.MaxCallSendMsgSize(400<<20)),
	}, extra...)
	conn, err := grpc.NewClient(target, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// waitFor polls cond until it holds. It asserts nothing about time: the
// test's own deadline bounds the wait.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// relCtx is the test-level context: it only exists to turn a hang into a
// failure.
func relCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), relBound)
	t.Cleanup(cancel)
	return ctx
}

func relRegister(t testing.TB, srv *callbacks.Server, f callbacks.Func, opts ...callbacks.RegisterOption) *pulumirpc.Callback {
	t.Helper()
	cb, err := srv.Register(context.Background(), f, opts...)
	require.NoError(t, err)
	return cb
}

func (e *relEnv) invoke(ctx context.Context, token string, payload []byte) ([]byte, error) {
	res, err := e.client.Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: token, Request: payload})
	if err != nil {
		return nil, err
	}
	return res.GetResponse(), nil
}

func relMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

func relStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

// relWantStatus checks a call's gRPC code and that its message contains msg.
// Whatever the code, the message must never carry a Go stack trace.
func relWantStatus(t testing.TB, err error, code codes.Code, msg string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got code %v (%q), want %v", st.Code(), relClip(st.Message()), code)
	}
	if !strings.Contains(st.Message(), msg) {
		t.Errorf("got message %q, want it to contain %q", relClip(st.Message()), msg)
	}
	relNoStack(t, st.Message())
}

// relNoStack fails if s looks like it holds a goroutine stack.
func relNoStack(t testing.TB, s string) {
	t.Helper()
	for _, frag := range []string{"goroutine ", ".go:", "runtime/debug", "panic("} {
		if strings.Contains(s, frag) {
			t.Errorf("message %q contains %q: a stack trace reached the wire", relClip(s), frag)
		}
	}
}

func relClip(s string) string {
	if len(s) > 300 {
		return fmt.Sprintf("%s…(%d bytes)", s[:300], len(s))
	}
	return s
}

// fakeEngineLog records Engine.Log calls, as `pulumi up` would display them.
type fakeEngineLog struct {
	pulumirpc.UnimplementedEngineServer
	mu   sync.Mutex
	logs []*pulumirpc.LogRequest
}

func (f *fakeEngineLog) Log(_ context.Context, r *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, r)
	return &emptypb.Empty{}, nil
}

func (f *fakeEngineLog) recorded() []*pulumirpc.LogRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*pulumirpc.LogRequest(nil), f.logs...)
}

func startEngineLog(t *testing.T) (*fakeEngineLog, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fake := &fakeEngineLog{}
	s := grpc.NewServer()
	pulumirpc.RegisterEngineServer(s, fake)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return fake, lis.Addr().String()
}

const hookURN = "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs"

func hookRequest(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&pulumirpc.ResourceHookRequest{Urn: hookURN, Type: "aws:s3/bucket:Bucket", Name: "logs"})
	require.NoError(t, err)
	return b
}
