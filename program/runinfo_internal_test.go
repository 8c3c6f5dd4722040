package program

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
