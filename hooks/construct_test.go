package hooks_test

import (
	"context"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
)

const (
	stackURN     = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
	componentURN = "urn:pulumi:dev::proj::teams:index:Team::payments"
)

func constructRequest(endpoint string) *pulumirpc.ConstructRequest {
	return &pulumirpc.ConstructRequest{MonitorEndpoint: endpoint, Project: "proj", Stack: "dev",
		Type: "teams:index:Team", Name: "payments", Parent: stackURN}
}

// Through a monitor opened for a Construct, Attach binds hooks to the
// component's descendants only, never to the program's own resources.
func TestAttachFromConstructBindsOnlyDescendants(t *testing.T) {
	t.Parallel()
	fake := fakeEngine(allFeatures...)
	mon, err := monitor.FromConstruct(constructRequest(monitortest.Listen(t, fake)), wiretest.Listen(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mon.Close() })
	urn, ok := mon.Component()
	require.True(t, ok)
	assert.Equal(t, componentURN, urn)

	cb, err := hooks.Attach(t.Context(), mon, nil, &hooks.Binding{AfterCreate: []hooks.Ref{hooks.Name("audit")}})
	require.NoError(t, err)

	bound := func(typ, name, parent string) bool {
		t.Helper()
		var res pulumirpc.TransformResponse
		require.NoError(t, wiretest.Call(t, cb, &pulumirpc.TransformRequest{Type: typ, Name: name, Parent: parent, Custom: true}, &res))
		return len(res.GetOptions().GetHooks().GetAfterCreate()) > 0
	}
	assert.False(t, bound("teams:index:Team", "payments", stackURN), "the component itself")
	assert.True(t, bound("aws:s3/bucket:Bucket", "logs", componentURN), "a child")
	assert.True(t, bound("aws:s3/bucketPolicy:BucketPolicy", "logs-policy",
		"urn:pulumi:dev::proj::teams:index:Team$aws:s3/bucket:Bucket::logs"), "a grandchild")
	assert.False(t, bound("aws:s3/bucket:Bucket", "users-own", stackURN), "the program's own resource")
	assert.False(t, bound("aws:s3/bucket:Bucket", "logs",
		"urn:pulumi:dev::proj::teams:index:Team::other-team"), "another instance's child")
}

// Transform hands out the binding transform for the component's own
// registration, which the engine scopes itself; nothing is registered as a
// stack transform.
func TestTransformIsNotAStackTransform(t *testing.T) {
	t.Parallel()
	fake := fakeEngine(allFeatures...)
	mon := monitortest.Serve(t, fake)
	cb, err := hooks.Transform(t.Context(), mon, nil, &hooks.Binding{BeforeCreate: []hooks.Ref{hooks.Name("check")}})
	require.NoError(t, err)
	_, _, stack := recorded(fake)
	assert.Empty(t, stack)
	var res pulumirpc.TransformResponse
	require.NoError(t, wiretest.Call(t, cb, &pulumirpc.TransformRequest{Type: "t:i:T", Name: "a", Parent: componentURN}, &res))
	assert.Equal(t, []string{"check"}, res.GetOptions().GetHooks().GetBeforeCreate())
}

// Each Construct of a deployment dials the same monitor: they share one hook
// name space, and a hook registered with Shared is registered once.
func TestSharedHookAcrossConstructs(t *testing.T) {
	t.Parallel()
	fake := fakeEngine(allFeatures...)
	addr := monitortest.Listen(t, fake)
	srv := wiretest.Listen(t)
	noop := func(context.Context, *hooks.Args) error { return nil }
	var first *hooks.Hook
	for i := range 2 {
		mon, err := monitor.FromConstruct(constructRequest(addr), srv)
		require.NoError(t, err)
		h, err := hooks.Register(t.Context(), mon, "audit", noop, hooks.Shared(), hooks.OnDryRun())
		require.NoError(t, err, "Construct %d", i+1)
		if first == nil {
			first = h
		}
		assert.Same(t, first, h, "the second Construct gets the hook already registered")
		got, ok := hooks.Lookup(mon, "audit")
		assert.True(t, ok)
		assert.Same(t, first, got)
		require.NoError(t, mon.Close())
	}
	hookReqs, _, _ := recorded(fake)
	assert.Len(t, hookReqs, 1, "the engine is asked once")
	assert.Equal(t, 1, srv.Registry().Len(), "one callback serves every instance")

	// Without Shared, or with other settings, the name stays taken.
	mon, err := monitor.FromConstruct(constructRequest(addr), srv)
	require.NoError(t, err)
	defer mon.Close()
	_, err = hooks.Register(t.Context(), mon, "audit", noop)
	assert.ErrorIs(t, err, hooks.ErrNameTaken)
	_, err = hooks.Register(t.Context(), mon, "audit", noop, hooks.Shared())
	assert.ErrorIs(t, err, hooks.ErrNameTaken, "different settings (OnDryRun) do not share")
	_, err = hooks.RegisterErrorHook(t.Context(), mon, "audit",
		func(context.Context, *hooks.ErrorArgs) (bool, error) { return false, nil }, hooks.Shared())
	assert.ErrorIs(t, err, hooks.ErrNameTaken, "a resource hook is not an error hook")
}
