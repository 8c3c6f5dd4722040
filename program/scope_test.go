package program_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

const teamType = "test:index:Team"

// newTeam is a component library in the SDK's shape: it asks for the
// deployment's monitor itself, shares its hook between instances, and
// binds the hook and a transform to whatever the program puts under the
// team.
func newTeam(ctx *pulumi.Context, name string, opts ...pulumi.ResourceOption) (*pulumi.ResourceState, error) {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return nil, err
	}
	audit, err := hooks.Register(ctx.Context(), mon, "team-audit", func(context.Context, *hooks.Args) error { return nil }, hooks.Shared())
	if err != nil {
		return nil, err
	}
	team := &pulumi.ResourceState{}
	if err := ctx.RegisterComponentResource(teamType, name, team, opts...); err != nil {
		return nil, err
	}
	scope := program.Descendants(team)
	if err := hooks.Attach(ctx.Context(), mon, scope, &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}}); err != nil {
		return nil, err
	}
	err = transforms.Attach(ctx.Context(), mon, scope, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		return a.WithProperties(func(p resource.PropertyMap) { p["team"] = resource.NewProperty(name) }), nil
	})
	return team, err
}

// Descendants reaches what a program puts under a team (children and their
// children), in every instance, and nothing else; and all the bindings of
// the deployment cost one stack transform.
func TestDescendantsReachWhatTheProgramPutsUnderAComponent(t *testing.T) {
	eng := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"))
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			for _, name := range []string{"payments", "search"} {
				team, err := newTeam(ctx, name)
				if err != nil {
					return err
				}
				var member, part pulumi.CustomResourceState
				if err := ctx.RegisterResource("test:index:Thing", name+"-member", nil, &member, pulumi.Parent(team)); err != nil {
					return err
				}
				if err := ctx.RegisterResource("test:index:Thing", name+"-part", nil, &part, pulumi.Parent(&member)); err != nil {
					return err
				}
			}
			var loose pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "loose", nil, &loose)
		})
	})
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())

	audited := map[string]int{}
	for _, ev := range eng.Events(enginetest.KindHook) {
		audited[enginetest.URNName(ev.URN)]++
	}
	for _, team := range []string{"payments", "search"} {
		for _, name := range []string{team + "-member", team + "-part"} {
			var st *enginetest.ResourceState
			for _, r := range res.State.Resources {
				if r.Name == name {
					st = r
				}
			}
			require.NotNil(t, st, "%s is not in the state", name)
			assert.Equal(t, team, st.Inputs.GetFields()["team"].GetStringValue(), name)
			assert.Equal(t, 1, audited[name], "hook calls for %s", name)
		}
	}
	loose := res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "loose"))
	require.NotNil(t, loose)
	assert.NotContains(t, loose.Inputs.GetFields(), "team")
	assert.Zero(t, audited["loose"])
	assert.Zero(t, audited["payments"]+audited["search"], "the teams themselves are not their descendants")

	assert.Len(t, eng.Events("RegisterStackTransform"), 1, "four bindings, one stack transform")
	assert.Len(t, eng.Events("RegisterResourceHook"), 1, "one shared hook")
}

// A component that was never registered has no descendants: binding to it
// is refused when attached.
func TestDescendantsOfAnUnregisteredResource(t *testing.T) {
	eng := enginetest.New(t)
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			mon, err := program.Monitor(ctx)
			if err != nil {
				return err
			}
			err = hooks.Attach(ctx.Context(), mon, program.Descendants(&pulumi.ResourceState{}),
				&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{transforms.HookName("audit")}})
			if err == nil {
				return fmt.Errorf("attached to an unregistered resource")
			}
			assert.ErrorIs(t, err, transforms.ErrNeverMatches)
			assert.Contains(t, err.Error(), "not registered")
			return nil
		})
	})
	require.NoError(t, res.ProgramErr)
}
