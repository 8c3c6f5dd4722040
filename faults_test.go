package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// relWait waits for ch or fails the test when ctx (the hang guard) ends.
func relWait(ctx context.Context, t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("gave up waiting: %s", what)
	}
}

// relPanicky builds a function of the given kind that panics with value on
// its first call and answers normally afterwards.
func relPanicky(kind callbacks.Kind, value func() any) callbacks.Func {
	var calls atomic.Int32
	maybePanic := func() {
		if calls.Add(1) == 1 {
			panic(value())
		}
	}
	switch kind {
	case callbacks.KindResourceTransform:
		return callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			maybePanic()
			return &pulumirpc.TransformResponse{}, nil
		})
	case callbacks.KindInvokeTransform:
		return callbacks.InvokeTransform(func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
			maybePanic()
			return &pulumirpc.TransformInvokeResponse{}, nil
		})
	case callbacks.KindResourceHook:
		return callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			maybePanic()
			return &pulumirpc.ResourceHookResponse{}, nil
		})
	case callbacks.KindErrorHook:
		return callbacks.ErrorHook(func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
			maybePanic()
			return &pulumirpc.ErrorHookResponse{}, nil
		})
	case callbacks.KindStateMigration:
		return callbacks.StateMigration(func(context.Context, *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
			maybePanic()
			return &pulumirpc.StateMigrationResponse{}, nil
		})
	}
	return callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		maybePanic()
		return []byte("ok"), nil
	})
}

// A panicking function costs the engine one Internal error: the server keeps
// serving, the same registration answers the next call, and neither the
// panic value nor the stack reaches the wire.
func TestFaultPanicIsContained(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		kind    callbacks.Kind
		value   func() any
		leak    string // text of the panic that must not reach the wire
		regOpts []callbacks.RegisterOption
		request proto.Message
	}{
		{
			name: "resource transform panics with a string", kind: callbacks.KindResourceTransform,
			value: func() any { return "kaboom-string" }, leak: "kaboom-string",
			request: &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: "a"},
		},
		{
			name: "invoke transform panics with an error", kind: callbacks.KindInvokeTransform,
			value: func() any { return errors.New("kaboom-error") }, leak: "kaboom-error",
			request: &pulumirpc.TransformInvokeRequest{Token: "pkg:index:getThing"},
		},
		{
			name: "resource hook fails a type assertion", kind: callbacks.KindResourceHook,
			value: func() any {
				var v any = "not a number"
				return v.(int)
			},
			leak:    "interface conversion",
			request: &pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a"},
		},
		{
			name: "error hook panics with nil", kind: callbacks.KindErrorHook,
			value: func() any { return nil }, leak: "panic called with nil argument",
			request: &pulumirpc.ErrorHookRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a", Errors: []string{"e"}},
		},
		{
			name: "state migration indexes out of range", kind: callbacks.KindStateMigration,
			value: func() any {
				var s []int
				i := 3
				return s[i]
			},
			leak:    "out of range",
			request: &pulumirpc.StateMigrationRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a"},
		},
		{
			name: "raw function panics with a struct", kind: callbacks.KindRaw,
			value: func() any { return struct{ Secret string }{"kaboom-struct"} }, leak: "kaboom-struct",
		},
		{
			// With a deadline the function runs on a goroutine of its own.
			name: "resource transform with a deadline panics", kind: callbacks.KindResourceTransform,
			value: func() any { return "kaboom-bounded" }, leak: "kaboom-bounded",
			regOpts: []callbacks.RegisterOption{callbacks.Timeout(time.Hour)},
			request: &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: "a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := serve(t)
			ctx := testCtx(t)
			cb := mustRegister(t, env.srv, relPanicky(tc.kind, tc.value), tc.regOpts...)
			healthy := mustRegister(t, env.srv, callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
			var payload []byte
			if tc.request != nil {
				payload = mustMarshal(t, tc.request)
			}

			_, err := env.invoke(ctx, cb.GetToken(), payload)
			wantStatus(t, err, codes.Internal, "panicked: ")
			msg := status.Convert(err).Message()
			assert.Contains(t, msg, tc.leak, "the panic value must reach the user")
			assert.True(t, strings.HasPrefix(msg, tc.kind.String()), "message %q names the kind", msg)

			out, err := env.invoke(ctx, healthy.GetToken(), []byte("still serving"))
			require.NoError(t, err, "another registration after the panic")
			assert.Equal(t, "still serving", string(out))
			_, err = env.invoke(ctx, cb.GetToken(), payload)
			require.NoError(t, err, "the same registration after the panic")
		})
	}
}

// A function blocked until the engine gives up must see its context end, the
// call must end with Canceled or DeadlineExceeded, and the function's
// goroutine must exit.
func TestFaultBlockedFunctionEndsWithTheCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// honour: the function returns when its context ends; otherwise it
		// waits for the test to release it.
		honour bool
		// own is the registration's deadline (Timeout), 0 for none.
		own time.Duration
		// end makes the engine side give up: it gets the call's cancel
		// function and the server.
		end      func(cancel context.CancelFunc, srv *callbacks.Server)
		deadline time.Duration // a deadline on the engine's call, 0 for none
		wantCode codes.Code
		wantMsg  string
		// wantCtx lists the errors the function's context may end with,
		// when it honours it.
		wantCtx []error
	}{
		{
			name: "engine cancels", honour: true,
			end:      func(cancel context.CancelFunc, _ *callbacks.Server) { cancel() },
			wantCode: codes.Canceled, wantCtx: []error{context.Canceled},
		},
		{
			// The engine sets no deadline today; a client that does sends
			// it in grpc-timeout and the function's context carries it.
			// Client and server both time the deadline: whichever fires
			// first (the server's timer, or the client's reset of the
			// stream) decides the function's context error.
			name: "engine deadline", honour: true, deadline: 50 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, wantCtx: []error{context.DeadlineExceeded, context.Canceled},
		},
		{
			name: "own deadline, function honours it", honour: true, own: 50 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, wantMsg: "did not answer within its deadline",
			wantCtx: []error{context.DeadlineExceeded},
		},
		{
			// The call ends at the deadline; the function goes on until it
			// returns, as documented, and then its goroutine exits.
			name: "own deadline, function ignores it", own: 50 * time.Millisecond,
			wantCode: codes.DeadlineExceeded, wantMsg: "did not answer within its deadline",
		},
		{
			name: "server closed under the call", honour: true,
			end:      func(_ context.CancelFunc, srv *callbacks.Server) { _ = srv.Close() },
			wantCode: codes.Unavailable, wantCtx: []error{context.Canceled},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := serve(t)
			guard := testCtx(t)
			// On a loaded machine a deadline, the engine's or the
			// registration's, can pass before the function starts; the
			// call then ends with DeadlineExceeded all the same, but the
			// function's side is not seen, so the call is made again with
			// longer deadlines, for as long as the test's guard allows.
			for deadline, own := tc.deadline, tc.own; ; deadline, own = deadline*4, own*4 {
				var regOpts []callbacks.RegisterOption
				if own > 0 {
					regOpts = append(regOpts, callbacks.Timeout(own))
				}
				if relBlockedCall(t, guard, env, tc.honour, regOpts, tc.end, deadline, tc.wantCode, tc.wantMsg, tc.wantCtx) {
					return
				}
				t.Logf("the deadline (the engine's %v, the registration's %v) passed before the function started; again with longer ones", deadline, own)
			}
		})
	}
}

// relBlockedCall makes one call of the blocked function of
// TestFaultBlockedFunctionEndsWithTheCall and checks how it ends. It reports
// false, having checked nothing, when the call's deadline passed before the
// function started.
func relBlockedCall(t *testing.T, guard context.Context, env *harness, honour bool, regOpts []callbacks.RegisterOption,
	end func(context.CancelFunc, *callbacks.Server), deadline time.Duration, wantCode codes.Code, wantMsg string, wantCtx []error) bool {
	t.Helper()
	type outcome struct {
		ctxErr error // what the function's context said, nil if it ignored it
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	done := make(chan outcome, 1)
	cb := mustRegister(t, env.srv, callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
		close(entered)
		if honour {
			<-ctx.Done()
			done <- outcome{ctxErr: ctx.Err()}
			return nil, ctx.Err()
		}
		<-release
		done <- outcome{}
		return []byte("late"), nil
	}), regOpts...)

	callCtx, cancel := context.WithCancel(guard)
	defer cancel()
	if deadline > 0 {
		callCtx, cancel = context.WithTimeout(guard, deadline)
		defer cancel()
	}
	errc := make(chan error, 1)
	go func() {
		_, err := env.invoke(callCtx, cb.GetToken(), nil)
		errc <- err
	}()
	var err error
	select {
	case <-entered:
	case err = <-errc:
		if timed := deadline > 0 || len(regOpts) > 0; timed && status.Code(err) == codes.DeadlineExceeded {
			// Let the function run, then report: try again.
			close(release)
			return false
		}
		t.Fatalf("the call ended before the function started: %v", err)
	case <-guard.Done():
		t.Fatal("gave up waiting: the function to start")
	}
	if end != nil {
		end(cancel, env.srv)
	}
	select {
	case err = <-errc:
	case <-guard.Done():
		t.Fatal("the call never ended")
	}
	wantStatus(t, err, wantCode, wantMsg)

	close(release)
	select {
	case got := <-done:
		if honour {
			assert.Contains(t, wantCtx, got.ctxErr, "the function's context")
		}
	case <-guard.Done():
		t.Fatal("the function's goroutine never finished")
	}
	return true
}

// The same through Registry.Invoke: the error is a *callbacks.Error whose
// code says who gave up.
func TestFaultRegistryCancellation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		regOpts  []callbacks.RegisterOption
		cancel   bool
		wantCode codes.Code
		wantIs   error
	}{
		{name: "caller cancels", cancel: true, wantCode: codes.Canceled, wantIs: context.Canceled},
		{name: "caller cancels a call with its own deadline", cancel: true,
			regOpts: []callbacks.RegisterOption{callbacks.Timeout(time.Hour)}, wantCode: codes.Canceled, wantIs: context.Canceled},
		{name: "own deadline", regOpts: []callbacks.RegisterOption{callbacks.Timeout(20 * time.Millisecond)},
			wantCode: codes.DeadlineExceeded, wantIs: callbacks.ErrTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			guard := testCtx(t)
			reg := newTestRegistry(t)
			entered := make(chan struct{})
			exited := make(chan struct{})
			token, err := reg.Register(callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
				defer close(exited)
				close(entered)
				<-ctx.Done()
				return nil, ctx.Err()
			}), tc.regOpts...)
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(guard)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := reg.Invoke(ctx, token, nil)
				errc <- err
			}()
			relWait(guard, t, entered, "the function to start")
			if tc.cancel {
				cancel()
			}
			select {
			case err = <-errc:
			case <-guard.Done():
				t.Fatal("Invoke never returned")
			}
			var ce *callbacks.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.wantCode, ce.Code)
			assert.ErrorIs(t, err, tc.wantIs)
			if tc.cancel {
				// Cancelled, not failed: the message says so.
				assert.Contains(t, ce.Msg, "did not fail but was cancelled by its caller")
				assert.Contains(t, ce.Msg, "another step failed")
			}
			relWait(guard, t, exited, "the function's goroutine to exit")
		})
	}
}

// A function that ends its goroutine with runtime.Goexit (what t.FailNow and
// require.* do inside a callback under test) neither returns nor panics. The
// call must still end, with an error, instead of leaving the engine waiting
// forever: the engine puts no deadline on callbacks.
func TestFaultGoexitEndsTheCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		regOpts []callbacks.RegisterOption
		want    []codes.Code
	}{
		{name: "no deadline", want: []codes.Code{codes.Internal}},
		{name: "own deadline", regOpts: []callbacks.RegisterOption{callbacks.Timeout(time.Hour)},
			want: []codes.Code{codes.Internal}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := serve(t)
			// The failure mode is the guard firing.
			ctx := testCtx(t)
			cb := mustRegister(t, env.srv, callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
				runtime.Goexit()
				return nil, nil
			}), tc.regOpts...)
			_, err := env.invoke(ctx, cb.GetToken(), nil)
			if ctx.Err() != nil {
				t.Fatalf("the call hung until the test gave up (%v)", err)
			}
			assert.Contains(t, tc.want, status.Code(err), "code of %v", err)

			healthy := mustRegister(t, env.srv, callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
			_, err = env.invoke(ctx, healthy.GetToken(), nil)
			require.NoError(t, err, "the server after the Goexit")
		})
	}
}

// A function that returns a nil *callbacks.Error in a non-nil error (the
// classic typed-nil mistake) has still returned an error. Registry.Invoke
// must not panic on it, nor report the call as a success.
func TestFaultTypedNilError(t *testing.T) {
	t.Parallel()
	nilErr := func(wrap bool) callbacks.Func {
		return callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			var ce *callbacks.Error // never assigned
			if wrap {
				return nil, fmt.Errorf("checking tags: %w", ce)
			}
			return nil, ce
		})
	}
	cases := []struct {
		name    string
		fn      callbacks.Func
		opts    []callbacks.RegistryOption
		regOpts []callbacks.RegisterOption
	}{
		{name: "typed nil", fn: nilErr(false)},
		{name: "wrapped typed nil", fn: nilErr(true)},
		{name: "typed nil with an observer", fn: nilErr(false), opts: []callbacks.RegistryOption{callbacks.WithObserver(relCodeObserver{})}},
		{name: "typed nil, failing open", fn: nilErr(false), regOpts: []callbacks.RegisterOption{callbacks.FailOpen()}},
		{name: "wrapped typed nil, failing open", fn: nilErr(true), regOpts: []callbacks.RegisterOption{callbacks.FailOpen()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := newTestRegistry(t, tc.opts...)
			token, err := reg.Register(tc.fn, tc.regOpts...)
			require.NoError(t, err)
			var panicked any
			func() {
				defer func() { panicked = recover() }()
				_, err = reg.Invoke(testCtx(t), token, nil)
			}()
			require.Nil(t, panicked, "Registry.Invoke panicked; over a Server this panic kills the process")
			require.Error(t, err, "the function's error was reported as success (an empty response)")
			var ce *callbacks.Error
			require.ErrorAs(t, err, &ce)
			require.NotNil(t, ce)
			assert.NotEqual(t, codes.OK, ce.Code)
		})
	}
}

// relCodeObserver is an Observer that does nothing.
type relCodeObserver struct{}

func (relCodeObserver) CallStarted(context.Context, callbacks.CallInfo) {}
func (relCodeObserver) CallFinished(context.Context, callbacks.CallInfo, codes.Code, time.Duration) {
}

// Shutdown with 1,000 calls in flight: a graceful shutdown lets every one of
// them finish; a forced one ends every one of them. Calls that arrive once
// shutdown has begun are refused with Unavailable. No call hangs and none is
// lost: every call ends, and with a code the table allows.
func TestFaultShutdownWithThousandCallsInFlight(t *testing.T) {
	t.Parallel()
	const inFlight = 1000
	const late = 100
	cases := []struct {
		name string
		// forced: the shutdown context is cancelled before the functions
		// are released.
		forced       bool
		wantInFlight []codes.Code
		wantShutdown error
	}{
		{name: "graceful", wantInFlight: []codes.Code{codes.OK}},
		{name: "forced", forced: true,
			wantInFlight: []codes.Code{codes.Canceled, codes.Unavailable}, wantShutdown: context.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := serve(t)
			guard := testCtx(t)
			var entered, exited atomic.Int32
			allIn := make(chan struct{})
			release := make(chan struct{})
			cb := mustRegister(t, env.srv, callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
				defer exited.Add(1)
				if entered.Add(1) == inFlight {
					close(allIn)
				}
				select {
				case <-release:
					return []byte("done"), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}))

			codesOf := func(n int, results chan codes.Code) map[codes.Code]int {
				got := map[codes.Code]int{}
				for range n {
					select {
					case c := <-results:
						got[c]++
					case <-guard.Done():
						t.Fatalf("calls were lost: only %d of %d ended", len(got), n)
					}
				}
				return got
			}
			invoke := func(results chan codes.Code) {
				_, err := env.invoke(guard, cb.GetToken(), nil)
				results <- status.Code(err)
			}

			first := make(chan codes.Code, inFlight)
			for range inFlight {
				go invoke(first)
			}
			relWait(guard, t, allIn, "all calls to reach the function")

			shutdownCtx, cancelShutdown := context.WithCancel(guard)
			defer cancelShutdown()
			shutdownErr := make(chan error, 1)
			go func() { shutdownErr <- env.srv.Shutdown(shutdownCtx) }()
			for {
				_, err := env.srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
				if errors.Is(err, callbacks.ErrServerClosed) {
					break
				}
				require.NoError(t, err)
				if guard.Err() != nil {
					t.Fatal("Shutdown never closed the server to registrations")
				}
				runtime.Gosched()
			}

			second := make(chan codes.Code, late)
			for range late {
				go invoke(second)
			}
			if tc.forced {
				// The functions are never released: only the forced stop
				// can end them, through their contexts.
				defer close(release)
				cancelShutdown()
				select {
				case err := <-shutdownErr:
					assert.ErrorIs(t, err, tc.wantShutdown)
				case <-guard.Done():
					t.Fatal("a forced Shutdown never returned")
				}
			} else {
				close(release)
				select {
				case err := <-shutdownErr:
					assert.NoError(t, err)
				case <-guard.Done():
					t.Fatal("Shutdown never returned")
				}
			}

			gotFirst := codesOf(inFlight, first)
			for c, n := range gotFirst {
				assert.Contains(t, tc.wantInFlight, c, "%d calls in flight ended with %v", n, c)
			}
			// A late call may slip in just as shutdown starts; it then
			// runs like one in flight. Otherwise it is refused.
			gotLate := codesOf(late, second)
			for c, n := range gotLate {
				assert.Contains(t, append([]codes.Code{codes.Unavailable}, tc.wantInFlight...), c,
					"%d late calls ended with %v", n, c)
			}
			for exited.Load() != entered.Load() {
				if guard.Err() != nil {
					t.Fatalf("%d functions never returned", entered.Load()-exited.Load())
				}
				runtime.Gosched()
			}
			t.Logf("in flight: %v; late: %v", gotFirst, gotLate)
		})
	}
}

// Registrations racing Close or Shutdown either succeed or fail with
// ErrServerClosed, and once the server is closed they all fail.
func TestFaultCloseDuringRegistration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		close func(*callbacks.Server) error
	}{
		{"Close", (*callbacks.Server).Close},
		{"Shutdown", func(s *callbacks.Server) error { return s.Shutdown(context.Background()) }},
		{"Close and Shutdown at once", func(s *callbacks.Server) error {
			errc := make(chan error, 1)
			go func() { errc <- s.Shutdown(context.Background()) }()
			err := s.Close()
			return errors.Join(err, <-errc)
		}},
	}
	const registrars = 16
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := serve(t)
			guard := testCtx(t)
			var registered atomic.Int64
			started := make(chan struct{})
			var startOnce sync.Once
			var wg sync.WaitGroup
			for i := range registrars {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fn := callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil })
					for guard.Err() == nil {
						cb, err := env.srv.Register(context.Background(), fn, callbacks.Name(fmt.Sprint("r", i)))
						if errors.Is(err, callbacks.ErrServerClosed) {
							return
						}
						if err != nil || cb == nil || cb.GetToken() == "" {
							t.Errorf("Register during close: callback %v, error %v", cb, err)
							return
						}
						if registered.Add(1) >= 100 {
							startOnce.Do(func() { close(started) })
						}
					}
				}()
			}
			relWait(guard, t, started, "registrations to get going")
			require.NoError(t, tc.close(env.srv))
			wg.Wait()
			_, err := env.srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
			assert.ErrorIs(t, err, callbacks.ErrServerClosed, "Register after close")
			assert.NoError(t, env.srv.Close(), "a second Close")
		})
	}
}

// Register, invoke and unregister from 64 goroutines at once, each also
// calling tokens the others own. A token only ever reaches the function it
// was registered for, or nothing (NotFound) once it is unregistered.
func TestFaultConcurrentRegisterInvokeUnregister(t *testing.T) {
	t.Parallel()
	const workers = 64
	type invoker func(ctx context.Context, token string) ([]byte, codes.Code)
	cases := []struct {
		name   string
		rounds int
		setup  func(t *testing.T) (register func(callbacks.Func) string, unregister func(string) bool, invoke invoker)
	}{
		{
			name: "registry", rounds: 200,
			setup: func(t *testing.T) (func(callbacks.Func) string, func(string) bool, invoker) {
				reg := newTestRegistry(t)
				return func(f callbacks.Func) string {
						token, err := reg.Register(f)
						if err != nil {
							t.Errorf("Register: %v", err)
						}
						return token
					}, reg.Unregister, func(ctx context.Context, token string) ([]byte, codes.Code) {
						out, err := reg.Invoke(ctx, token, nil)
						if err != nil {
							var ce *callbacks.Error
							if !errors.As(err, &ce) {
								t.Errorf("error %v is not a *callbacks.Error", err)
								return nil, codes.Unknown
							}
							return nil, ce.Code
						}
						return out, codes.OK
					}
			},
		},
		{
			name: "server", rounds: 25,
			setup: func(t *testing.T) (func(callbacks.Func) string, func(string) bool, invoker) {
				env := serve(t)
				return func(f callbacks.Func) string {
						cb, err := env.srv.Register(context.Background(), f)
						if err != nil {
							t.Errorf("Register: %v", err)
						}
						return cb.GetToken()
					}, env.srv.Registry().Unregister, func(ctx context.Context, token string) ([]byte, codes.Code) {
						out, err := env.invoke(ctx, token, nil)
						return out, status.Code(err)
					}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			guard := testCtx(t)
			register, unregister, invoke := tc.setup(t)
			var owner sync.Map               // token -> owner id
			var latest [workers]atomic.Value // each worker's newest token
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := range tc.rounds {
						id := fmt.Sprintf("w%02d-r%03d", w, r)
						token := register(callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return []byte(id), nil }))
						owner.Store(token, id)
						latest[w].Store(token)

						if out, code := invoke(guard, token); code != codes.OK || string(out) != id {
							t.Errorf("own token: got %q, %v; want %q, OK", out, code, id)
							return
						}
						// Someone else's token, possibly being unregistered.
						if other, ok := latest[(w+r+1)%workers].Load().(string); ok {
							out, code := invoke(guard, other)
							want, _ := owner.Load(other)
							if code == codes.OK && string(out) != want {
								t.Errorf("token of %v reached %q", want, out)
							} else if code != codes.OK && code != codes.NotFound {
								t.Errorf("other's token: code %v", code)
							}
						}
						if !unregister(token) {
							t.Errorf("Unregister(%s) found nothing", id)
						}
						if _, code := invoke(guard, token); code != codes.NotFound {
							t.Errorf("unregistered token: got %v, want NotFound", code)
						}
						if unregister(token) {
							t.Errorf("second Unregister(%s) found something", id)
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

// After Close or Shutdown no goroutine of the server, its health service, its
// calls or the functions it ran is left behind. This test is not parallel:
// it counts every goroutine in the process, so it must run alone.
func TestFaultNoGoroutinesOutliveTheServer(t *testing.T) {
	cases := []struct {
		name string
		stop func(*callbacks.Server) error
	}{
		{"Close", (*callbacks.Server).Close},
		{"Shutdown", func(s *callbacks.Server) error {
			ctx, cancel := context.WithTimeout(context.Background(), hangBound)
			defer cancel()
			return s.Shutdown(ctx)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			baseline := goleak.IgnoreCurrent()
			func() {
				guard := testCtx(t)
				srv, err := callbacks.Listen() // a real loopback socket
				require.NoError(t, err)
				t.Cleanup(func() { _ = srv.Close() })
				conn := dialLikeEngine(t, srv.Target())
				client := pulumirpc.NewCallbacksClient(conn)

				echo := mustRegister(t, srv, callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) { return b, nil }))
				entered := make(chan struct{})
				release := make(chan struct{})
				ignoring := mustRegister(t, srv, callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
					close(entered)
					<-release
					return nil, nil
				}), callbacks.Timeout(20*time.Millisecond))
				panicking := mustRegister(t, srv, relPanicky(callbacks.KindRaw, func() any { return "x" }))

				for range 10 {
					_, err := client.Invoke(guard, &pulumirpc.CallbackInvokeRequest{Token: echo.GetToken(), Request: []byte("hi")})
					require.NoError(t, err)
				}
				_, err = client.Invoke(guard, &pulumirpc.CallbackInvokeRequest{Token: panicking.GetToken()})
				wantStatus(t, err, codes.Internal, "panicked")
				_, err = client.Invoke(guard, &pulumirpc.CallbackInvokeRequest{Token: ignoring.GetToken()})
				wantStatus(t, err, codes.DeadlineExceeded, "deadline")
				relWait(guard, t, entered, "the deadline-ignoring function to start")
				close(release) // it outlived its call; now it may end

				watch, err := healthpb.NewHealthClient(conn).Watch(guard, &healthpb.HealthCheckRequest{})
				require.NoError(t, err)
				_, err = watch.Recv()
				require.NoError(t, err)

				require.NoError(t, tc.stop(srv))
				require.NoError(t, conn.Close())
			}()
			// Goroutines on their way out get as long as they need on a
			// busy machine (goleak's own retries last under a second);
			// only those still there after the guard are leaks.
			guard := testCtx(t)
			for goleak.Find(baseline) != nil && guard.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			goleak.VerifyNone(t, baseline)
		})
	}
}
