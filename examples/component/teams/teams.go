// Package teams is a component library in the Go SDK's shape. A Team is a
// component resource that groups the resources one team owns; the program
// creates those resources itself, with the team as their parent:
//
//	team, err := teams.NewTeam(ctx, "payments", &teams.TeamArgs{Lead: "ana"})
//	…
//	ctx.RegisterResource(typ, "payments-pet", inputs, &pet, pulumi.Parent(team))
//
// The library never sees them being built, yet changes each of them: NewTeam
// binds a transform and two hooks to the team's descendants
// (program.Descendants), which the program creates later. It takes no
// monitor parameter: it asks for the deployment's monitor itself
// (program.Monitor).
//
// What reaches each resource under a team:
//
//   - a transform that adds team=<team> and lead=<lead> to the resource's
//     keepers (every pulumi-random resource has that map);
//   - teams-naming, a hook before create: warns, under the resource, when its
//     name does not start with its team's name;
//   - teams-audit, a hook after create: reports which team now owns the
//     resource.
//
// Every team shares the two hooks (hooks.Shared), and every binding of the
// deployment shares one stack transform: the engine calls the program once
// per resource registered after the first team, however many teams there
// are.
package teams

import (
	"context"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// TeamType is the type token of the Team component.
const TeamType = "teams:index:Team"

// The names the library registers its hooks under.
const (
	NamingHook = "teams-naming"
	AuditHook  = "teams-audit"
)

// Team is a component resource that groups one team's resources.
type Team struct {
	pulumi.ResourceState

	// Lead is the team's lead, as given in TeamArgs.
	Lead pulumi.StringOutput `pulumi:"lead"`
}

// TeamArgs are a team's settings.
type TeamArgs struct {
	// Lead names who leads the team; it is added to the keepers of every
	// resource of the team.
	Lead string
}

// NewTeam registers a team and binds the library's transform and hooks to
// every resource registered from now on under it, at any depth. Create the
// team before its resources, as pulumi.Parent requires anyway.
func NewTeam(ctx *pulumi.Context, name string, args *TeamArgs, opts ...pulumi.ResourceOption) (*Team, error) {
	if args == nil {
		args = &TeamArgs{}
	}
	mon, err := program.Monitor(ctx)
	if err != nil {
		return nil, err
	}
	c := ctx.Context()
	// One hook per deployment, whichever team registers it first.
	naming, err := hooks.Register(c, mon, NamingHook, checkNaming, hooks.Shared())
	if err != nil {
		return nil, err
	}
	audit, err := hooks.Register(c, mon, AuditHook, reportOwner, hooks.Shared())
	if err != nil {
		return nil, err
	}

	team := &Team{}
	if err := ctx.RegisterComponentResource(TeamType, name, team, opts...); err != nil {
		return nil, err
	}
	members := program.Descendants(team)
	if err := transforms.Attach(c, mon, members, label(name, args.Lead)); err != nil {
		return nil, fmt.Errorf("teams: labelling the resources of team %s: %w", name, err)
	}
	err = hooks.Attach(c, mon, members, &transforms.HooksBinding{
		BeforeCreate: []transforms.HookRef{naming},
		AfterCreate:  []transforms.HookRef{audit},
	})
	if err != nil {
		return nil, fmt.Errorf("teams: binding the hooks of team %s: %w", name, err)
	}
	team.Lead = pulumi.String(args.Lead).ToStringOutput()
	if err := ctx.RegisterResourceOutputs(team, pulumi.Map{"lead": team.Lead}); err != nil {
		return nil, err
	}
	return team, nil
}

// label returns the transform that adds the team and its lead to a
// resource's keepers, keeping the keepers it has. Components have no
// keepers and are left alone.
func label(team, lead string) transforms.Func {
	return func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if !args.Custom {
			return nil, nil
		}
		return args.WithProperties(func(p resource.PropertyMap) {
			keepers := resource.PropertyMap{}
			if cur := p["keepers"]; cur.IsObject() {
				keepers = cur.ObjectValue().Copy()
			}
			keepers["team"] = resource.NewProperty(team)
			if lead != "" {
				keepers["lead"] = resource.NewProperty(lead)
			}
			p["keepers"] = resource.NewProperty(keepers)
		}), nil
	}
}

// teamOf returns the team a hooked resource belongs to, from the keepers
// the label transform gave it.
func teamOf(args *hooks.Args) string {
	keepers := args.NewInputs()["keepers"]
	if !keepers.IsObject() {
		return ""
	}
	if team := keepers.ObjectValue()["team"]; team.IsString() {
		return team.StringValue()
	}
	return ""
}

// checkNaming warns when a resource's name does not start with its team's.
// It is one hook for every team: the resource says which team it is in.
func checkNaming(ctx context.Context, args *hooks.Args) error {
	team := teamOf(args)
	if team != "" && !strings.HasPrefix(args.Name, team+"-") {
		callbacks.Warn(ctx, fmt.Sprintf("name %q does not start with %q, the name of its team", args.Name, team+"-"))
	}
	return nil
}

// reportOwner reports which team owns a resource that was just created.
func reportOwner(ctx context.Context, args *hooks.Args) error {
	if team := teamOf(args); team != "" {
		callbacks.Info(ctx, fmt.Sprintf("owned by team %s (id %s)", team, args.ID))
	}
	return nil
}
