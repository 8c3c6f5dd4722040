// Package app is the body of programs/replay, importable so that a test can
// replay a log of the program against it: two pets, "pet" and then "other",
// which depends on it; a stack transform that sets a RandomPet's prefix; a
// hook "audit" that refuses to create the pet the configuration "refuse"
// names; an error hook "retry" that retries a throttled create (up to the
// third attempt); and, when the configuration "stage" is "v1", a state
// migration that renames the pets' keeper "owner" to "team".
package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// PetType is the type of the program's two pets, "pet" and "other".
const PetType = "random:index/randomPet:RandomPet"

// Prefix is the prefix the program's stack transform gives the pets.
const Prefix = "tx"

// ownerToTeam renames the keeper "owner" to "team" in the stored inputs
// and outputs.
var ownerToTeam = &migrations.Chain{
	Version: func(r map[string]any) (int, error) {
		inputs, _ := r["inputs"].(map[string]any)
		if keepers, _ := inputs["keepers"].(map[string]any); keepers["owner"] != nil {
			return 0, nil
		}
		return 1, nil
	},
	Upgrades: []migrations.Upgrade{func(_ context.Context, r map[string]any) error {
		for _, k := range []string{"inputs", "outputs"} {
			props, _ := r[k].(map[string]any)
			if keepers, ok := props["keepers"].(map[string]any); ok {
				keepers["team"] = keepers["owner"]
				delete(keepers, "owner")
			}
		}
		return nil
	}},
}

// Program returns the program's body, whose stack transform sets the
// prefix prefix.
func Program(prefix string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		c := ctx.Context()
		_, err1 := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if a.Type != PetType {
				return nil, nil
			}
			return a.WithProperties(func(p resource.PropertyMap) { p["prefix"] = resource.NewProperty(prefix) }), nil
		})
		refuse, _ := ctx.GetConfig(ctx.Project() + ":refuse")
		audit, err2 := hooks.Register(c, mon, "audit", func(_ context.Context, a *hooks.Args) error {
			if a.Name == refuse {
				return fmt.Errorf("%s may not be created: the configuration refuses it", a.Name)
			}
			return nil
		})
		retry, err3 := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			return strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3, nil
		})
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		opts := []pulumi.ResourceOption{program.Hooks(&transforms.HooksBinding{
			BeforeCreate: []transforms.HookRef{audit}, OnError: []transforms.HookRef{retry},
		})}
		keeper := "owner"
		if stage, _ := ctx.GetConfig(ctx.Project() + ":stage"); stage == "v1" {
			upgrade, err := program.Migrations(ctx, ownerToTeam.Migrate)
			if err != nil {
				return err
			}
			keeper, opts = "team", append(opts, upgrade)
		}
		// other depends on pet, so the SDK registers it only once pet's
		// registration is done: without that, the two would reach the
		// engine in either order, and a refusal of other could end the
		// deployment before pet's step ran.
		var pet pulumi.CustomResourceState
		if err := ctx.RegisterResource(PetType, "pet", pulumi.Map{
			"keepers": pulumi.Map{keeper: pulumi.String("infra")},
		}, &pet, opts...); err != nil {
			return err
		}
		var other pulumi.CustomResourceState
		return ctx.RegisterResource(PetType, "other", pulumi.Map{
			"keepers": pulumi.Map{keeper: pulumi.String("infra")},
		}, &other, append(opts, pulumi.DependsOn([]pulumi.Resource{&pet}))...)
	}
}
