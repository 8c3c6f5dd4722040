package main

import (
	"context"
	"errors"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx) // serves the callbacks for as long as the deployment runs
		if err != nil {
			return err
		}
		c := ctx.Context()
		// Tag every custom resource. No options in the result: the engine keeps them all.
		_, err1 := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if !a.Custom {
				return nil, nil
			}
			return a.WithProperties(func(p resource.PropertyMap) {
				p["keepers"] = resource.NewProperty(resource.PropertyMap{"team": resource.NewProperty("infra")})
			}), nil
		})
		audit, err2 := hooks.Register(c, mon, "audit", func(ctx context.Context, a *hooks.Args) error {
			callbacks.Info(ctx, "creating "+a.Name) // shows under the resource in `pulumi up`
			return nil
		})
		retry, err3 := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			return strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3, nil
		})
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource("random:index/randomPet:RandomPet", "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
			program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}, OnError: []transforms.HookRef{retry}}))
	})
}
