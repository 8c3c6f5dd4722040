// Command gosdk is the kit's fixture for the Pulumi Go SDK's callbacks
// server: a pulumi.Run program that registers one identity callback of each
// kind the SDK supports, and returns. pulumi.Run then serves the callbacks
// until SignalAndWaitForShutdown returns.
//
// The SDK registers hooks in the background and waits for a registration
// only when a resource names the hook, so the program binds both hooks to a
// component (at points that never fire for it): otherwise the program could
// signal its end before the engine has heard of them.
//
//	go build -o /tmp/gosdk ./cmd/callbackconform/testdata/gosdk
//	go run ./cmd/callbackconform -- /tmp/gosdk
package main

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

type fixtureComponent struct {
	pulumi.ResourceState
}

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		if err := ctx.RegisterResourceTransform(func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			return &pulumi.ResourceTransformResult{Props: args.Props, Opts: args.Opts}
		}); err != nil {
			return err
		}
		if err := ctx.RegisterInvokeTransform(func(_ context.Context, args *pulumi.InvokeTransformArgs) *pulumi.InvokeTransformResult {
			return &pulumi.InvokeTransformResult{Args: args.Args, Opts: args.Opts}
		}); err != nil {
			return err
		}
		hook, err := ctx.RegisterResourceHook("conform-hook", func(*pulumi.ResourceHookArgs) error {
			return nil
		}, nil)
		if err != nil {
			return err
		}
		errorHook, err := ctx.RegisterErrorHook("conform-error-hook", func(*pulumi.ErrorHookArgs) (bool, error) {
			return false, nil
		})
		if err != nil {
			return err
		}
		var fixture fixtureComponent
		return ctx.RegisterComponentResource("conform:index:Fixture", "fixture", &fixture,
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
				BeforeDelete: []*pulumi.ResourceHook{hook},
				OnError:      []*pulumi.ErrorHook{errorHook},
			}))
	})
}
