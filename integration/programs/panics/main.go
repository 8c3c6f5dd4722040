// Command panics is a Pulumi program whose callback panics: a stack
// transform, or a hook before the pet's create, as the stack's
// configuration "panic" says ("transform" or "hook").
package main

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/hooks"
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
	c := ctx.Context()
	which, _ := ctx.GetConfig(ctx.Project() + ":panic")
	switch which {
	case "transform":
		_, err := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if a.Type == petType {
				panic("the transform exploded on " + a.Name)
			}
			return nil, nil
		})
		if err != nil {
			return err
		}
	case "hook":
		boom, err := hooks.Register(c, mon, "boom", func(_ context.Context, a *hooks.Args) error {
			panic("the hook exploded on " + a.Name)
		})
		if err != nil {
			return err
		}
		err = hooks.Attach(c, mon, transforms.Matching(transforms.ByType(petType)), &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{boom}})
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("config panic: want transform or hook, got %q", which)
	}
	var pet pulumi.CustomResourceState
	return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet)
}
