package main

import (
	"context"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"

	"github.com/langhost/callbacks/transforms"
)

// deployOn runs the program against a simulated engine, as `pulumi up` would
// run it against the real one, and returns the deployment's result. The
// engine is closed when the test ends.
func deployOn(t *testing.T, opts ...enginetest.Option) (*enginetest.Engine, *enginetest.Result) {
	t.Helper()
	opts = append([]enginetest.Option{enginetest.WithProject("unittest"), enginetest.WithStack("test")}, opts...)
	engine := enginetest.New(t, opts...)
	res := engine.Run(t, func() error { return pulumi.RunErr(deploy) })
	// Err holds every failure, the deployment's reason first, then the
	// program's own error.
	require.NoError(t, res.Err, "the deployment failed:\n%s", engine.Trace())
	return engine, res
}

// tagsOf returns the tags a resource of the state ended with.
func tagsOf(t *testing.T, engine *enginetest.Engine, res *enginetest.Result, typ, name string) map[string]any {
	t.Helper()
	r := res.State.Get(engine.URN(engine.StackURN(), typ, name))
	require.NotNil(t, r, "%s is not in the state %v", name, res.State.URNs())
	return r.Inputs.GetFields()[tagKey].GetStructValue().AsMap()
}

// hookCalls returns the calls the engine made to the named hook, decoded as
// the hook received them.
func hookCalls(t *testing.T, engine *enginetest.Engine, name string) (called []*hooks.Args, skipped int) {
	t.Helper()
	for _, ev := range engine.Events(enginetest.KindHook) {
		if ev.Name != name {
			continue
		}
		require.Empty(t, ev.Err, "hook %s failed for %s", name, ev.URN)
		if ev.Detail == "skipped (dry run)" {
			skipped++
			continue
		}
		args, err := hooks.DecodeArgs(ev.Request.(*pulumirpc.ResourceHookRequest))
		require.NoError(t, err)
		called = append(called, args)
	}
	return called, skipped
}

func TestTheTransformTagsEveryResource(t *testing.T) {
	engine, res := deployOn(t)

	assert.Equal(t, map[string]any{"owner": Owner, "managed-by": "pulumi"},
		tagsOf(t, engine, res, petType, "app-name"))
	// The program's own owner is kept.
	assert.Equal(t, map[string]any{"owner": "data-team", "managed-by": "pulumi"},
		tagsOf(t, engine, res, stringType, "db-suffix"))

	// The transform changed the properties only: the engine kept the options.
	for _, ev := range engine.Events(enginetest.KindCallback) {
		if resp, ok := ev.Response.(*pulumirpc.TransformResponse); ok && resp.Properties != nil {
			assert.Nil(t, resp.Options, "the transform sent options for %s", ev.URN)
		}
	}
}

func TestEachHookRunsOnceWithTheTaggedInputs(t *testing.T) {
	engine, _ := deployOn(t)

	checks, _ := hookCalls(t, engine, checkHook)
	require.Len(t, checks, 2, "check-owner calls:\n%s", engine.Trace())
	byName := map[string]*hooks.Args{}
	for _, args := range checks {
		require.NotContains(t, byName, args.Name, "check-owner ran twice for %s", args.Name)
		byName[args.Name] = args
	}
	pet := byName["app-name"]
	require.NotNil(t, pet)
	assert.Equal(t, petType, pet.Type)
	assert.Empty(t, pet.ID, "before create, a resource has no ID yet")
	assert.Equal(t, 2.0, pet.NewInputs()["length"].NumberValue())
	assert.Equal(t, Owner, pet.NewInputs()[tagKey].ObjectValue()["owner"].StringValue(),
		"the hook sees the inputs after the transform")

	notified, _ := hookCalls(t, engine, notifyHook)
	require.Len(t, notified, 2)
	for _, args := range notified {
		assert.Equal(t, args.Name+"-id", string(args.ID), "after create, the hook gets the provider's ID")
	}
	var messages []string
	for _, d := range engine.Diagnostics() {
		messages = append(messages, d.Message)
	}
	assert.Contains(t, messages, "platform-team created app-name (id app-name-id)")
	assert.Contains(t, messages, "data-team created db-suffix (id db-suffix-id)")
}

func TestAPreviewRunsOnlyTheHookMarkedOnDryRun(t *testing.T) {
	engine, res := deployOn(t, enginetest.DryRun(true))

	checks, skipped := hookCalls(t, engine, checkHook)
	assert.Len(t, checks, 2, "check-owner is registered with OnDryRun: it runs in a preview")
	assert.Zero(t, skipped)

	notified, skipped := hookCalls(t, engine, notifyHook)
	assert.Empty(t, notified, "notify is not registered with OnDryRun: the engine skips it")
	assert.Equal(t, 2, skipped)

	// The preview's state still shows the tags the update would apply.
	assert.Equal(t, Owner, tagsOf(t, engine, res, petType, "app-name")["owner"])
}

// The functions are plain Go, so they can also be tested without an engine,
// with Args built from plain values.
func TestCheckOwnerRefusesAResourceWithoutOwner(t *testing.T) {
	urn := resource.URN("urn:pulumi:dev::shop::" + petType + "::stray")
	args := hooks.NewArgs(urn, "", hooks.State{Inputs: resource.PropertyMap{"length": resource.NewProperty(2.0)}}, hooks.State{})
	err := CheckOwner(context.Background(), args)
	assert.EqualError(t, err, "stray has no keepers, so no owner tag")
}

func TestOwnerTagsLeavesComponentsAlone(t *testing.T) {
	res, err := OwnerTags(Owner)(context.Background(), &transforms.Args{
		Type: "my:index:Component", Name: "c", Custom: false,
	})
	require.NoError(t, err)
	assert.Nil(t, res, "no change")
}
