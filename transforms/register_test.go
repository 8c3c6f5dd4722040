package transforms_test

import (
	"context"
	"errors"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRegisterStack(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, *pulumirpc.Callback) error { return nil }
	tests := []struct {
		name    string
		mon     *monitortest.Fake
		wantErr string
		wantIs  error
		wantRPC int // RegisterStackTransform calls expected
	}{
		{
			name:    "success",
			mon:     &monitortest.Fake{DeploymentInfo: monitortest.CurrentPreview(monitor.Transforms, pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_BYTE_STRING), RegisterStackTransform: ok},
			wantRPC: 1,
		},
		{
			name:    "old engine with transforms",
			mon:     &monitortest.Fake{SupportsFeature: monitortest.OldEngine("transforms"), RegisterStackTransform: ok},
			wantRPC: 1,
		},
		{
			name: "rpc failure",
			mon: &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms), RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error {
				return status.Error(codes.InvalidArgument, "target must be specified")
			}},
			wantErr: "RegisterStackTransform: rpc error: code = InvalidArgument desc = target must be specified",
			wantRPC: 1,
		},
		{
			name:    "rpc unimplemented",
			mon:     &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms)},
			wantErr: "RegisterStackTransform",
			wantRPC: 1,
		},
		{
			name:    "feature missing",
			mon:     &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.InvokeTransforms, monitor.ResourceHooks), RegisterStackTransform: ok},
			wantErr: "TRANSFORMS",
			wantIs:  monitor.ErrMissingFeature,
		},
		{
			name:    "old engine without transforms",
			mon:     &monitortest.Fake{SupportsFeature: monitortest.OldEngine("secrets", "resourceReferences"), RegisterStackTransform: ok},
			wantErr: "transforms (TRANSFORMS)",
			wantIs:  monitor.ErrMissingFeature,
		},
		{
			name: "feature check fails",
			mon: &monitortest.Fake{DeploymentInfo: func(context.Context) (*pulumirpc.DeploymentInfo, error) {
				return nil, status.Error(codes.Unavailable, "engine gone")
			}, RegisterStackTransform: ok},
			wantErr: "engine gone",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := wiretest.StartServer(t)
			mon := monitortest.Serve(t, tt.mon)
			before := srv.Registry().Len()
			cb, err := transforms.RegisterStack(t.Context(), wiretest.Bind(t, mon, srv), identity, callbacks.Name("stack"))
			calls := monitortest.Requests[*pulumirpc.Callback](tt.mon, "RegisterStackTransform")
			require.Len(t, calls, tt.wantRPC)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				if tt.wantIs != nil {
					assert.ErrorIs(t, err, tt.wantIs)
				}
				assert.Nil(t, cb)
				assert.Equal(t, before, srv.Registry().Len(), "a failed registration must leave no token")
				for _, c := range calls {
					_, _, found := srv.Registry().Lookup(c.GetToken())
					assert.False(t, found, "token %s still registered", c.GetToken())
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, before+1, srv.Registry().Len())
			assert.Equal(t, cb.GetToken(), calls[0].GetToken())
			assert.Equal(t, srv.Target(), calls[0].GetTarget())
			assert.True(t, calls[0].GetAcceptsByteString())
			kind, name, found := srv.Registry().Lookup(cb.GetToken())
			require.True(t, found)
			assert.Equal(t, callbacks.KindResourceTransform, kind)
			assert.Equal(t, "stack", name)
		})
	}
}

func TestRegisterStackDryRun(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	mon := monitortest.Serve(t, &monitortest.Fake{
		DeploymentInfo:         monitortest.CurrentPreview(monitor.Transforms),
		RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
	})
	rec := &recorder{}
	cb, err := transforms.RegisterStack(t.Context(), wiretest.Bind(t, mon, srv), rec.transform)
	require.NoError(t, err)
	_, err = wiretest.Transform(t, client, cb, request(fullOptions()))
	require.NoError(t, err)
	_, info := rec.last()
	assert.True(t, info.DryRun, "the registry learns about previews from the monitor")
}

func TestRegisterStackArguments(t *testing.T) {
	t.Parallel()
	srv, _ := wiretest.StartServer(t)
	f := &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms), RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil }}
	mon := monitortest.Serve(t, f)
	tests := []struct {
		name   string
		call   func() error
		wantIs error
	}{
		{"nil monitor", func() error {
			_, err := transforms.RegisterStack(t.Context(), nil, identity)
			return err
		}, callbacks.ErrNilArgument},
		{"nil func", func() error {
			_, err := transforms.RegisterStack(t.Context(), wiretest.Bind(t, mon, srv), nil)
			return err
		}, callbacks.ErrNilFunc},
	}
	t.Run("cases", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				err := tt.call()
				assert.ErrorIs(t, err, tt.wantIs)
			})
		}
	})
	assert.Empty(t, monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackTransform"))
	assert.Equal(t, 0, srv.Registry().Len())
}

func TestRegisterStackClosedServer(t *testing.T) {
	t.Parallel()
	srv, _ := wiretest.StartServer(t)
	require.NoError(t, srv.Close())
	f := &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms), RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil }}
	_, err := transforms.RegisterStack(t.Context(), wiretest.Bind(t, monitortest.Serve(t, f), srv), identity)
	assert.True(t, errors.Is(err, callbacks.ErrServerClosed), "got %v", err)
	assert.Empty(t, monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackTransform"))
}
