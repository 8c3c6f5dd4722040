package program_test

import (
	"context"
	"errors"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// A program that tags every custom resource it creates. It runs under the
// SDK's own pulumi.Run; Monitor serves its callbacks for as long as the
// deployment runs, and nothing is left to call at the end.
func ExampleMonitor() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		tag := func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if !a.Custom {
				return nil, nil
			}
			return a.WithProperties(func(p resource.PropertyMap) {
				p["tags"] = resource.NewProperty(resource.PropertyMap{"team": resource.NewProperty("infra")})
			}), nil
		}
		if _, err := transforms.RegisterStack(ctx.Context(), mon, tag, callbacks.Name("tag")); err != nil {
			return err
		}
		var bucket pulumi.CustomResourceState
		return ctx.RegisterResource("aws:s3/bucket:Bucket", "logs", nil, &bucket)
	})
}

// Code that cannot know whether its Monitor call is the deployment's first,
// such as a component provider's Construct, which the engine may call for
// several components at once, gives its server options and, if another
// call started the server first, takes the Monitor that call configured.
func ExampleMonitor_options() {
	monitorFor := func(ctx *pulumi.Context) (*monitor.Monitor, error) {
		mon, err := program.Monitor(ctx, callbacks.KindTimeout(callbacks.KindResourceHook, 2*time.Minute))
		if errors.Is(err, program.ErrStarted) {
			return program.Monitor(ctx) // started already, with the options of its first call
		}
		return mon, err
	}
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := monitorFor(ctx)
		if err != nil {
			return err
		}
		_, err = hooks.Register(ctx.Context(), mon, "audit", func(context.Context, *hooks.Args) error { return nil })
		return err
	})
}

// Team is a component of a library in the SDK's shape.
type Team struct {
	pulumi.ResourceState
}

// NewTeam registers a team and binds the library's hook to every resource
// the program puts under it. The library asks for the deployment's monitor
// itself, and registers its hook with hooks.Shared, so every team shares it.
func NewTeam(ctx *pulumi.Context, name string, opts ...pulumi.ResourceOption) (*Team, error) {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return nil, err
	}
	audit, err := hooks.Register(ctx.Context(), mon, "team-audit", func(ctx context.Context, a *hooks.Args) error {
		callbacks.Info(ctx, "creating "+a.Name+" for its team")
		return nil
	}, hooks.Shared())
	if err != nil {
		return nil, err
	}
	team := &Team{}
	if err := ctx.RegisterComponentResource("teams:index:Team", name, team, opts...); err != nil {
		return nil, err
	}
	err = hooks.Attach(ctx.Context(), mon, program.Descendants(team), &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}})
	if err != nil {
		return nil, err
	}
	return team, ctx.RegisterResourceOutputs(team, pulumi.Map{})
}

// A component library binds its hooks to the resources a program creates
// under its component, with pulumi.Parent, and to nothing else.
func ExampleDescendants() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		team, err := NewTeam(ctx, "payments")
		if err != nil {
			return err
		}
		var ledger, scratch pulumi.CustomResourceState
		if err := ctx.RegisterResource("aws:s3/bucket:Bucket", "ledger", nil, &ledger, pulumi.Parent(team)); err != nil {
			return err // ledger gets the team's hook
		}
		return ctx.RegisterResource("aws:s3/bucket:Bucket", "scratch", nil, &scratch) // scratch does not
	})
}

// Hooks this module registered bind to a resource the SDK creates through
// Hooks, the SDK's own pulumi.ResourceHooks option: no transform involved.
func ExampleHooks() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		audit, err := hooks.Register(ctx.Context(), mon, "audit", func(ctx context.Context, a *hooks.Args) error {
			callbacks.Info(ctx, "creating "+a.Name)
			return nil
		})
		if err != nil {
			return err
		}
		var bucket pulumi.CustomResourceState
		return ctx.RegisterResource("aws:s3/bucket:Bucket", "logs", nil, &bucket,
			program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}}))
	})
}
