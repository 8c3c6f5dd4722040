package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// startKennel plays the engine running the kennel provider: the
// simulator's remote components are built by the SDK's provider.Construct
// (what provider.ComponentMain runs for each Construct request) with the
// provider's Construct, a ConstructRequest naming the simulator's monitor,
// and a connection to the simulator's engine service.
func startKennel(t *testing.T, opts ...enginetest.Option) *enginetest.Engine {
	t.Helper()
	var eng *enginetest.Engine
	var engineConn *grpc.ClientConn
	construct := func(ctx context.Context, req *enginetest.ConstructRequest) (*enginetest.ConstructResponse, error) {
		resp, err := provider.Construct(ctx, &pulumirpc.ConstructRequest{
			Project:         eng.Project(),
			Stack:           eng.Stack(),
			DryRun:          eng.DryRun(),
			MonitorEndpoint: eng.MonitorAddr(),
			Type:            req.Type,
			Name:            req.Name,
			Parent:          req.Parent,
			Inputs:          req.Inputs,
		}, engineConn, Construct)
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
	var err error
	engineConn, err = grpc.NewClient(eng.EngineAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = engineConn.Close() })
	return eng
}

// kennelsAndAStray is a user's program: two kennels, given opts, then a pet
// of its own outside both.
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

// kennelOf says which kennel each pet is in.
var kennelOf = map[string]string{"north-pet-1": "north", "north-pet-2": "north", "south-pet-1": "south"}

// checkPets asserts that every pet is in the state with its kennel's label,
// was audited once, and has its admission under it; and that the user's
// stray is untouched and unaudited.
func checkPets(t *testing.T, eng *enginetest.Engine, res *enginetest.Result) {
	t.Helper()
	audited := map[string]int{}
	for _, ev := range eng.Events(enginetest.KindHook) {
		assert.Equal(t, AuditHook, ev.Name)
		assert.Empty(t, ev.Err)
		audited[enginetest.URNName(ev.URN)]++
	}
	admitted := map[string]string{}
	for _, d := range res.Diagnostics {
		if d.FromProgram && d.Severity == "info" {
			admitted[enginetest.URNName(d.URN)] = d.Message
		}
	}
	for pet, kennel := range kennelOf {
		parent := eng.URN(eng.StackURN(), KennelType, kennel)
		st := res.State.Get(eng.URN(parent, PetType, pet))
		if assert.NotNil(t, st, "%s is not in the state: %v", pet, res.State.URNs()) {
			assert.Equal(t, kennel, st.Inputs.GetFields()["keepers"].GetStructValue().GetFields()["kennel"].GetStringValue(), pet)
		}
		assert.Equal(t, 1, audited[pet], "audit hook calls for %s", pet)
		// callbacks.Info from the provider's hook reached the engine,
		// under the pet.
		assert.Equal(t, pet+" admitted to kennel "+kennel, admitted[pet])
	}

	stray := res.State.Get(eng.URN(eng.StackURN(), PetType, "stray"))
	require.NotNil(t, stray)
	assert.NotContains(t, stray.Inputs.GetFields(), "keepers", "the kennel changed the user's pet")
	assert.Zero(t, audited["stray"], "the kennel's hook ran for the user's pet")
	assert.NotContains(t, admitted, "stray")
}

// The kennel's hook reaches its own pets, in both kennels, and nothing else,
// and the engine never calls the provider about the user's stray pet: the
// hook is bound in each pet's own registration, and the provider registers
// no transform at all.
func TestKennelBindsItsHookToItsOwnPets(t *testing.T) {
	eng := startKennel(t)
	res := eng.Run(t, func() error { return pulumi.RunErr(func(ctx *pulumi.Context) error { return kennelsAndAStray(ctx) }) })
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())
	checkPets(t, eng, res)

	for _, ev := range eng.Events(enginetest.KindCallback, enginetest.KindHook, enginetest.KindErrorHook) {
		assert.NotEqual(t, "stray", enginetest.URNName(ev.URN), "a call about the user's pet: %s", ev)
	}
	assert.Empty(t, eng.Events(enginetest.KindCallback), "no transform is called: the provider registers none")
	assert.Empty(t, eng.Events("RegisterStackTransform"))
	// One hook name, registered with the engine once for the two kennels.
	assert.Len(t, eng.Events("RegisterResourceHook"), 1)
}

// When the user's program gives the Kennels transforms of its own, the
// engine applies them to the kennels' pets too (a component's transforms
// reach its children); the kennel's hook and labels are unaffected.
func TestKennelWithTheProgramsOwnTransforms(t *testing.T) {
	eng := startKennel(t)
	var seenByUser atomic.Int32
	userTransform := func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if strings.Contains(args.Name, "-pet-") {
			seenByUser.Add(1)
		}
		return nil
	}
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			return kennelsAndAStray(ctx, pulumi.Transforms([]pulumi.ResourceTransform{userTransform}))
		})
	})
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())
	checkPets(t, eng, res)
	assert.Positive(t, seenByUser.Load(), "the user's transform did not reach the pets")
}

// A program can bind to what it puts under a Kennel with
// program.Descendants: its own pet under the kennel gets the binding. The
// kennel's pets, which the provider registers while the program still
// waits for the kennel's URN, do not.
func TestProgramBindsToWhatItPutsUnderAKennel(t *testing.T) {
	eng := startKennel(t)
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			mon, err := program.Monitor(ctx)
			if err != nil {
				return err
			}
			var north pulumi.ResourceState
			if err := ctx.RegisterRemoteComponentResource(KennelType, "north", pulumi.Map{"pets": pulumi.Int(1)}, &north); err != nil {
				return err
			}
			err = transforms.Attach(ctx.Context(), mon, program.Descendants(&north),
				func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
					return a.WithProperties(func(p resource.PropertyMap) { p["prefix"] = resource.NewProperty("mine") }), nil
				})
			if err != nil {
				return err
			}
			var visitor pulumi.CustomResourceState
			return ctx.RegisterResource(PetType, "visitor", pulumi.Map{"length": pulumi.Int(1)}, &visitor, pulumi.Parent(&north))
		})
	})
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())
	north := eng.URN(eng.StackURN(), KennelType, "north")
	visitor := res.State.Get(eng.URN(north, PetType, "visitor"))
	require.NotNil(t, visitor, "%v", res.State.URNs())
	assert.Equal(t, "mine", visitor.Inputs.GetFields()["prefix"].GetStringValue(), "the program's own pet under the kennel")
	pet := res.State.Get(eng.URN(north, PetType, "north-pet-1"))
	require.NotNil(t, pet)
	assert.NotContains(t, pet.Inputs.GetFields(), "prefix", "the provider's pet, registered before the kennel's URN was known")
}
