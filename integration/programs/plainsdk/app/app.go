// Package app is the body of integration/programs/plainsdk, a program on
// the plain Go SDK (no use of this module) whose callbacks the SDK's own
// callback server serves. The program runs it; the replay tests hand it to
// replay.Run.
package app

import (
	"context"
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Prefix is the prefix the program's stack transform gives the pet.
const Prefix = "plain"

const petType = "random:index/randomPet:RandomPet"

// Program registers a stack transform that gives every RandomPet the prefix
// prefix, a transform of the pet's own that adds a keeper, and a
// before-create hook "freeze". The pet's keepers hold the stack's secret
// configuration value "password". With the configuration "refuse" set, the
// hook refuses the create with the message "creates are frozen".
func Program(prefix string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		pw, ok := ctx.GetConfig(ctx.Project() + ":password")
		if !ok {
			return errors.New("the configuration has no password")
		}
		password := pulumi.ToSecret(pulumi.String(pw))
		_, refuse := ctx.GetConfig(ctx.Project() + ":refuse")
		err := ctx.RegisterResourceTransform(func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			if a.Type != petType {
				return nil
			}
			props := pulumi.Map{}
			for k, v := range a.Props {
				props[k] = v
			}
			props["prefix"] = pulumi.String(prefix)
			return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
		})
		if err != nil {
			return err
		}
		hook, err := ctx.RegisterResourceHook("freeze", func(*pulumi.ResourceHookArgs) error {
			if refuse {
				return errors.New("creates are frozen")
			}
			return nil
		}, nil)
		if err != nil {
			return err
		}
		own := func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			props := pulumi.Map{}
			for k, v := range a.Props {
				props[k] = v
			}
			props["separator"] = pulumi.String("_")
			return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "pet", pulumi.Map{
			"length":  pulumi.Int(2),
			"keepers": pulumi.Map{"password": password},
		}, &pet, pulumi.Transforms([]pulumi.ResourceTransform{own}),
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{BeforeCreate: []*pulumi.ResourceHook{hook}}))
	}
}
