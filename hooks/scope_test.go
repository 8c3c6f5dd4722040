package hooks_test

import (
	"context"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
)

const (
	stackURN     = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"
	componentURN = "urn:pulumi:dev::proj::teams:index:Team::payments"
)

// Attached to the descendants of a component, hooks reach the component's
// children and their children, never the component itself, the program's
// own resources or another instance's children.
func TestAttachToDescendantsBindsOnlyThem(t *testing.T) {
	t.Parallel()
	fake := fakeEngine(allFeatures...)
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), wiretest.Listen(t))
	require.NoError(t, hooks.Attach(t.Context(), mon, transforms.Descendants(componentURN),
		&transforms.HooksBinding{AfterCreate: []transforms.HookRef{transforms.HookName("audit")}}))
	cb := attached(t, fake)

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

// Every monitor of a deployment (every instance of a component, in a
// program or in a provider's Constructs) shares one hook name space, and a
// hook registered with Shared is registered once.
func TestSharedHookAcrossInstances(t *testing.T) {
	t.Parallel()
	fake := fakeEngine(allFeatures...)
	addr := monitortest.Listen(t, fake)
	srv := wiretest.Listen(t)
	noop := func(context.Context, *hooks.Args) error { return nil }
	var first *hooks.Hook
	for i := range 2 {
		mon, err := monitor.Dial(addr, srv)
		require.NoError(t, err)
		h, err := hooks.Register(t.Context(), mon, "audit", noop, hooks.Shared(), hooks.OnDryRun())
		require.NoError(t, err, "instance %d", i+1)
		if first == nil {
			first = h
		}
		assert.Same(t, first, h, "the second instance gets the hook already registered")
	}
	hookReqs, _, _ := recorded(fake)
	assert.Len(t, hookReqs, 1, "the engine is asked once")
	assert.Equal(t, 1, srv.Registry().Len(), "one callback serves every instance")

	// Without Shared, or with other settings, the name stays taken.
	mon, err := monitor.Dial(addr, srv)
	require.NoError(t, err)
	_, err = hooks.Register(t.Context(), mon, "audit", noop)
	assert.ErrorIs(t, err, hooks.ErrNameTaken)
	_, err = hooks.Register(t.Context(), mon, "audit", noop, hooks.Shared())
	assert.ErrorIs(t, err, hooks.ErrNameTaken, "different settings (OnDryRun) do not share")
	_, err = hooks.RegisterErrorHook(t.Context(), mon, "audit",
		func(context.Context, *hooks.ErrorArgs) (bool, error) { return false, nil }, hooks.Shared())
	assert.ErrorIs(t, err, hooks.ErrNameTaken, "a resource hook is not an error hook")
}
