// Command gosdk is the Go SDK's target of bench/peers: a Pulumi program on
// the Go SDK alone, whose callback server is the SDK's own. Under
// pulumi.Run it registers an identity stack transform with
// ctx.RegisterResourceTransform, which starts the SDK's callback server and
// hands the transform to the resource monitor. When the body has returned,
// pulumi.Run waits in SignalAndWaitForShutdown, which the driver holds open
// until the run is over.
//
// The transform returns the properties and options it was given rather
// than nil: nil means "unchanged" to the SDK, which then skips encoding the
// response, and a transform that changes something does not get that.
//
// It is also the Go SDK's side of cmd/bigpayload:
//
//	go build -o /tmp/gosdk ./bench/peers/gosdk
package main

import (
	"context"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		return ctx.RegisterResourceTransform(identity)
	})
}

func identity(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	return &pulumi.ResourceTransformResult{Props: args.Props, Opts: args.Opts}
}
