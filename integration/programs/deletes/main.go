// Command deletes is a Pulumi program that declares the pets "keep" and
// "drop", or only "keep" when the stack's configuration says drop: true,
// with hooks before and after each pet's delete, bound with the SDK's own
// resource option (program.Hooks). The engine deletes a pet the program no
// longer declares only after the program has ended, so the hooks say
// whether the program's body had returned when they ran.
package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/langhost/callbacks/transforms"
	"sync/atomic"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
)

const petType = "random:index/randomPet:RandomPet"

// returned is set when the program's body returns.
var returned atomic.Bool

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		defer returned.Store(true)
		mon, err := program.Monitor(ctx) // serves the callbacks for as long as the deployment runs
		if err != nil {
			return err
		}
		return deploy(ctx, mon)
	})
}

func deploy(ctx *pulumi.Context, mon *monitor.Monitor) error {
	c := ctx.Context()
	report := func(name string) hooks.Func {
		return func(ctx context.Context, a *hooks.Args) error {
			when := "while the program's body ran"
			if returned.Load() {
				when = "after the program's body returned"
			}
			callbacks.Info(ctx, fmt.Sprintf("%s %s, %s", name, a.Name, when))
			return nil
		}
	}
	before, err1 := hooks.Register(c, mon, "before-delete", report("before-delete"))
	after, err2 := hooks.Register(c, mon, "after-delete", report("after-delete"))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	binding := program.Hooks(&transforms.HooksBinding{BeforeDelete: []transforms.HookRef{before}, AfterDelete: []transforms.HookRef{after}})
	names := []string{"keep", "drop"}
	if v, _ := ctx.GetConfig(ctx.Project() + ":drop"); v == "true" {
		names = names[:1]
	}
	for _, name := range names {
		var pet pulumi.CustomResourceState
		if err := ctx.RegisterResource(petType, name, pulumi.Map{"length": pulumi.Int(2)}, &pet, binding); err != nil {
			return err
		}
	}
	return nil
}
