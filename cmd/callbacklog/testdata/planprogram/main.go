// Command planprogram is a Pulumi program on the plain Go SDK whose
// resources bind hooks in their own registrations, in two versions chosen
// by the stack's configuration "version" (1 by default), so that a preview
// of version 2 after an update of version 1 sees a step of each kind:
// "changing" grows (update), "steady" stays (same), "renamed" changes its
// keepers (replace), "fresh" is new (create), "dropped" is gone (delete),
// and the component "box" stays. The hook "orphan" is bound to nothing.
// Every hook does nothing.
package main

import (
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		version := 1
		if v, ok := ctx.GetConfig(ctx.Project() + ":version"); ok && v == "2" {
			version = 2
		}
		noop := func(*pulumi.ResourceHookArgs) error { return nil }
		hook := func(name string) (*pulumi.ResourceHook, error) { return ctx.RegisterResourceHook(name, noop, nil) }
		create, err := hook("log-create")
		if err != nil {
			return err
		}
		update, err := hook("log-update")
		if err != nil {
			return err
		}
		del, err := hook("log-delete")
		if err != nil {
			return err
		}
		if _, err := hook("orphan"); err != nil {
			return err
		}
		bound := pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
			BeforeCreate: []*pulumi.ResourceHook{create}, AfterCreate: []*pulumi.ResourceHook{create},
			BeforeUpdate: []*pulumi.ResourceHook{update}, AfterUpdate: []*pulumi.ResourceHook{update, create},
			BeforeDelete: []*pulumi.ResourceHook{del},
		})
		pet := func(name string, inputs pulumi.Map) error {
			var res pulumi.CustomResourceState
			return ctx.RegisterResource(petType, name, inputs, &res, bound)
		}
		if err := pet("changing", pulumi.Map{"length": pulumi.Int(1 + version)}); err != nil {
			return err
		}
		if err := pet("steady", pulumi.Map{"length": pulumi.Int(2)}); err != nil {
			return err
		}
		gen := pulumi.String(strconv.Itoa(version))
		if err := pet("renamed", pulumi.Map{"keepers": pulumi.Map{"generation": gen}}); err != nil {
			return err
		}
		if version == 2 {
			if err := pet("fresh", pulumi.Map{"length": pulumi.Int(2)}); err != nil {
				return err
			}
		} else if err := pet("dropped", pulumi.Map{"length": pulumi.Int(2)}); err != nil {
			return err
		}
		var box pulumi.ResourceState
		if err := ctx.RegisterComponentResource("planprogram:index:Box", "box", &box, bound); err != nil {
			return err
		}
		return ctx.RegisterResourceOutputs(&box, pulumi.Map{})
	})
}
