package program

import (
	"errors"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/langhost/callbacks/monitor/monitortest"
)

// Monitor reads the monitor's and the engine's addresses from the SDK's
// unexported run information, which the SDK does not expose. This test pins
// that layout: it fails when an SDK upgrade moves or renames it, before any
// program meets the change.
func TestMonitorReadsTheSDKsRunInfo(t *testing.T) {
	want := pulumi.RunInfo{
		Project:     "shop",
		Stack:       "dev",
		MonitorAddr: monitortest.Listen(t, &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine()}),
		EngineAddr:  "127.0.0.1:40002",
		DryRun:      true,
	}
	ctx, err := pulumi.NewContext(t.Context(), want)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctx.Close() })

	got, err := runInfo(ctx)
	require.NoError(t, err, "the Go SDK's *pulumi.Context no longer keeps its run information where Monitor reads it")
	assert.Equal(t, want, got)

	// A copy made with WithValue shares the deployment's state.
	got, err = runInfo(ctx.WithValue("k", "v"))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// In a component provider's Construct, the SDK's provider package gives the
// context no engine address but its connection to the engine. Monitor
// takes the engine's address from that connection (so that callbacks.Warn
// and callbacks.Info from the provider's hooks reach the engine); this test
// pins where the SDK keeps it.
func TestMonitorReadsTheEngineOfAConstruct(t *testing.T) {
	monitorAddr := monitortest.Listen(t, &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine()})
	const engineAddr = "127.0.0.1:40003"
	conn, err := grpc.NewClient(engineAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	stop := errors.New("stop after reading")
	var got pulumi.RunInfo
	_, err = provider.Construct(t.Context(), &pulumirpc.ConstructRequest{
		Project: "shop", Stack: "dev", MonitorEndpoint: monitorAddr, Type: "kennel:index:Kennel", Name: "north",
	}, conn, func(ctx *pulumi.Context, _, _ string, _ provider.ConstructInputs, _ pulumi.ResourceOption) (*provider.ConstructResult, error) {
		// Construct does not close the context when the function fails.
		t.Cleanup(func() { _ = ctx.Close() })
		var err error
		got, err = runInfo(ctx)
		require.NoError(t, err, "the Go SDK's Construct context no longer keeps its engine connection where Monitor reads it")
		return nil, stop
	})
	require.ErrorContains(t, err, stop.Error())
	assert.Equal(t, pulumi.RunInfo{Project: "shop", Stack: "dev", MonitorAddr: monitorAddr, EngineAddr: engineAddr}, got)
}
