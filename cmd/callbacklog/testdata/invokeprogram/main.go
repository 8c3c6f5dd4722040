// Command invokeprogram is a Pulumi program on the plain Go SDK with an
// invoke transform: it reads the outputs of its own stack through the
// engine's built-in function pulumi:pulumi:getResource, after an invoke
// transform has rewritten the URN it asks for.
package main

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		stack := "urn:pulumi:" + ctx.Stack() + "::" + ctx.Project() + "::pulumi:pulumi:Stack::" + ctx.Project() + "-" + ctx.Stack()
		err := ctx.RegisterInvokeTransform(func(_ context.Context, a *pulumi.InvokeTransformArgs) *pulumi.InvokeTransformResult {
			if a.Token != "pulumi:pulumi:getResource" {
				return nil
			}
			a.Args["urn"] = pulumi.String(stack)
			return &pulumi.InvokeTransformResult{Args: a.Args, Opts: a.Opts}
		})
		if err != nil {
			return err
		}
		// The SDK registers the stack resource on a goroutine of its own, so
		// an invoke sent at once may reach the engine before the stack does
		// ("unknown resource"). A component's registration waits for its
		// parent's, the stack's: once the component has its URN, the engine
		// has the stack.
		var after pulumi.ResourceState
		if err := ctx.RegisterComponentResource("invokeprogram:index:AfterStack", "after-stack", &after); err != nil {
			return err
		}
		found := after.URN().ApplyT(func(pulumi.URN) (bool, error) {
			var out map[string]any
			if err := ctx.Invoke("pulumi:pulumi:getResource", map[string]any{"urn": "urn:placeholder"}, &out); err != nil {
				return false, err
			}
			return out != nil, nil
		})
		ctx.Export("found", found)
		return nil
	})
}
