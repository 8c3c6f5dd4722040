package program_test

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// A program that tags every custom resource it creates. It runs under the
// SDK's own pulumi.Run; Monitor serves its callbacks for as long as the
// deployment runs, and nothing is left to call at the end.
func ExampleMonitor() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		tag := func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if !a.Custom {
				return nil, nil
			}
			return a.WithProperties(func(p resource.PropertyMap) {
				p["tags"] = resource.NewProperty(resource.PropertyMap{"team": resource.NewProperty("infra")})
			}), nil
		}
		if _, err := transforms.RegisterStack(ctx.Context(), mon, tag, callbacks.Name("tag")); err != nil {
			return err
		}
		var bucket pulumi.CustomResourceState
		return ctx.RegisterResource("aws:s3/bucket:Bucket", "logs", nil, &bucket)
	})
}
