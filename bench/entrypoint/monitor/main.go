// Command monitor is the program of bench/entrypoint.sh that uses this
// module: the same program as bench/entrypoint/sdkonly, with the tagging
// stack transform registered through program.Monitor and
// transforms.RegisterStack in place of the SDK's
// ctx.RegisterResourceTransform. It runs under the SDK's own pulumi.Run, so
// the stack trace the SDK records for each resource should be exactly as
// deep as the baseline's.
//
//	go build -trimpath -ldflags "-w -s" -o /tmp/monitor ./bench/entrypoint/monitor
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// Item is the component resource the program registers.
type Item struct {
	pulumi.ResourceState
}

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		if _, err := transforms.RegisterStack(ctx.Context(), mon, tag); err != nil {
			return err
		}
		return items(ctx)
	})
}

// tag adds the input "tag" and keeps the resource's options.
func tag(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
	return args.WithProperties(func(m resource.PropertyMap) {
		m["tag"] = resource.NewProperty("entrypoint")
	}), nil
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
