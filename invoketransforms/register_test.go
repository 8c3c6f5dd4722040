package invoketransforms_test

import (
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func infoWith(dryRun bool, fs ...pulumirpc.ResourceMonitorFeature) func() (*pulumirpc.DeploymentInfo, error) {
	return func() (*pulumirpc.DeploymentInfo, error) {
		return &pulumirpc.DeploymentInfo{DryRun: dryRun, SupportedFeatures: fs}, nil
	}
}

// okMonitor is an engine that supports invoke transforms and accepts them.
func okMonitor(t *testing.T) *monitor.Monitor {
	return serveMonitor(t, &fakeMonitor{
		deploymentInfo: infoWith(false, monitor.InvokeTransforms),
		registerStack:  func(*pulumirpc.Callback) error { return nil },
	})
}

func TestRegisterStack(t *testing.T) {
	t.Parallel()
	ok := func(*pulumirpc.Callback) error { return nil }
	tests := []struct {
		name    string
		mon     *fakeMonitor
		wantErr string
		wantIs  error
		wantRPC int // RegisterStackInvokeTransform calls expected
	}{
		{
			name:    "success",
			mon:     &fakeMonitor{deploymentInfo: infoWith(true, monitor.InvokeTransforms), registerStack: ok},
			wantRPC: 1,
		},
		{
			name:    "old engine with invoke transforms",
			mon:     &fakeMonitor{supportsFeature: func(id string) (bool, error) { return id == "invokeTransforms", nil }, registerStack: ok},
			wantRPC: 1,
		},
		{
			name:    "rpc failure",
			mon:     &fakeMonitor{deploymentInfo: infoWith(false, monitor.InvokeTransforms), registerStack: func(*pulumirpc.Callback) error { return status.Error(codes.Internal, "engine broke") }},
			wantErr: "RegisterStackInvokeTransform: rpc error: code = Internal desc = engine broke",
			wantRPC: 1,
		},
		{
			name:    "feature missing",
			mon:     &fakeMonitor{deploymentInfo: infoWith(false, monitor.Transforms, monitor.ResourceHooks), registerStack: ok},
			wantErr: "invoke transforms (INVOKE_TRANSFORMS)",
			wantIs:  monitor.ErrMissingFeature,
		},
		{
			name:    "old engine without invoke transforms",
			mon:     &fakeMonitor{supportsFeature: func(id string) (bool, error) { return id == "transforms", nil }, registerStack: ok},
			wantErr: "INVOKE_TRANSFORMS",
			wantIs:  monitor.ErrMissingFeature,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := startServer(t)
			mon := serveMonitor(t, tt.mon)
			before := srv.Registry().Len()
			cb, err := invoketransforms.RegisterStack(t.Context(), srv, mon, identity, callbacks.Name("inv"))
			calls := tt.mon.calls()
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
	srv, _ := startServer(t)
	f := &fakeMonitor{deploymentInfo: infoWith(false, monitor.InvokeTransforms), registerStack: func(*pulumirpc.Callback) error { return nil }}
	mon := serveMonitor(t, f)
	_, err := invoketransforms.RegisterStack(t.Context(), nil, mon, identity)
	assert.ErrorIs(t, err, invoketransforms.ErrNilArgument)
	_, err = invoketransforms.RegisterStack(t.Context(), srv, nil, identity)
	assert.ErrorIs(t, err, invoketransforms.ErrNilArgument)
	_, err = invoketransforms.RegisterStack(t.Context(), srv, mon, nil)
	assert.ErrorIs(t, err, callbacks.ErrNilFunc)
	_, err = srv.Register(invoketransforms.Adapt(nil, true))
	assert.ErrorIs(t, err, callbacks.ErrNilFunc)
	assert.Empty(t, f.calls())
	assert.Equal(t, 0, srv.Registry().Len())

	require.NoError(t, srv.Close())
	_, err = invoketransforms.RegisterStack(t.Context(), srv, mon, identity)
	assert.ErrorIs(t, err, callbacks.ErrServerClosed)
	assert.Empty(t, f.calls())
}
