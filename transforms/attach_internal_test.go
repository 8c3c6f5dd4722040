package transforms

import (
	"context"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
)

// What the shared transform records about a deployment's resources ends
// with the deployment: once the engine has ended it (here, the fake
// engine's monitor stops), the records are gone and a later Attach is
// refused.
func TestAttachedStateEndsWithTheDeployment(t *testing.T) {
	fake := &monitortest.Fake{
		DeploymentInfo:         monitortest.CurrentEngine(monitor.Transforms),
		RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
	}
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	noop := func(context.Context, *Args) (*Result, error) { return nil, nil }

	var mon *monitor.Monitor
	t.Run("deployment", func(t *testing.T) {
		// The fake engine's monitor stops when this subtest ends.
		mon, err = monitor.Dial(monitortest.Listen(t, fake), srv)
		require.NoError(t, err)
		require.NoError(t, Attach(t.Context(), mon, Descendants("urn:pulumi:dev::shop::teams:index:Team::payments"), noop))
		_, err = attached(mon).transform(t.Context(), &Args{Type: "t:i:T", Name: "pet", Parent: "urn:pulumi:dev::shop::teams:index:Team::payments",
			URN: "urn:pulumi:dev::shop::teams:index:Team$t:i:T::pet"})
		require.NoError(t, err)
		a := attached(mon)
		a.mu.Lock()
		assert.Len(t, a.parents, 1, "the transform records the pet's parent")
		a.mu.Unlock()
	})
	a := attached(mon)
	<-a.ended
	a.mu.Lock()
	assert.Empty(t, a.parents)
	assert.Empty(t, a.firstChild)
	assert.Empty(t, a.byComponent)
	a.mu.Unlock()
	err = Attach(t.Context(), mon, Matching(nil), noop)
	require.ErrorIs(t, err, ErrNeverMatches)
	assert.Contains(t, err.Error(), "the engine has ended the deployment")
}
