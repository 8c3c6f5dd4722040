// Command hooks is a Pulumi program with a hook at each of the six points of
// a resource's life, bound to one RandomPet whose length comes from the
// stack's configuration (default 2), so that changing it updates the pet.
// Each hook reports under the pet that it ran. The hooks before create,
// after update and before delete run in previews too (hooks.OnDryRun).
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
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
	register := func(name string, dryRun bool) (*hooks.Hook, error) {
		var opts []hooks.ResourceOption
		if dryRun {
			opts = append(opts, hooks.OnDryRun())
		}
		return hooks.Register(c, mon, name, func(ctx context.Context, a *hooks.Args) error {
			callbacks.Info(ctx, fmt.Sprintf("%s: %s", name, describe(a)))
			return nil
		}, opts...)
	}
	beforeCreate, err1 := register("before-create", true)
	afterCreate, err2 := register("after-create", false)
	beforeUpdate, err3 := register("before-update", false)
	afterUpdate, err4 := register("after-update", true)
	beforeDelete, err5 := register("before-delete", true)
	afterDelete, err6 := register("after-delete", false)
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	err := hooks.Attach(c, mon, transforms.Matching(func(a *transforms.Args) bool { return a.Type == petType }), &transforms.HooksBinding{
		BeforeCreate: []transforms.HookRef{beforeCreate}, AfterCreate: []transforms.HookRef{afterCreate},
		BeforeUpdate: []transforms.HookRef{beforeUpdate}, AfterUpdate: []transforms.HookRef{afterUpdate},
		BeforeDelete: []transforms.HookRef{beforeDelete}, AfterDelete: []transforms.HookRef{afterDelete},
	})
	if err != nil {
		return err
	}
	length := 2
	if v, ok := ctx.GetConfig(ctx.Project() + ":length"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("config length: %w", err)
		}
		length = n
	}
	var pet pulumi.CustomResourceState
	return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(length)}, &pet)
}

// describe says what a hook was told: the pet's ID and its length before and
// after, where the hook's point carries them.
func describe(a *hooks.Args) string {
	s := fmt.Sprintf("id %q", a.ID)
	if old := a.OldInputs(); old != nil {
		s += fmt.Sprintf(", length was %v", old["length"].V)
	}
	if in := a.NewInputs(); in != nil {
		s += fmt.Sprintf(", length is %v", in["length"].V)
	}
	return s
}
