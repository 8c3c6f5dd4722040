// Command kennels is a user's Pulumi program that constructs two Kennels,
// the remote component of examples/provider, and a pet of its own beside
// them. It is plain Go SDK code: the kennel provider's hook reaches the
// kennels' pets without the program knowing.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

const (
	kennelType = "kennel:index:Kennel"
	petType    = "random:index/randomPet:RandomPet"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		var north, south pulumi.ResourceState
		if err := ctx.RegisterRemoteComponentResource(kennelType, "north", pulumi.Map{"pets": pulumi.Int(2)}, &north); err != nil {
			return err
		}
		if err := ctx.RegisterRemoteComponentResource(kennelType, "south", pulumi.Map{"pets": pulumi.Int(1)}, &south); err != nil {
			return err
		}
		var stray pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "stray", pulumi.Map{"length": pulumi.Int(3)}, &stray,
			pulumi.DependsOn([]pulumi.Resource{&north, &south}))
	})
}
