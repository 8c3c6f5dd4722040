package callbacks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// typedKind builds a callback of one typed package whose function runs body.
type typedKind struct {
	name  string
	adapt func(body func(context.Context) error) callbacks.Func
	nil   callbacks.Func // the package's Adapt of a nil function
	// withProps is a well-formed request carrying props where the kind
	// carries properties; nil for kinds without properties.
	withProps func(t *testing.T, props *structpb.Struct) []byte
	// register registers a no-op through the package's registration
	// function with mon, as a user would.
	register func(ctx context.Context, mon *monitor.Monitor, opts ...callbacks.RegisterOption) error
}

func typedKinds() []typedKind {
	return []typedKind{
		{
			name: "transforms",
			adapt: func(body func(context.Context) error) callbacks.Func {
				return transforms.Adapt(func(ctx context.Context, _ *transforms.Args) (*transforms.Result, error) { return nil, body(ctx) })
			},
			nil: transforms.Adapt(nil),
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return relMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: "a", Properties: p})
			},
			register: func(ctx context.Context, mon *monitor.Monitor, opts ...callbacks.RegisterOption) error {
				_, err := transforms.RegisterStack(ctx, mon, func(context.Context, *transforms.Args) (*transforms.Result, error) { return nil, nil }, opts...)
				return err
			},
		},
		{
			name: "invoketransforms",
			adapt: func(body func(context.Context) error) callbacks.Func {
				return invoketransforms.Adapt(func(ctx context.Context, _ *invoketransforms.Args) (*invoketransforms.Result, error) {
					return nil, body(ctx)
				})
			},
			nil: invoketransforms.Adapt(nil),
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return relMarshal(t, &pulumirpc.TransformInvokeRequest{Token: "pkg:index:fn", Args: p})
			},
			register: func(ctx context.Context, mon *monitor.Monitor, opts ...callbacks.RegisterOption) error {
				_, err := invoketransforms.RegisterStack(ctx, mon, func(context.Context, *invoketransforms.Args) (*invoketransforms.Result, error) { return nil, nil }, opts...)
				return err
			},
		},
		{
			name: "hooks",
			adapt: func(body func(context.Context) error) callbacks.Func {
				return hooks.Adapt(func(ctx context.Context, _ *hooks.Args) error { return body(ctx) })
			},
			nil: hooks.Adapt(nil),
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return relMarshal(t, &pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a", NewInputs: p})
			},
			register: func(ctx context.Context, mon *monitor.Monitor, opts ...callbacks.RegisterOption) error {
				_, err := hooks.Register(ctx, mon, "h", func(context.Context, *hooks.Args) error { return nil }, hooks.WithRegisterOptions(opts...))
				return err
			},
		},
		{
			name: "hooks error hook",
			adapt: func(body func(context.Context) error) callbacks.Func {
				return hooks.AdaptErrorHook(func(ctx context.Context, _ *hooks.ErrorArgs) (bool, error) { return false, body(ctx) })
			},
			nil: hooks.AdaptErrorHook(nil),
			withProps: func(t *testing.T, p *structpb.Struct) []byte {
				return relMarshal(t, &pulumirpc.ErrorHookRequest{Urn: "urn:pulumi:dev::p::pkg:index:Thing::a", NewInputs: p})
			},
			register: func(ctx context.Context, mon *monitor.Monitor, opts ...callbacks.RegisterOption) error {
				_, err := hooks.RegisterErrorHook(ctx, mon, "e", func(context.Context, *hooks.ErrorArgs) (bool, error) { return false, nil }, hooks.WithRegisterOptions(opts...))
				return err
			},
		},
		{
			name: "migrations",
			adapt: func(body func(context.Context) error) callbacks.Func {
				return migrations.Adapt(func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) { return nil, body(ctx) })
			},
			nil: migrations.Adapt(nil),
			register: func(ctx context.Context, mon *monitor.Monitor, opts ...callbacks.RegisterOption) error {
				_, err := migrations.Callback(ctx, mon, func(context.Context, *migrations.Args) (*migrations.Result, error) { return nil, nil }, opts...)
				return err
			},
		},
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
			reg := newTestRegistry(t, callbacks.WithLogger(discardLogger()))
			for _, in := range invokes {
				tok, err := reg.Register(k.adapt(in.body), in.opts...)
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
				tok, err := reg.Register(k.adapt(func(context.Context) error { return nil }))
				require.NoError(t, err)
				_, err = reg.Invoke(context.Background(), tok, k.withProps(t, bad))
				assert.ErrorIs(t, err, callbacks.ErrInvalidRequest, "bad properties")
				assertCallbackError(t, err, codes.InvalidArgument)
			}

			// A user's own error is theirs, whatever the kind: a hook sends
			// it in its response, the others fail the call with it.
			tok, err := reg.Register(k.adapt(func(context.Context) error { return userErr }))
			require.NoError(t, err)
			if _, err := reg.Invoke(context.Background(), tok, nil); err != nil {
				assert.ErrorIs(t, err, userErr)
				assert.Equal(t, codes.Unknown, status.Code(err))
			}

			// Registrations refuse the same things with the same sentinels.
			_, err = reg.Register(k.nil)
			assert.ErrorIs(t, err, callbacks.ErrNilFunc)
			assertCallbackError(t, err, codes.InvalidArgument)
			_, err = reg.Register(k.adapt(func(context.Context) error { return nil }), callbacks.Timeout(0))
			assert.ErrorIs(t, err, callbacks.ErrInvalidOption)
			assertCallbackError(t, err, codes.InvalidArgument)
			err = k.register(t.Context(), nil)
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
