// Command teams is a Pulumi program that uses the teams library of
// examples/component: it creates the number of teams the stack's
// configuration says (teams:count, 20 by default), two pets under each, and
// one pet in no team. The library binds a transform and two hooks to every
// team's descendants.
package main

import (
	"fmt"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/examples/component/teams"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		n := 20
		if v, ok := ctx.GetConfig(ctx.Project() + ":count"); ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				return fmt.Errorf("teams:count: %w", err)
			}
		}
		for i := range n {
			name := fmt.Sprintf("team%d", i)
			team, err := teams.NewTeam(ctx, name, &teams.TeamArgs{Lead: "lead" + strconv.Itoa(i)})
			if err != nil {
				return err
			}
			for _, member := range []string{name + "-pet", name + "-cat"} {
				var pet pulumi.CustomResourceState
				err := ctx.RegisterResource(petType, member, pulumi.Map{"length": pulumi.Int(2)}, &pet, pulumi.Parent(team))
				if err != nil {
					return err
				}
			}
		}
		var loose pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "loose", pulumi.Map{"length": pulumi.Int(2)}, &loose)
	})
}
