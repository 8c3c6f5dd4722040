package invoketransforms_test

import (
	"context"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// okMonitor is an engine that supports invoke transforms and accepts them.
func okMonitor(t *testing.T) *monitor.Monitor {
	return monitortest.Serve(t, &monitortest.Fake{
		DeploymentInfo:               monitortest.CurrentEngine(monitor.InvokeTransforms),
		RegisterStackInvokeTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
	})
}

func TestRegisterStack(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, *pulumirpc.Callback) error { return nil }
	tests := []struct {
		name    string
		mon     *monitortest.Fake
		wantErr string
		wantIs  error
		wantRPC int // RegisterStackInvokeTransform calls expected
	}{
		{
			name:    "success",
			mon:     &monitortest.Fake{DeploymentInfo: monitortest.CurrentPreview(monitor.InvokeTransforms), RegisterStackInvokeTransform: ok},
			wantRPC: 1,
		},
		{
			name:    "old engine with invoke transforms",
			mon:     &monitortest.Fake{SupportsFeature: monitortest.OldEngine("invokeTransforms"), RegisterStackInvokeTransform: ok},
			wantRPC: 1,
		},
		{
			name:    "rpc failure",
			mon:     &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.InvokeTransforms), RegisterStackInvokeTransform: func(context.Context, *pulumirpc.Callback) error { return status.Error(codes.Internal, "engine broke") }},
			wantErr: "RegisterStackInvokeTransform: rpc error: code = Internal desc = engine broke",
			wantRPC: 1,
		},
		{
			name:    "feature missing",
			mon:     &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms, monitor.ResourceHooks), RegisterStackInvokeTransform: ok},
			wantErr: "invoke transforms (INVOKE_TRANSFORMS)",
			wantIs:  monitor.ErrMissingFeature,
		},
		{
			name:    "old engine without invoke transforms",
			mon:     &monitortest.Fake{SupportsFeature: monitortest.OldEngine("transforms"), RegisterStackInvokeTransform: ok},
			wantErr: "INVOKE_TRANSFORMS",
			wantIs:  monitor.ErrMissingFeature,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := wiretest.StartServer(t)
			mon := monitortest.Serve(t, tt.mon)
			before := srv.Registry().Len()
			cb, err := invoketransforms.RegisterStack(t.Context(), wiretest.Bind(t, mon, srv), identity, callbacks.Name("inv"))
			calls := monitortest.Requests[*pulumirpc.Callback](tt.mon, "RegisterStackInvokeTransform")
			require.Len(t, calls, tt.wantRPC)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				if tt.wantIs != nil {
					assert.ErrorIs(t, err, tt.wantIs)
				}
				assert.Nil(t, cb)
				assert.Equal(t, before, srv.Registry().Len(), "a failed registration must leave no token")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, before+1, srv.Registry().Len())
			assert.Equal(t, cb.GetToken(), calls[0].GetToken())
			assert.Equal(t, srv.Target(), calls[0].GetTarget())
			kind, name, found := srv.Registry().Lookup(cb.GetToken())
			require.True(t, found)
			assert.Equal(t, callbacks.KindInvokeTransform, kind)
			assert.Equal(t, "inv", name)
		})
	}
}

func TestRegisterStackArguments(t *testing.T) {
	t.Parallel()
	srv, _ := wiretest.StartServer(t)
	f := &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.InvokeTransforms), RegisterStackInvokeTransform: func(context.Context, *pulumirpc.Callback) error { return nil }}
	mon := monitortest.Serve(t, f)
	_, err := invoketransforms.RegisterStack(t.Context(), nil, identity)
	assert.ErrorIs(t, err, callbacks.ErrNilArgument)
	_, err = invoketransforms.RegisterStack(t.Context(), wiretest.Bind(t, mon, srv), nil)
	assert.ErrorIs(t, err, callbacks.ErrNilFunc)
	assert.Empty(t, monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackInvokeTransform"))
	assert.Equal(t, 0, srv.Registry().Len())

	require.NoError(t, srv.Close())
	_, err = invoketransforms.RegisterStack(t.Context(), wiretest.Bind(t, mon, srv), identity)
	assert.ErrorIs(t, err, callbacks.ErrServerClosed)
	assert.Empty(t, monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackInvokeTransform"))
}
