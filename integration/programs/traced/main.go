// Command traced is a Pulumi program whose callbacks show in the engine's
// OpenTelemetry trace (`pulumi up --otel-traces`): a stack transform named
// "tag", a before-create hook "audit" that reports and then fails (its
// failure ignored, so the deployment goes on), and an error hook "retry"
// that retries a throttled create, all bound to the pet "pet".
package main

import (
	"context"
	"errors"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		c := ctx.Context()
		_, err1 := transforms.RegisterStack(c, mon, func(context.Context, *transforms.Args) (*transforms.Result, error) {
			return nil, nil
		}, callbacks.Name("tag"))
		audit, err2 := hooks.Register(c, mon, "audit", func(ctx context.Context, a *hooks.Args) error {
			callbacks.Info(ctx, "auditing "+a.Name)
			return errors.New("audit trail unavailable")
		}, hooks.IgnoreErrors())
		retry, err3 := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			return strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3, nil
		})
		if err := errors.Join(err1, err2, err3); err != nil {
			return err
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource("random:index/randomPet:RandomPet", "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
			program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}, OnError: []transforms.HookRef{retry}}))
	})
}
