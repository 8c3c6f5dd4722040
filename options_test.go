package callbacks_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"log/slog"
)

// Invalid option values are errors at construction, never ignored.
func TestInvalidOptionsAreErrors(t *testing.T) {
	t.Parallel()
	servers := map[string]callbacks.ServerOption{
		"MaxMessageSize(0)":          callbacks.MaxMessageSize(0),
		"MaxMessageSize(-1)":         callbacks.MaxMessageSize(-1),
		"KindTimeout of kind 0":      callbacks.KindTimeout(0, time.Second),
		"KindTimeout of kind 99":     callbacks.KindTimeout(99, time.Second),
		"KindTimeout(0)":             callbacks.KindTimeout(callbacks.KindRaw, 0),
		"KindTimeout(-1s)":           callbacks.KindTimeout(callbacks.KindRaw, -time.Second),
		"relative unix path":         callbacks.Address("unix://cb.sock"),
		"relative unix path, dotted": callbacks.Address("unix://./cb.sock"),
		"empty address":              callbacks.Address(""),
		"relative unix target":       callbacks.Target("unix://cb.sock"),
		"WithListener(nil)":          callbacks.WithListener(nil),
		"WithRegistry(nil)":          callbacks.WithRegistry(nil),
		"WithLogger(nil)":            callbacks.WithLogger(nil),
		"WithObserver(nil)":          callbacks.WithObserver(nil),
		"WithReporter(nil)":          callbacks.WithReporter(nil),
	}
	for name, opt := range servers {
		_, err := callbacks.NewServer(opt)
		assert.ErrorIs(t, err, callbacks.ErrInvalidOption, "NewServer(%s)", name)
		_, err = callbacks.Listen(opt)
		assert.ErrorIs(t, err, callbacks.ErrInvalidOption, "Listen(%s)", name)
		if ro, ok := opt.(callbacks.RegistryOption); ok {
			_, err = callbacks.NewRegistry(ro)
			assert.ErrorIs(t, err, callbacks.ErrInvalidOption, "NewRegistry(%s)", name)
		}
	}

	reg := newTestRegistry(t)
	raw := callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil })
	for name, opt := range map[string]callbacks.RegisterOption{
		"Timeout(0)": callbacks.Timeout(0), "Timeout(-1s)": callbacks.Timeout(-time.Second),
	} {
		_, err := reg.Register(raw, opt)
		assert.ErrorIs(t, err, callbacks.ErrInvalidOption, name)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), name)
	}
	assert.Equal(t, 0, reg.Len())
}

// NewRunner takes the options of a function run inside a callback, and
// refuses an invalid value, or one that concerns a whole registration, as
// registering would.
func TestNewRunner(t *testing.T) {
	t.Parallel()
	rn, err := callbacks.NewRunner(callbacks.Name("tag"), nil, callbacks.Timeout(time.Second), callbacks.FailOpen())
	require.NoError(t, err)
	assert.Equal(t, "tag", rn.Name())
	for _, opt := range []callbacks.RegisterOption{callbacks.Timeout(-time.Second), callbacks.AcceptsByteStrings(false)} {
		_, err = callbacks.NewRunner(opt)
		assert.ErrorIs(t, err, callbacks.ErrInvalidOption)
	}
}

// WithRegistry serves the registry given; registry options given with it
// would be dropped, so they are an error.
func TestWithRegistry(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	tok, err := reg.Register(callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return []byte("from the registry"), nil }))
	require.NoError(t, err)
	eng := serve(t, callbacks.WithRegistry(reg))
	srv := eng.srv
	assert.Same(t, reg, srv.Registry())
	out, err := eng.invoke(context.Background(), tok, nil)
	require.NoError(t, err)
	assert.Equal(t, "from the registry", string(out))

	_, err = callbacks.NewServer(callbacks.WithRegistry(reg), callbacks.WithLogger(discardLogger()))
	assert.ErrorIs(t, err, callbacks.ErrInvalidOption)
	_, err = callbacks.NewServer(callbacks.KindTimeout(callbacks.KindRaw, time.Second), callbacks.WithRegistry(reg))
	assert.ErrorIs(t, err, callbacks.ErrInvalidOption)
}

type recordingReporter struct {
	mu  sync.Mutex
	got []string
}

func (r *recordingReporter) Report(_ context.Context, sev callbacks.Severity, urn, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, sev.String()+" "+urn+" "+msg)
	return nil
}

// WithReporter receives Warn and Info, even when an engine address is set.
func TestWithReporter(t *testing.T) {
	t.Parallel()
	fake, addr := startEngineLog(t)
	rep := &recordingReporter{}
	eng := serve(t, callbacks.WithReporter(rep), callbacks.EngineAddress(addr))
	srv := eng.srv
	cb, err := srv.Register(context.Background(), callbacks.ResourceHook(func(ctx context.Context, _ *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		callbacks.Warn(ctx, "careful")
		callbacks.Info(ctx, "fine")
		return nil, nil
	}))
	require.NoError(t, err)
	_, err = eng.invoke(context.Background(), cb.Token, hookRequest(t))
	require.NoError(t, err)
	assert.Equal(t, []string{"warning " + hookURN + " careful", "info " + hookURN + " fine"}, rep.got)
	assert.Empty(t, fake.recorded(), "the reporter overrides the engine address")
}

// GRPCServerOptions reach the grpc.Server: an interceptor sees every call.
func TestGRPCServerOptionsInterceptor(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	var method atomic.Value
	icpt := grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		seen.Add(1)
		method.Store(info.FullMethod)
		return h(ctx, req)
	})
	eng := serve(t, callbacks.GRPCServerOptions(icpt))
	srv := eng.srv
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	require.NoError(t, err)
	_, err = eng.invoke(context.Background(), cb.Token, nil)
	require.NoError(t, err)
	assert.Equal(t, int32(1), seen.Load())
	assert.Equal(t, "/pulumirpc.Callbacks/Invoke", method.Load())
}

// stalledEngineLog never answers Engine.Log until its caller gives up.
type stalledEngineLog struct {
	pulumirpc.UnimplementedEngineServer
	calls atomic.Int32
}

func (s *stalledEngineLog) Log(ctx context.Context, _ *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	s.calls.Add(1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A stalled Engine.Log cannot hold up a fail-open answer beyond the report
// bound: the call answers, and the undelivered warning goes to the logger.
func TestReportsToTheEngineAreBounded(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stalled := &stalledEngineLog{}
	gs := grpc.NewServer()
	pulumirpc.RegisterEngineServer(gs, stalled)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng := serve(t, callbacks.EngineAddress(lis.Addr().String()), callbacks.WithLogger(logger))
	srv := eng.srv
	callbacks.SetReportTimeout(srv, 50*time.Millisecond)
	cb, err := srv.Register(context.Background(), callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		panic("hook refuses")
	}), callbacks.FailOpen())
	require.NoError(t, err)
	_, err = eng.invoke(context.Background(), cb.Token, hookRequest(t))
	require.NoError(t, err, "the call fails open although the engine log is stalled")
	// Two reports at most, the panic's stack at debug severity and the
	// warning that the call failed open: whether each reached the engine
	// before its bound passed depends on the machine's speed, not on the
	// code.
	assert.LessOrEqual(t, stalled.calls.Load(), int32(2))
	assert.Contains(t, logs.String(), "failed open")
	assert.Contains(t, logs.String(), "undelivered")
}

// A user error of 1 MiB reaches the engine clipped to 4 KiB: one oversized
// header would break the connection the engine shares between callbacks.
func TestHugeUserErrorIsCapped(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 1<<20)
	eng := serve(t)
	srv := eng.srv
	cb, err := srv.Register(context.Background(), callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, status.Error(codes.FailedPrecondition, huge)
	}))
	require.NoError(t, err)
	_, err = eng.invoke(context.Background(), cb.Token, hookRequest(t))
	st := status.Convert(err)
	assert.Equal(t, codes.FailedPrecondition, st.Code())
	assert.LessOrEqual(t, len(st.Message()), 4<<10+64, "clipped to 4 KiB plus the length note")
	assert.True(t, strings.HasPrefix(st.Message(), "xxxx"))
	assert.Contains(t, st.Message(), "(1048576 bytes)")
	// The server still answers on the same connection.
	ok, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return []byte("ok"), nil }))
	require.NoError(t, err)
	out, err := eng.invoke(context.Background(), ok.Token, nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(out))
}

// The default logger writes warnings and errors; DefaultLogger is what a
// server gets without WithLogger.
func TestDefaultLoggerKeepsWarnings(t *testing.T) {
	t.Parallel()
	l := callbacks.DefaultLogger()
	assert.True(t, l.Enabled(context.Background(), slog.LevelWarn))
	assert.True(t, l.Enabled(context.Background(), slog.LevelError))
	assert.False(t, l.Enabled(context.Background(), slog.LevelInfo))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
