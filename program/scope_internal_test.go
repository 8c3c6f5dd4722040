package program

import (
	"context"
	"errors"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingMocks creates resources at once, except "slow", which waits for
// release, and "bad", which fails.
type blockingMocks struct{ release chan struct{} }

func (m blockingMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	switch args.Name {
	case "slow":
		<-m.release
	case "bad":
		return "", nil, errors.New("the mock refuses it")
	}
	return args.Name + "-id", args.Inputs, nil
}

func (blockingMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) { return nil, nil }

// urnNow reads a resource's URN without waiting for it, through the SDK's
// exported UnsafeAwaitOutput given a context that is already done. This
// test pins what it relies on: for a pending output that call returns the
// context's error at once, for a resolved one its value, for a rejected one
// its error. It fails when an SDK upgrade changes any of that.
func TestURNNowReadsTheSDKsOutputs(t *testing.T) {
	m := blockingMocks{release: make(chan struct{})}
	var checked bool
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		var never pulumi.ResourceState
		_, err := urnNow(&never)
		require.ErrorIs(t, err, errNotRegistered, "a resource never registered has no URN output")

		var fast, slow, bad pulumi.ResourceState
		require.NoError(t, ctx.RegisterComponentResource("test:index:Team", "fast", &fast))
		require.NoError(t, ctx.RegisterComponentResource("test:index:Team", "slow", &slow))
		require.NoError(t, ctx.RegisterComponentResource("test:index:Team", "bad", &bad))

		_, err = internals.UnsafeAwaitOutput(context.Background(), fast.URN())
		require.NoError(t, err)
		urn, err := urnNow(&fast)
		require.NoError(t, err)
		assert.Equal(t, resource.URN("urn:pulumi:s::p::test:index:Team::fast"), urn)

		urn, err = urnNow(&slow)
		require.NoError(t, err, "a registration in flight is no error")
		assert.Empty(t, urn, "a registration in flight has no URN yet")
		close(m.release)
		_, err = internals.UnsafeAwaitOutput(context.Background(), slow.URN())
		require.NoError(t, err)
		urn, err = urnNow(&slow)
		require.NoError(t, err)
		assert.Equal(t, resource.URN("urn:pulumi:s::p::test:index:Team::slow"), urn)

		_, err = internals.UnsafeAwaitOutput(context.Background(), bad.URN())
		require.Error(t, err)
		_, err = urnNow(&bad)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "its registration failed")
		assert.Contains(t, err.Error(), "the mock refuses it")
		checked = true
		return nil
	}, pulumi.WithMocks("p", "s", m))
	require.True(t, checked, "the body did not run to the end: %v", err)
}
