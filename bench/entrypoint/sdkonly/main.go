// Command sdkonly is the baseline of bench/entrypoint.sh: a Pulumi Go
// program on the Go SDK alone. Under pulumi.Run it registers one stack
// transform with the SDK's ctx.RegisterResourceTransform, which adds the
// input "tag" to every resource, then registers the component resources
// (500, or ENTRYPOINT_RESOURCES). bench/entrypoint/monitor is the same
// program on this module: program.Monitor and transforms.RegisterStack.
//
// The two folders' names have the same length on purpose: the engine
// stores the source positions of every resource's frames, file names
// included, so the names show in the state's size.
//
//	go build -trimpath -ldflags "-w -s" -o /tmp/sdkonly ./bench/entrypoint/sdkonly
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Item is the component resource the program registers.
type Item struct {
	pulumi.ResourceState
}

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		if err := ctx.RegisterResourceTransform(tag); err != nil {
			return err
		}
		return items(ctx)
	})
}

// tag adds the input "tag" and keeps the resource's options.
func tag(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	props := pulumi.Map{"tag": pulumi.String("entrypoint")}
	for k, v := range args.Props {
		if k != "tag" {
			props[k] = v
		}
	}
	return &pulumi.ResourceTransformResult{Props: props, Opts: args.Opts}
}

// items registers the component resources item-000, item-001, ….
func items(ctx *pulumi.Context) error {
	n, err := count()
	if err != nil {
		return err
	}
	for i := range n {
		var item Item
		if err := ctx.RegisterComponentResource("bench:index:Item", fmt.Sprintf("item-%03d", i), &item); err != nil {
			return err
		}
	}
	return nil
}

// count is ENTRYPOINT_RESOURCES, 500 when unset.
func count() (int, error) {
	v := os.Getenv("ENTRYPOINT_RESOURCES")
	if v == "" {
		return 500, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("ENTRYPOINT_RESOURCES=%q: want a count of resources", v)
	}
	return n, nil
}
