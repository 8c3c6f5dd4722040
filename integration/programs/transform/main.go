// Command transform is a Pulumi program with a stack transform that gives
// every RandomPet the prefix "tx" and reports each call under the resource.
package main

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx) // serves the callbacks for as long as the deployment runs
		if err != nil {
			return err
		}
		return deploy(ctx, mon)
	})
}

func deploy(ctx *pulumi.Context, mon *monitor.Monitor) error {
	_, err := transforms.RegisterStack(ctx.Context(), mon, func(ctx context.Context, a *transforms.Args) (*transforms.Result, error) {
		if a.Type != petType {
			return nil, nil
		}
		callbacks.Info(ctx, "transforming "+a.Name)
		return a.WithProperties(func(p resource.PropertyMap) {
			p["prefix"] = resource.NewProperty("tx")
		}), nil
	})
	if err != nil {
		return err
	}
	var pet pulumi.CustomResourceState
	if err := ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet); err != nil {
		return err
	}
	ctx.Export("pet", pet.ID())
	return nil
}
