package callbacks_test

// The one harness of this package's tests: a server with an engine-like
// client (harness: serve on bufconn, serveLoopback, transports for both),
// a fake Engine.Log, and small builders that fail the test (must...).

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

// harness is a server and an engine-like client connected to it, as the
// engine keeps one connection per target. Both end with the test.
type harness struct {
	srv    *callbacks.Server
	lis    *bufconn.Listener // nil when serving on loopback
	conn   *grpc.ClientConn
	client pulumirpc.CallbacksClient
}

// serve starts a server on an in-memory bufconn listener and dials it the
// way the engine does (plaintext, 400 MiB limits).
func serve(t testing.TB, opts ...callbacks.ServerOption) *harness {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	all := append([]callbacks.ServerOption{callbacks.WithListener(lis), callbacks.Target(bufTarget)}, opts...)
	srv, err := callbacks.Listen(all...)
	if err != nil {
		_ = lis.Close()
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h := &harness{srv: srv, lis: lis}
	h.conn = h.dial(t)
	h.client = pulumirpc.NewCallbacksClient(h.conn)
	return h
}

// serveLoopback starts a server on its own loopback listener and dials it
// at its target.
func serveLoopback(t testing.TB, opts ...callbacks.ServerOption) *harness {
	t.Helper()
	srv, err := callbacks.Listen(opts...)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	return dialEngine(t, srv, srv.Target())
}

// dialEngine connects an engine-like client to srv at target, and closes
// srv when the test ends.
func dialEngine(t testing.TB, srv *callbacks.Server, target string, extra ...grpc.DialOption) *harness {
	t.Helper()
	t.Cleanup(func() { _ = srv.Close() })
	conn := dialLikeEngine(t, target, extra...)
	return &harness{srv: srv, conn: conn, client: pulumirpc.NewCallbacksClient(conn)}
}

// transport is a way of serving: every test that runs over both uses
// transports.
type transport struct {
	name  string
	serve func(t testing.TB, opts ...callbacks.ServerOption) *harness
}

var transports = []transport{
	{"loopback", serveLoopback},
	{"bufconn", serve},
}

// call sends req, encoded, as the payload of a call of token.
func (h *harness) call(ctx context.Context, token string, req proto.Message) ([]byte, error) {
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return h.invoke(ctx, token, payload)
}

// invoke calls token with payload as the engine does.
func (h *harness) invoke(ctx context.Context, token string, payload []byte) ([]byte, error) {
	res, err := h.client.Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: token, Request: payload})
	if err != nil {
		return nil, err
	}
	return res.GetResponse(), nil
}

// mustStruct returns m as a structpb.Struct.
func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	require.NoError(t, err)
	return s
}

// dial opens another client connection to the server.
func (e *harness) dial(t testing.TB, extra ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return dialLikeEngine(t, bufTarget, append([]grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return e.lis.DialContext(ctx)
	})}, extra...)...)
}

// relDial opens a client connection like the engine's and closes it when the
// test ends (before any server cleanup registered earlier).
func dialLikeEngine(t testing.TB, target string, extra ...grpc.DialOption) *grpc.ClientConn {
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
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangBound)
	t.Cleanup(cancel)
	return ctx
}

func mustRegister(t testing.TB, srv *callbacks.Server, f callbacks.Func, opts ...callbacks.RegisterOption) *pulumirpc.Callback {
	t.Helper()
	cb, err := srv.Register(context.Background(), f, opts...)
	require.NoError(t, err)
	return cb
}

func mustMarshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

// relWantStatus checks a call's gRPC code and that its message contains msg.
// Whatever the code, the message must never carry a Go stack trace.
func wantStatus(t testing.TB, err error, code codes.Code, msg string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("got code %v (%q), want %v", st.Code(), clipped(st.Message()), code)
	}
	if !strings.Contains(st.Message(), msg) {
		t.Errorf("got message %q, want it to contain %q", clipped(st.Message()), msg)
	}
	noStack(t, st.Message())
}

// relNoStack fails if s looks like it holds a goroutine stack.
func noStack(t testing.TB, s string) {
	t.Helper()
	for _, frag := range []string{"goroutine ", ".go:", "runtime/debug", "panic("} {
		if strings.Contains(s, frag) {
			t.Errorf("message %q contains %q: a stack trace reached the wire", clipped(s), frag)
		}
	}
}

func clipped(s string) string {
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
