// Command unittest is a Pulumi Go program whose transform and hooks (in
// infra.go) are plain Go functions, tested in infra_test.go against the
// engine simulator from the enginetest package: the state the deployment
// leaves, the hook calls the engine made and their inputs, and a preview.
//
// Run by `pulumi up`, it deploys two pulumi-random resources. Run with
// `go run` and no engine around (PULUMI_MONITOR unset), it deploys once
// against the simulator and prints the resulting tags; the tests are what
// this example is about: `go test ./examples/unittest`.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
)

func main() {
	if os.Getenv(monitor.EnvMonitor) != "" {
		pulumi.Run(deploy) // under `pulumi up`
		return
	}
	if err := simulate(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "unittest:", err)
		os.Exit(1)
	}
}

// simulate deploys on the simulator and prints the tags the resources ended
// with.
func simulate(ctx context.Context, w io.Writer) error {
	engine, err := enginetest.Start(enginetest.WithProject("unittest"), enginetest.WithStack("dev"))
	if err != nil {
		return err
	}
	defer engine.Close()
	res, err := engine.RunFunc(ctx, func() error { return pulumi.RunErr(deploy) })
	if err != nil {
		return err
	}
	if res.Err != nil { // every failure, the reason first, then the program's
		return res.Err
	}
	fmt.Fprintln(w, "unittest: deployed on the simulator (PULUMI_MONITOR is unset):")
	resources := slices.Clone(res.State.Resources)
	slices.SortFunc(resources, func(a, b *enginetest.ResourceState) int { return strings.Compare(a.Name, b.Name) })
	for _, r := range resources {
		if tags := r.Inputs.GetFields()[tagKey].GetStructValue(); tags != nil {
			fmt.Fprintf(w, "  %s: owner=%s managed-by=%s\n", r.Name,
				tags.GetFields()["owner"].GetStringValue(), tags.GetFields()["managed-by"].GetStringValue())
		}
	}
	fmt.Fprintln(w, "the tests are the point of this example: go test ./examples/unittest")
	return nil
}

// deploy is the program's body: Setup with the deployment's monitor, then
// Program.
func deploy(ctx *pulumi.Context) error {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return err
	}
	if err := Setup(ctx.Context(), mon); err != nil {
		return err
	}
	return Program(ctx)
}
