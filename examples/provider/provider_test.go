package main

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
)

// startKennel runs the provider against eng the way the engine runs a
// component provider: eng's remote components are built by the kennel's
// Construct, with a ConstructRequest naming eng's monitor. The callback
// server shuts down when the test ends, after the engine.
func startKennel(t *testing.T, opts ...enginetest.Option) (*enginetest.Engine, *Kennel) {
	t.Helper()
	var kennel *Kennel
	var eng *enginetest.Engine
	construct := func(ctx context.Context, req *enginetest.ConstructRequest) (*enginetest.ConstructResponse, error) {
		resp, err := kennel.Construct(ctx, &pulumirpc.ConstructRequest{
			Project:         eng.Project(),
			Stack:           eng.Stack(),
			DryRun:          eng.DryRun(),
			MonitorEndpoint: eng.MonitorAddr(),
			Type:            req.Type,
			Name:            req.Name,
			Parent:          req.Parent,
			Inputs:          req.Inputs,
		})
		if err != nil {
			return nil, err
		}
		return &enginetest.ConstructResponse{URN: resp.GetUrn(), State: resp.GetState()}, nil
	}
	opts = append([]enginetest.Option{
		enginetest.WithProject("kennels"), enginetest.WithStack("dev"),
		enginetest.WithProvider(&enginetest.FakeProvider{OnConstruct: construct}),
	}, opts...)
	eng = enginetest.New(t, opts...)

	conn, err := grpc.NewClient(eng.EngineAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	kennel, err = NewKennel(conn, callbacks.EngineAddress(eng.EngineAddr()))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, kennel.Shutdown(shutdownTimeout))
		assert.NoError(t, conn.Close())
	})
	return eng, kennel
}

// twoKennelsAndAStray is a user's program: two kennels, then a pet of its
// own outside both.
func twoKennelsAndAStray(ctx *pulumi.Context) error {
	return kennelsAndAStray(ctx)
}

// kennelsAndAStray is twoKennelsAndAStray with opts given to both kennels.
func kennelsAndAStray(ctx *pulumi.Context, opts ...pulumi.ResourceOption) error {
	var north, south pulumi.ResourceState
	if err := ctx.RegisterRemoteComponentResource(KennelType, "north", pulumi.Map{"pets": pulumi.Int(2)}, &north, opts...); err != nil {
		return err
	}
	if err := ctx.RegisterRemoteComponentResource(KennelType, "south", pulumi.Map{"pets": pulumi.Int(1)}, &south, opts...); err != nil {
		return err
	}
	var stray pulumi.CustomResourceState
	return ctx.RegisterResource(PetType, "stray", pulumi.Map{"length": pulumi.Int(3)}, &stray,
		pulumi.DependsOn([]pulumi.Resource{&north, &south}))
}

// The kennel's transform and hook reach its own pets, in both kennels, and
// nothing else: the user's stray pet keeps its inputs and gets no hook.
func TestKennelBindsItsCallbacksToItsOwnChildren(t *testing.T) {
	eng, kennel := startKennel(t)
	res := eng.Run(t, func() error { return pulumi.RunErr(twoKennelsAndAStray) })
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())

	kennelOf := map[string]string{"north-pet-1": "north", "north-pet-2": "north", "south-pet-1": "south"}
	audited := map[string]int{}
	for _, ev := range eng.Events(enginetest.KindHook) {
		assert.Equal(t, AuditHook, ev.Name)
		assert.Empty(t, ev.Err)
		audited[enginetest.URNName(ev.URN)]++
	}
	for pet, kennel := range kennelOf {
		parent := eng.URN(eng.StackURN(), KennelType, kennel)
		st := res.State.Get(eng.URN(parent, PetType, pet))
		if assert.NotNil(t, st, "%s is not in the state: %v", pet, res.State.URNs()) {
			assert.Equal(t, kennel, st.Inputs.GetFields()["keepers"].GetStructValue().GetFields()["kennel"].GetStringValue(), pet)
		}
		assert.Equal(t, 1, audited[pet], "audit hook calls for %s", pet)
	}

	strayURN := eng.URN(eng.StackURN(), PetType, "stray")
	stray := res.State.Get(strayURN)
	require.NotNil(t, stray)
	assert.NotContains(t, stray.Inputs.GetFields(), "keepers", "the kennel's transform changed the user's pet")
	assert.Zero(t, audited["stray"], "the kennel's hook ran for the user's pet")
	// The kennel's transforms are in each kennel's own registration, so the
	// engine sends the provider's callback server nothing about the stray.
	// It asks both transforms about each kennel and each of its pets, and
	// the hook about each pet.
	answered := map[string]int{}
	for _, ev := range eng.Events(enginetest.KindCallback, enginetest.KindHook, enginetest.KindErrorHook) {
		if ev.Target == kennel.srv.Target() {
			answered[enginetest.URNName(ev.URN)]++
		}
	}
	assert.Zero(t, answered["stray"], "calls the provider's server answered about the user's pet")
	for pet := range kennelOf {
		assert.Equal(t, 3, answered[pet], "calls the provider's server answered about %s", pet)
	}
	assert.Equal(t, 2, answered["north"], "transform calls about the north kennel itself")
	assert.Equal(t, 2, answered["south"], "transform calls about the south kennel itself")

	// One hook name, registered with the engine once for the two Constructs.
	assert.Len(t, eng.Events(enginetest.KindRegisterResourceHook), 1)
}

// When the user's program gives the Kennels transforms of their own, the
// engine uses those for the component's registration in place of the
// kennel's: the kennel notices that its transforms were not applied to the
// component and binds through stack transforms instead. The label and the
// hook still reach the Kennels' pets and nothing else.
func TestKennelBindsWhenTheProgramGivesTheKennelTransforms(t *testing.T) {
	eng, kennel := startKennel(t)
	var seenByUser atomic.Int32
	userTransform := func(context.Context, *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		seenByUser.Add(1)
		return nil
	}
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			return kennelsAndAStray(ctx, pulumi.Transforms([]pulumi.ResourceTransform{userTransform}))
		})
	})
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())
	// The user's transform ran on the kennels and their pets.
	assert.Positive(t, seenByUser.Load())

	audited := map[string]int{}
	for _, ev := range eng.Events(enginetest.KindHook) {
		audited[enginetest.URNName(ev.URN)]++
	}
	for pet, kennelName := range map[string]string{"north-pet-1": "north", "north-pet-2": "north", "south-pet-1": "south"} {
		parent := eng.URN(eng.StackURN(), KennelType, kennelName)
		st := res.State.Get(eng.URN(parent, PetType, pet))
		if assert.NotNil(t, st, "%s is not in the state: %v", pet, res.State.URNs()) {
			assert.Equal(t, kennelName, st.Inputs.GetFields()["keepers"].GetStructValue().GetFields()["kennel"].GetStringValue(), pet)
		}
		assert.Equal(t, 1, audited[pet], "audit hook calls for %s", pet)
	}
	stray := res.State.Get(eng.URN(eng.StackURN(), PetType, "stray"))
	require.NotNil(t, stray)
	assert.NotContains(t, stray.Inputs.GetFields(), "keepers", "the kennel's transform changed the user's pet")
	assert.Zero(t, audited["stray"], "the kennel's hook ran for the user's pet")
	// Bound through stack transforms, the kennel is asked about the stray.
	asked := 0
	for _, ev := range eng.Events(enginetest.KindCallback) {
		if ev.Target == kennel.srv.Target() && enginetest.URNName(ev.URN) == "stray" {
			asked++
		}
	}
	assert.Positive(t, asked, "the fallback did not go through stack transforms")
}
