// Command errorhook is a Pulumi program with an error hook that asks the
// engine to try a failed create again when the provider says it was
// throttled, and reports each failure under the resource.
package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

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
	retry, err := hooks.RegisterErrorHook(c, mon, "retry-throttled", func(ctx context.Context, a *hooks.ErrorArgs) (bool, error) {
		again := strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3
		callbacks.Info(ctx, fmt.Sprintf("%s failed (attempt %d): %s; retry: %t", a.FailedOperation, a.Attempt(), a.LastError(), again))
		return again, nil
	})
	if err != nil {
		return err
	}
	err = hooks.Attach(c, mon, transforms.Matching(func(a *transforms.Args) bool { return a.Custom }), &transforms.HooksBinding{OnError: []transforms.HookRef{retry}})
	if err != nil {
		return err
	}
	var token pulumi.CustomResourceState
	return ctx.RegisterResource("random:index/randomString:RandomString", "token", pulumi.Map{"length": pulumi.Int(12)}, &token)
}
