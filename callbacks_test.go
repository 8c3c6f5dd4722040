package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The typed packages the cross-kind test imports start glog's flush goroutine.
func TestMain(m *testing.M) {
	leakcheck.Main(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

// Every kind decodes its request, reaches the function and has its response
// encoded, over a real socket and over bufconn.
func TestEveryKindRoundTrips(t *testing.T) {
	t.Parallel()
	props := mustStruct(t, map[string]any{"tags": map[string]any{"team": "infra"}, "size": 3.0})
	tests := []struct {
		name string
		fn   callbacks.Func
		req  proto.Message
		want proto.Message // decoded response
		resp func() proto.Message
	}{
		{
			name: "resource transform",
			fn: callbacks.ResourceTransform(func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return &pulumirpc.TransformResponse{Properties: r.Properties, Options: r.Options}, nil
			}),
			req: &pulumirpc.TransformRequest{Type: "aws:s3/bucket:Bucket", Name: "b", Custom: true, Properties: props,
				Options: &pulumirpc.TransformResourceOptions{DependsOn: []string{"urn:a"}, Protect: proto.Bool(true)}},
			want: &pulumirpc.TransformResponse{Properties: props,
				Options: &pulumirpc.TransformResourceOptions{DependsOn: []string{"urn:a"}, Protect: proto.Bool(true)}},
			resp: func() proto.Message { return &pulumirpc.TransformResponse{} },
		},
		{
			name: "invoke transform",
			fn: callbacks.InvokeTransform(func(_ context.Context, r *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				return &pulumirpc.TransformInvokeResponse{Args: r.Args, Options: &pulumirpc.TransformInvokeOptions{Version: "1.2.3"}}, nil
			}),
			req:  &pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion", Args: props},
			want: &pulumirpc.TransformInvokeResponse{Args: props, Options: &pulumirpc.TransformInvokeOptions{Version: "1.2.3"}},
			resp: func() proto.Message { return &pulumirpc.TransformInvokeResponse{} },
		},
		{
			name: "resource hook",
			fn: callbacks.ResourceHook(func(_ context.Context, r *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				return &pulumirpc.ResourceHookResponse{Error: "saw " + r.GetUrn()}, nil
			}),
			req:  &pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::t::n", Name: "n", Type: "t", NewInputs: props},
			want: &pulumirpc.ResourceHookResponse{Error: "saw urn:pulumi:dev::p::t::n"},
			resp: func() proto.Message { return &pulumirpc.ResourceHookResponse{} },
		},
		{
			name: "error hook",
			fn: callbacks.ErrorHook(func(_ context.Context, r *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
				return &pulumirpc.ErrorHookResponse{Retry: r.GetFailedOperation() == "create" && len(r.GetErrors()) < 3}, nil
			}),
			req:  &pulumirpc.ErrorHookRequest{Urn: "urn:x", FailedOperation: "create", Errors: []string{"boom"}},
			want: &pulumirpc.ErrorHookResponse{Retry: true},
			resp: func() proto.Message { return &pulumirpc.ErrorHookResponse{} },
		},
		{
			name: "state migration",
			fn: callbacks.StateMigration(func(_ context.Context, r *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
				return &pulumirpc.StateMigrationResponse{NewState: r.OldState, Successors: map[string]string{"urn:old": r.GetUrn()}}, nil
			}),
			req:  &pulumirpc.StateMigrationRequest{Urn: "urn:new", OldState: []byte(`[{"urn":"urn:old"}]`)},
			want: &pulumirpc.StateMigrationResponse{NewState: []byte(`[{"urn":"urn:old"}]`), Successors: map[string]string{"urn:old": "urn:new"}},
			resp: func() proto.Message { return &pulumirpc.StateMigrationResponse{} },
		},
		{
			name: "raw",
			fn: callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) {
				return append([]byte("echo:"), b...), nil
			}),
			req:  &structpb.Value{Kind: &structpb.Value_StringValue{StringValue: "hi"}},
			want: nil, // checked by bytes below
		},
	}
	for _, tr := range transports {
		for _, tt := range tests {
			t.Run(tr.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				eng := tr.serve(t)
				srv := eng.srv
				cb, err := srv.Register(context.Background(), tt.fn, callbacks.Name(tt.name))
				require.NoError(t, err)
				assert.Equal(t, srv.Target(), cb.Target)
				assert.True(t, cb.AcceptsByteString)
				out, err := eng.call(context.Background(), cb.Token, tt.req)
				require.NoError(t, err)
				if tt.want == nil {
					in, _ := proto.Marshal(tt.req)
					assert.Equal(t, append([]byte("echo:"), in...), out)
					return
				}
				got := tt.resp()
				require.NoError(t, proto.Unmarshal(out, got))
				assert.Empty(t, cmpDiff(tt.want, got))
			})
		}
	}
}

func cmpDiff(want, got proto.Message) string {
	if proto.Equal(want, got) {
		return ""
	}
	return fmt.Sprintf("want %v\n got %v", prototext.Format(want), prototext.Format(got))
}

// Each failure reaches the engine with its exact gRPC code.
func TestErrorCodes(t *testing.T) {
	t.Parallel()
	statusErr := status.Error(codes.PermissionDenied, "not allowed")
	ignored := make(chan struct{}) // releases the hook that ignores its context
	tests := []struct {
		name     string
		fn       callbacks.Func
		opts     []callbacks.RegisterOption
		token    func(registered string) string
		payload  []byte
		ctx      func() (context.Context, context.CancelFunc)
		wantCode codes.Code
		wantMsg  []string // substrings of the status message
		notInMsg []string
		wantIs   error
		after    func() // runs once the call has ended
	}{
		{name: "unknown token", token: func(string) string { return "5f1b0d7e-0000-4000-8000-000000000000" },
			wantCode: codes.NotFound, wantMsg: []string{"5f1b0d7e-0000-4000-8000-000000000000"}, wantIs: callbacks.ErrUnknownToken},
		{name: "empty token", token: func(string) string { return "" },
			wantCode: codes.InvalidArgument, wantMsg: []string{"empty callback token"}, wantIs: callbacks.ErrInvalidRequest},
		{name: "payload that does not decode", payload: []byte{0xff, 0xff, 0xff},
			wantCode: codes.InvalidArgument, wantMsg: []string{"resource hook", "pulumirpc.ResourceHookRequest"}, wantIs: callbacks.ErrInvalidRequest},
		{name: "panic", fn: hook(func() error { panic("secret-value-123") }),
			wantCode: codes.Internal, wantMsg: []string{"resource hook", "panicked: secret-value-123"}, notInMsg: []string{"goroutine", ".go:"}, wantIs: callbacks.ErrPanicked},
		{name: "status error keeps its code", fn: hook(func() error { return statusErr }),
			wantCode: codes.PermissionDenied, wantMsg: []string{"not allowed"}},
		{name: "wrapped status error keeps its code", fn: hook(func() error { return fmt.Errorf("checking: %w", statusErr) }),
			wantCode: codes.PermissionDenied, wantMsg: []string{"checking: ", "not allowed"}},
		{name: "plain error is Unknown", fn: hook(func() error { return errors.New("bad transform") }),
			wantCode: codes.Unknown, wantMsg: []string{"bad transform"}},
		{name: "engine cancels", fn: blockingHook(),
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(50*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantCode: codes.Canceled},
		{name: "engine deadline", fn: blockingHook(),
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			wantCode: codes.DeadlineExceeded},
		{name: "registration deadline", fn: blockingHook(), opts: []callbacks.RegisterOption{callbacks.Timeout(20 * time.Millisecond)},
			wantCode: codes.DeadlineExceeded, wantMsg: []string{"resource hook", "did not answer within its deadline", "for urn:pulumi:dev::p::t::n"}},
		{name: "deadline even when the function ignores its context", fn: ignoringHook(ignored), opts: []callbacks.RegisterOption{callbacks.Timeout(20 * time.Millisecond)},
			wantCode: codes.DeadlineExceeded, wantMsg: []string{"deadline"}, after: func() { close(ignored) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eng := serve(t)
			srv := eng.srv
			fn := tt.fn
			if callbacks.KindOf(fn) == 0 {
				fn = hook(func() error { return nil })
			}
			cb, err := srv.Register(context.Background(), fn, tt.opts...)
			require.NoError(t, err)
			token := cb.Token
			if tt.token != nil {
				token = tt.token(token)
			}
			payload := tt.payload
			if payload == nil {
				payload, _ = proto.Marshal(&pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::t::n", Type: "t", Name: "n"})
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			if tt.after != nil {
				defer tt.after()
			}
			_, err = eng.invoke(ctx, token, payload)
			st := status.Convert(err)
			assert.Equal(t, tt.wantCode, st.Code(), "status: %v", st)
			for _, s := range tt.wantMsg {
				assert.Contains(t, st.Message(), s)
			}
			for _, s := range tt.notInMsg {
				assert.NotContains(t, st.Message(), s)
			}
			if tt.wantIs != nil {
				// The same call through the registry alone returns a sentinel.
				_, rerr := srv.Registry().Invoke(context.Background(), token, payload)
				assert.ErrorIs(t, rerr, tt.wantIs)
			}
		})
	}
}

func hook(f func() error) callbacks.Func {
	return callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, f()
	})
}

func blockingHook() callbacks.Func {
	return callbacks.ResourceHook(func(ctx context.Context, _ *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
}

// ignoringHook ignores its context and returns only once release is
// closed: it cannot answer before its deadline, however slow the machine,
// and it still ends, so no goroutine leaks.
func ignoringHook(release <-chan struct{}) callbacks.Func {
	return callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		<-release
		return nil, nil
	})
}

func TestPanicIsContainedAndServerKeepsServing(t *testing.T) {
	t.Parallel()
	eng := serveLoopback(t)
	srv := eng.srv
	var calls atomic.Int32
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		if calls.Add(1) == 1 {
			panic("first call panics")
		}
		return []byte("ok"), nil
	}))
	require.NoError(t, err)
	_, err = eng.invoke(context.Background(), cb.Token, nil)
	assert.Equal(t, codes.Internal, status.Code(err))
	out, err := eng.invoke(context.Background(), cb.Token, nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(out))
}

// A nil response with a nil error is the empty message: no change, success.
func TestNilResponseIsEmpty(t *testing.T) {
	t.Parallel()
	eng := serve(t)
	srv := eng.srv
	cb, err := srv.Register(context.Background(), callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return nil, nil
	}))
	require.NoError(t, err)
	out, err := eng.call(context.Background(), cb.Token, &pulumirpc.TransformRequest{Name: "x"})
	require.NoError(t, err)
	assert.Empty(t, out)
}

func TestRegistryWithoutSockets(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	_, err := reg.Register(callbacks.Raw(nil))
	require.ErrorIs(t, err, callbacks.ErrNilFunc)
	_, err = reg.Register(callbacks.ResourceTransform(nil))
	require.ErrorIs(t, err, callbacks.ErrNilFunc)
	_, err = reg.Register(callbacks.Func{})
	require.ErrorIs(t, err, callbacks.ErrNilFunc)

	tok, err := reg.Register(callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }), callbacks.Name("echo"))
	require.NoError(t, err)
	kind, name, ok := reg.Lookup(tok)
	assert.True(t, ok)
	assert.Equal(t, callbacks.KindRaw, kind)
	assert.Equal(t, "echo", name)
	out, err := reg.Invoke(context.Background(), tok, []byte("x"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(out))
	assert.Equal(t, 1, reg.Len())
	assert.True(t, reg.Unregister(tok))
	assert.False(t, reg.Unregister(tok))
	_, err = reg.Invoke(context.Background(), tok, nil)
	require.ErrorIs(t, err, callbacks.ErrUnknownToken)
	assert.Equal(t, codes.NotFound, status.Code(err))
}

// 64 goroutines invoke while tokens come and go; every call on a live token
// succeeds and every call on a removed one is NotFound.
func TestConcurrentInvokeRegisterUnregister(t *testing.T) {
	t.Parallel()
	eng := serve(t)
	srv := eng.srv
	stable, err := srv.Register(context.Background(), callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if g%4 == 0 {
					cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
					if err != nil {
						errs <- err
						return
					}
					if i%2 == 0 {
						srv.Registry().Unregister(cb.Token)
						if _, err := eng.invoke(context.Background(), cb.Token, nil); status.Code(err) != codes.NotFound {
							errs <- fmt.Errorf("removed token: got %v, want NotFound", err)
							return
						}
					}
					continue
				}
				msg := []byte(fmt.Sprintf("%d-%d", g, i))
				out, err := eng.invoke(context.Background(), stable.Token, msg)
				if err != nil || string(out) != string(msg) {
					errs <- fmt.Errorf("stable token: got %q, %v", out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 1+16*10, srv.Registry().Len())
}

// Shutdown lets calls in flight finish, refuses new ones with Unavailable,
// and then returns; Serve-style registrations fail with ErrServerClosed.
func TestShutdownDrainsInFlightCalls(t *testing.T) {
	t.Parallel()
	eng := serve(t)
	srv := eng.srv
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		started <- struct{}{}
		<-release
		return []byte("done"), nil
	}))
	require.NoError(t, err)
	results := make(chan error, 8)
	for range 8 {
		go func() {
			out, err := eng.invoke(context.Background(), cb.Token, nil)
			if err == nil && string(out) != "done" {
				err = fmt.Errorf("got %q", out)
			}
			results <- err
		}()
	}
	for range 8 {
		<-started
	}
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(context.Background()) }()
	// While draining, new calls are refused (once Shutdown has begun).
	waitFor(t, func() bool {
		_, err := eng.invoke(context.Background(), cb.Token, nil)
		return status.Code(err) == codes.Unavailable
	})
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned %v before the calls in flight finished", err)
	default:
	}
	close(release)
	for range 8 {
		assert.NoError(t, <-results)
	}
	require.NoError(t, <-shutdown)
	// Refused as every failure is: an *Error.
	_, err = srv.Invoke(context.Background(), &pulumirpc.CallbackInvokeRequest{Token: cb.Token})
	var ce *callbacks.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, codes.Unavailable, ce.Code)
	assert.ErrorIs(t, err, callbacks.ErrServerClosed)
	_, err = srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	assert.ErrorIs(t, err, callbacks.ErrServerClosed)
	require.NoError(t, srv.Shutdown(context.Background()), "Shutdown is idempotent")
	require.NoError(t, srv.Close(), "Close after Shutdown is fine")
}

// When Shutdown's context ends first, the server is stopped at once and the
// calls still running see their context cancelled.
func TestShutdownForcedWhenContextEnds(t *testing.T) {
	t.Parallel()
	eng := serve(t)
	srv := eng.srv
	cancelled := make(chan struct{})
	entered := make(chan struct{})
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
		close(entered)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}))
	require.NoError(t, err)
	go func() { _, _ = eng.invoke(context.Background(), cb.Token, nil) }()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, srv.Shutdown(ctx), context.DeadlineExceeded)
	// The function returns only once its context is cancelled; the test's
	// own deadline bounds the wait.
	<-cancelled
}

func TestServeLifecycle(t *testing.T) {
	t.Parallel()
	srv, err := callbacks.NewServer()
	require.NoError(t, err)
	// Before Serve, a registration waits for it, bounded by its context.
	early, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = srv.Register(early, callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	require.ErrorIs(t, err, callbacks.ErrNotServing)
	require.ErrorIs(t, err, context.Canceled)

	// The net/http habit: start Serve on a goroutine and register at once,
	// with no polling; Register waits for Serve to begin.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return []byte("up"), nil }))
	require.NoError(t, err)
	assert.Equal(t, lis.Addr().String(), cb.GetTarget())
	out, err := dialEngine(t, srv, cb.GetTarget()).invoke(context.Background(), cb.GetToken(), nil)
	require.NoError(t, err)
	assert.Equal(t, "up", string(out))

	require.NoError(t, srv.Close())
	require.ErrorIs(t, <-served, callbacks.ErrServerClosed)
	lis2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.ErrorIs(t, srv.Serve(lis2), callbacks.ErrServerClosed, "a closed server cannot be reused")
	_ = lis2.Close()
	_, err = srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	require.ErrorIs(t, err, callbacks.ErrServerClosed)
}

// A registration waiting for Serve ends when the server is closed.
func TestRegisterWaitingForServeEndsOnClose(t *testing.T) {
	t.Parallel()
	srv, err := callbacks.NewServer()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
		done <- err
	}()
	require.NoError(t, srv.Close())
	require.ErrorIs(t, <-done, callbacks.ErrServerClosed)
}

// With WithListener, NewServer knows its target at once.
func TestNewServerWithListenerKnowsItsTarget(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := callbacks.NewServer(callbacks.WithListener(lis))
	require.NoError(t, err)
	defer srv.Close()
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	require.NoError(t, err)
	assert.Equal(t, lis.Addr().String(), cb.GetTarget())
	go func() { _ = srv.Serve(lis) }()
}

func TestDefaultListenerIsLoopback(t *testing.T) {
	t.Parallel()
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	defer srv.Close()
	host, _, err := net.SplitHostPort(srv.Target())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
}

func TestUnixSocket(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/cb.sock"
	srv, err := callbacks.Listen(callbacks.Address("unix://" + path))
	require.NoError(t, err)
	assert.Equal(t, "unix://"+path, srv.Target())
	assert.True(t, strings.HasPrefix(srv.Target(), "unix:///"))
	eng := dialEngine(t, srv, srv.Target())
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return []byte("unix"), nil }))
	require.NoError(t, err)
	out, err := eng.invoke(context.Background(), cb.Token, nil)
	require.NoError(t, err)
	assert.Equal(t, "unix", string(out))
}
