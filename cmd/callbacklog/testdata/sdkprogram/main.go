// Command sdkprogram is a Pulumi program on the plain Go SDK, with none of
// this module's callback packages: a stack transform gives every RandomPet the prefix
// "sdk" and adds a secret to its keepers, so that the log of its deployment
// holds a secret inside a callback payload.
package main

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/cmd/callbacklog/testdata/sdkprogram/secret"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		err := ctx.RegisterStackTransform(func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			if a.Type != "random:index/randomPet:RandomPet" {
				return nil
			}
			a.Props["prefix"] = pulumi.String("sdk")
			a.Props["keepers"] = pulumi.Map{"owner": pulumi.String("infra"), "password": pulumi.ToSecret(pulumi.String(secret.Value))}
			return &pulumi.ResourceTransformResult{Props: a.Props, Opts: a.Opts}
		})
		if err != nil {
			return err
		}
		var pet, token pulumi.CustomResourceState
		err = ctx.RegisterResource("random:index/randomPet:RandomPet", "pet", pulumi.Map{
			"length":  pulumi.Int(2),
			"keepers": pulumi.Map{"owner": pulumi.String("infra")},
		}, &pet)
		if err != nil {
			return err
		}
		return ctx.RegisterResource("random:index/randomString:RandomString", "token", pulumi.Map{"length": pulumi.Int(8)}, &token)
	})
}
