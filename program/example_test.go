package program_test

import (
	"context"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// A program that tags every custom resource it creates. Run takes the place
// of pulumi.Run; nothing is left to call at the end.
func ExampleRun() {
	program.Run(func(ctx *pulumi.Context, mon *monitor.Monitor) error {
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
	}, program.ShutdownTimeout(10*time.Second))
}
