// Package teams is a component library. A Team is a component resource that
// groups the resources one team owns; the program creates those resources
// itself, with the team as their parent. The library never sees them being
// built, yet binds its hooks to each of them: NewTeam attaches the hooks,
// through a stack transform, to every resource registered afterwards whose
// parent is that team.
//
// The hooks:
//
//   - teams-naming, before create: warns, under the resource, when its name
//     does not start with the team's name;
//   - teams-audit, after create: reports which team now owns the resource.
package teams

import (
	"context"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// TeamType is the type token of the Team component.
const TeamType = "teams:index:Team"

// The names the library registers its hooks under.
const (
	NamingHook = "teams-naming"
	AuditHook  = "teams-audit"
)

// Library is the registered hooks of the package, for one deployment.
type Library struct {
	mon    *monitor.Monitor
	naming *hooks.Hook
	audit  *hooks.Hook
}

// New registers the library's hooks with the engine through mon, served by
// srv. If they are registered already (another part of the program called
// New), it finds them with hooks.Lookup instead: a hook name can be
// registered once per deployment.
func New(ctx context.Context, mon *monitor.Monitor) (*Library, error) {
	naming, err := lookupOrRegister(ctx, mon, NamingHook, checkNaming)
	if err != nil {
		return nil, err
	}
	audit, err := lookupOrRegister(ctx, mon, AuditHook, reportOwner)
	if err != nil {
		return nil, err
	}
	return &Library{mon: mon, naming: naming, audit: audit}, nil
}

func lookupOrRegister(ctx context.Context, mon *monitor.Monitor, name string, fn hooks.Func) (*hooks.Hook, error) {
	if h, ok := hooks.Lookup(mon, name); ok {
		return h, nil
	}
	return hooks.Register(ctx, mon, name, fn)
}

// Team is a component resource that groups one team's resources.
type Team struct {
	pulumi.ResourceState

	// Name is the team's name, which is also the component's name.
	Name string
}

// NewTeam registers a team and binds the library's hooks to every resource
// registered from now on with the team as its parent. Create the team before
// its resources: the engine applies stack transforms only to resources
// registered after them.
func (l *Library) NewTeam(ctx *pulumi.Context, name string, opts ...pulumi.ResourceOption) (*Team, error) {
	team := &Team{Name: name}
	if err := ctx.RegisterComponentResource(TeamType, name, team, opts...); err != nil {
		return nil, err
	}
	_, err := hooks.Attach(ctx.Context(), l.mon, ChildrenOf(name), &hooks.Binding{
		BeforeCreate: []hooks.Ref{l.naming},
		AfterCreate:  []hooks.Ref{l.audit},
	}, callbacks.Name("teams-attach-"+name))
	if err != nil {
		return nil, fmt.Errorf("teams: binding the hooks of team %s: %w", name, err)
	}
	if err := ctx.RegisterResourceOutputs(team, pulumi.Map{"team": pulumi.String(name)}); err != nil {
		return nil, err
	}
	return team, nil
}

// ChildrenOf selects the resources whose parent is the team called name.
func ChildrenOf(name string) hooks.Selector {
	return func(args *transforms.Args) bool {
		p := args.Parent
		return p.IsValid() && string(p.Type()) == TeamType && p.Name() == name
	}
}

// teamOf returns the name of the team a hooked resource belongs to, from the
// options the engine sends to hooks.
func teamOf(args *hooks.Args) string {
	opts := args.NewOptions()
	if opts == nil {
		return "" // an engine that does not send options to hooks
	}
	parent := opts.Parent
	if !parent.IsValid() || string(parent.Type()) != TeamType {
		return ""
	}
	return parent.Name()
}

// checkNaming warns when a resource's name does not start with its team's.
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
