package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// typedKind registers callbacks of one typed package through its public
// registration, as a user would.
type typedKind struct {
	name string
	// register registers a function that runs body (nil: a nil function)
	// with mon, and returns the token the engine calls it with. f is the
	// engine behind mon.
	register func(ctx context.Context, mon *monitor.Monitor, f *monitortest.Fake, body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error)
	// withProps is a well-formed request carrying props where the kind
	// carries properties; nil for kinds without properties.
	withProps func(t *testing.T, props *structpb.Struct) []byte
}

// hookNames makes every hook's name unique in its deployment.
var hookNames atomic.Int64

func typedKinds() []typedKind {
	token := func(cb *pulumirpc.Callback, err error) (string, error) { return cb.GetToken(), err }
	return []typedKind{
		{
			name: "transforms",
			register: func(ctx context.Context, mon *monitor.Monitor, _ *monitortest.Fake, body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error) {
				var fn transforms.Func
				if body != nil {
					fn = func(ctx context.Context, _ *transforms.Args) (*transforms.Result, error) { return nil, body(ctx) }
				}
				return token(transforms.Callback(ctx, mon, fn, opts...))
			},
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: "a", Properties: p})
			},
		},
		{
			name: "invoketransforms",
			register: func(ctx context.Context, mon *monitor.Monitor, _ *monitortest.Fake, body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error) {
				var fn invoketransforms.Func
				if body != nil {
					fn = func(ctx context.Context, _ *invoketransforms.Args) (*invoketransforms.Result, error) {
						return nil, body(ctx)
					}
				}
				return token(invoketransforms.RegisterStack(ctx, mon, fn, opts...))
			},
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return mustMarshal(t, &pulumirpc.TransformInvokeRequest{Token: "pkg:index:fn", Args: p})
			},
		},
		{
			name: "hooks",
			register: func(ctx context.Context, mon *monitor.Monitor, f *monitortest.Fake, body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error) {
				var fn hooks.Func
				if body != nil {
					fn = func(ctx context.Context, _ *hooks.Args) error { return body(ctx) }
				}
				name := fmt.Sprint("h", hookNames.Add(1))
				if _, err := hooks.Register(ctx, mon, name, fn, hooks.WithRegisterOptions(opts...)); err != nil {
					return "", err
				}
				reqs := monitortest.Requests[*pulumirpc.RegisterResourceHookRequest](f, "RegisterResourceHook")
				return reqs[len(reqs)-1].GetCallback().GetToken(), nil
			},
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return mustMarshal(t, &pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a", NewInputs: p})
			},
		},
		{
			name: "hooks error hook",
			register: func(ctx context.Context, mon *monitor.Monitor, f *monitortest.Fake, body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error) {
				var fn hooks.ErrorFunc
				if body != nil {
					fn = func(ctx context.Context, _ *hooks.ErrorArgs) (bool, error) { return false, body(ctx) }
				}
				name := fmt.Sprint("e", hookNames.Add(1))
				if _, err := hooks.RegisterErrorHook(ctx, mon, name, fn, hooks.WithRegisterOptions(opts...)); err != nil {
					return "", err
				}
				reqs := monitortest.Requests[*pulumirpc.RegisterErrorHookRequest](f, "RegisterErrorHook")
				return reqs[len(reqs)-1].GetCallback().GetToken(), nil
			},
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return mustMarshal(t, &pulumirpc.ErrorHookRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a", NewInputs: p})
			},
		},
		{
			name: "migrations",
			register: func(ctx context.Context, mon *monitor.Monitor, _ *monitortest.Fake, body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error) {
				var fn migrations.Func
				if body != nil {
					fn = func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) { return nil, body(ctx) }
				}
				return token(migrations.Callback(ctx, mon, fn, opts...))
			},
		},
	}
}

// typedEngine is an engine with every feature that accepts every
// registration.
func typedEngine() *monitortest.Fake {
	accept := func(context.Context, *pulumirpc.Callback) error { return nil }
	return &monitortest.Fake{
		DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms, monitor.InvokeTransforms,
			monitor.ResourceHooks, monitor.ErrorHooks, monitor.StateMigrations),
		RegisterStackTransform:       accept,
		RegisterStackInvokeTransform: accept,
		RegisterResourceHook:         func(context.Context, *pulumirpc.RegisterResourceHookRequest) error { return nil },
		RegisterErrorHook:            func(context.Context, *pulumirpc.RegisterErrorHookRequest) error { return nil },
	}
}

// The same bad inputs fed to every typed kind give the same answers: a
// *callbacks.Error with the same sentinel for errors.Is and the same gRPC
// code, whichever package the callback comes from.
func TestEveryKindFailsTheSameWay(t *testing.T) {
	t.Parallel()
	userErr := errors.New("user says no")
	invokes := []struct {
		name     string
		body     func(context.Context) error
		opts     []callbacks.RegisterOption
		payload  []byte
		wantIs   error
		wantCode codes.Code
	}{
		{"payload that does not decode", func(context.Context) error { return nil }, nil, []byte{0xff, 0xff, 0xff},
			callbacks.ErrInvalidRequest, codes.InvalidArgument},
		{"panic", func(context.Context) error { panic("refuses t") }, nil, nil, callbacks.ErrPanicked, codes.Internal},
		{"deadline", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			[]callbacks.RegisterOption{callbacks.Timeout(time.Millisecond)}, nil, callbacks.ErrTimeout, codes.DeadlineExceeded},
	}
	for _, k := range typedKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			f := typedEngine()
			mon := monitortest.Serve(t, f, callbacks.WithLogger(discardLogger()))
			reg := mon.Server().Registry()
			register := func(body func(context.Context) error, opts ...callbacks.RegisterOption) (string, error) {
				return k.register(t.Context(), mon, f, body, opts...)
			}
			for _, in := range invokes {
				tok, err := register(in.body, in.opts...)
				require.NoError(t, err)
				_, err = reg.Invoke(context.Background(), tok, in.payload)
				var ce *callbacks.Error
				require.True(t, errors.As(err, &ce), "%s: %T is not a *callbacks.Error: %v", in.name, err, err)
				assert.ErrorIs(t, err, in.wantIs, in.name)
				assert.Equal(t, in.wantCode, status.Code(err), "%s: %v", in.name, err)
			}
			// Properties that do not decode, in a request that does (state
			// migrations carry none).
			if k.name != "migrations" {
				bad := &structpb.Struct{Fields: map[string]*structpb.Value{"blob": relByteStringEnvelope("")}}
				bad.Fields["blob"].GetStructValue().Fields["value"] = structpb.NewStringValue("!not base64!")
				tok, err := register(func(context.Context) error { return nil })
				require.NoError(t, err)
				_, err = reg.Invoke(context.Background(), tok, k.withProps(t, bad))
				assert.ErrorIs(t, err, callbacks.ErrInvalidRequest, "bad properties")
				assertCallbackError(t, err, codes.InvalidArgument)
			}

			// A user's own error is theirs, whatever the kind: a hook sends
			// it in its response, the others fail the call with it.
			tok, err := register(func(context.Context) error { return userErr })
			require.NoError(t, err)
			if _, err := reg.Invoke(context.Background(), tok, nil); err != nil {
				assert.ErrorIs(t, err, userErr)
				assert.Equal(t, codes.Unknown, status.Code(err))
			}

			// Registrations refuse the same things with the same sentinels.
			_, err = register(nil)
			assert.ErrorIs(t, err, callbacks.ErrNilFunc)
			assertCallbackError(t, err, codes.InvalidArgument)
			_, err = register(func(context.Context) error { return nil }, callbacks.Timeout(0))
			assert.ErrorIs(t, err, callbacks.ErrInvalidOption)
			assertCallbackError(t, err, codes.InvalidArgument)
			_, err = k.register(t.Context(), nil, f, func(context.Context) error { return nil })
			assert.ErrorIs(t, err, callbacks.ErrNilArgument)
			assertCallbackError(t, err, codes.InvalidArgument)
		})
	}
}

func assertCallbackError(t *testing.T, err error, code codes.Code) {
	t.Helper()
	var ce *callbacks.Error
	if assert.True(t, errors.As(err, &ce), "%T is not a *callbacks.Error: %v", err, err) {
		assert.Equal(t, code, ce.Code, "%v", err)
	}
}

// A function that returns as soon as its deadline passes has overrun it,
// whichever the registry notices first, its return or the deadline: every
// kind ends such a call with ErrTimeout, typed hooks too, which would
// otherwise send the function's error as the hook's answer.
func TestAReturnAtTheDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	for _, k := range typedKinds() {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			f := typedEngine()
			mon := monitortest.Serve(t, f, callbacks.WithLogger(discardLogger()))
			tok, err := k.register(t.Context(), mon, f, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
				callbacks.Timeout(time.Microsecond))
			require.NoError(t, err)
			answered := 0
			for range 300 {
				_, err := mon.Server().Registry().Invoke(context.Background(), tok, nil)
				if err == nil {
					answered++
					continue
				}
				require.ErrorIs(t, err, callbacks.ErrTimeout)
			}
			assert.Zero(t, answered, "calls answered after their deadline, of 300")
		})
	}
}
