package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/replay"
)

// An inline deployment records its callbacks as `pulumi up` does: the
// workspace's environment gives the CLI PULUMI_DEBUG_GRPC, the log holds
// the transform, the hook and the error hook's retry of the throttled
// create, and the same inline program replays it with no difference.
func TestInlineDeploymentRecordsItsCallbacks(t *testing.T) {
	hermetic(t, true)
	logFile := filepath.Join(t.TempDir(), "up.jsonl")
	ctx := t.Context()
	tl := &tally{stack: "recorded"}
	stack, err := auto.UpsertStackInlineSource(ctx, tl.stack, "automation", inline(tl),
		auto.EnvVars(map[string]string{"PULUMI_DEBUG_GRPC": logFile}))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = stack.Destroy(ctx, optdestroy.Remove()) })
	_, err = stack.Up(ctx, optup.SuppressProgress())
	require.NoError(t, err)

	f, err := os.Open(logFile)
	require.NoError(t, err, "the CLI wrote no log: the workspace's environment did not reach it")
	defer func() { _ = f.Close() }()
	type seen struct {
		kind     callbacks.Kind
		name     string
		resource string
		outcome  replay.Outcome
	}
	var calls []seen
	for c, err := range replay.Read(f) {
		require.NoError(t, err)
		outcome, _ := c.Outcome()
		calls = append(calls, seen{c.Kind, c.Registration.Name, c.Name, outcome})
	}
	var onPet []seen
	for _, c := range calls {
		if c.resource == "pet" {
			onPet = append(onPet, c)
		}
	}
	assert.Equal(t, []seen{
		{callbacks.KindResourceTransform, "", "pet", "changed"},
		{callbacks.KindResourceHook, "audit", "pet", "ok"},
		{callbacks.KindErrorHook, "retry", "pet", "retry"},
	}, onPet, "the callbacks the log holds about the pet (all: %v)", calls)

	replay.Run(t, logFile, inline(&tally{stack: tl.stack}))
}
