package monitor_test

import (
	"context"
	"log"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
)

// A program run by `pulumi up` finds the monitor in PULUMI_MONITOR, checks
// the engine's features before registering anything, and at the end lets the
// engine run its delete hooks before the callback server stops.
func Example() {
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
