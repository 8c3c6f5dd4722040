package monitor_test

import (
	"context"
	"log"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// A Go program gets the deployment's Monitor from program.Monitor inside
// the SDK's pulumi.Run, and checks the engine's features before registering
// anything; the server stops by itself when the deployment ends.
func Example() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		if err := mon.Require(ctx.Context(), monitor.ResourceHooks); err != nil {
			return err
		}
		// ... register hooks, transforms and resources ...
		return nil
	})
}

// A language host that speaks to the engine itself finds the monitor in
// PULUMI_MONITOR, checks the engine's features before registering
// anything, and at the end lets the engine run its delete hooks before the
// callback server stops.
func ExampleFromEnv() {
	ctx := context.Background()
	srv, err := callbacks.Listen()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	mon, err := monitor.FromEnv(srv)
	if err != nil {
		log.Print(err) // not run by the Pulumi CLI
		return
	}
	if err := mon.Require(ctx, monitor.ResourceHooks); err != nil {
		log.Fatal(err)
	}
	// ... register hooks and resources ...
	if err := mon.Finish(ctx); err != nil {
		log.Fatal(err)
	}
}
