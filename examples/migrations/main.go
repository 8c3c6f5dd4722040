// Command migrations is a Pulumi Go program whose RandomPet changed shape:
// version 1 of the program named its keeper "owner", version 2 names it
// "team". Keepers replace a pet when they change, so the program carries a
// state migration that renames the stored keeper before the engine
// compares the state with the program: the update after the upgrade
// changes nothing.
//
// The migration is a migrations.Chain, the shape Terraform's UpgradeState
// gives providers: the state's schema version is read from the state
// itself, and each upgrade takes it one version further. program.Migrations
// attaches it to the pet with the SDK's own StateMigrations option. It needs
// Pulumi 3.274.1 or later; an older engine stops the program with one line
// that says so.
//
// Under `pulumi up` it deploys version 2 (with the migration). Run with
// `go run` and no engine around, it deploys version 1 and then version 2 on
// the simulator from the enginetest package and prints what the engine did.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	if os.Getenv(monitor.EnvMonitor) != "" {
		pulumi.Run(deploy(2)) // under `pulumi up`
		return
	}
	if err := simulate(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "migrations:", err)
		os.Exit(1)
	}
}

// deploy is version v of the program: 1 names the pet's keeper "owner";
// 2 names it "team" and migrates the state of version 1.
func deploy(v int) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		var opts []pulumi.ResourceOption
		keeper := "owner"
		if v >= 2 {
			keeper = "team"
			upgrade, err := program.Migrations(ctx, keepers.Migrate)
			if err != nil {
				return err
			}
			opts = append(opts, upgrade)
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "pet", pulumi.Map{
			"length":  pulumi.Int(2),
			"keepers": pulumi.StringMap{keeper: pulumi.String("pets")},
		}, &pet, opts...)
	}
}

// keepers is the pet's state migration: schema version 0 stores the keeper
// "owner", version 1 stores "team". Run over state already at version 1,
// it changes nothing.
var keepers = &migrations.Chain{
	Version: func(r map[string]any) (int, error) {
		if k, _ := props(r, "inputs")["keepers"].(map[string]any); k["owner"] != nil {
			return 0, nil
		}
		return 1, nil
	},
	Upgrades: []migrations.Upgrade{
		func(_ context.Context, r map[string]any) error { // v0 → v1
			for _, which := range []string{"inputs", "outputs"} {
				if k, ok := props(r, which)["keepers"].(map[string]any); ok {
					k["team"] = k["owner"]
					delete(k, "owner")
				}
			}
			return nil
		},
	},
}

// props returns a resource's inputs or outputs from its checkpoint state.
func props(r map[string]any, which string) map[string]any {
	m, _ := r[which].(map[string]any)
	return m
}
