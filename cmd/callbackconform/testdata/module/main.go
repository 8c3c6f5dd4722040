// Command module is the kit's fixture for this module's callbacks server:
// identity callbacks of every kind the engine calls (a stack transform, an
// invoke transform, a resource hook and an error hook), served until
// SignalAndWaitForShutdown returns.
//
//	go build -o /tmp/module ./cmd/callbackconform/testdata/module
//	go run ./cmd/callbackconform -- /tmp/module
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "module:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	srv, err := callbacks.Listen(callbacks.EngineAddress(os.Getenv("PULUMI_ENGINE")))
	if err != nil {
		return err
	}
	mon, err := monitor.FromEnv(srv)
	if err != nil {
		_ = srv.Close()
		return err
	}
	// Identity callbacks: the transforms decode what they get and send it
	// back (properties and every option), the hooks succeed, and the error
	// hook declines to retry.
	if _, err := transforms.RegisterStack(ctx, mon,
		func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
			return &transforms.Result{Properties: args.Properties(), Options: args.Options}, nil
		},
		callbacks.Name("conform-transform")); err != nil {
		return err
	}
	if _, err := invoketransforms.RegisterStack(ctx, mon,
		func(_ context.Context, args *invoketransforms.Args) (*invoketransforms.Result, error) {
			return args.Result(), nil
		},
		callbacks.Name("conform-invoke-transform")); err != nil {
		return err
	}
	if _, err := hooks.Register(ctx, mon, "conform-hook",
		func(context.Context, *hooks.Args) error { return nil }); err != nil {
		return err
	}
	if _, err := hooks.RegisterErrorHook(ctx, mon, "conform-error-hook",
		func(context.Context, *hooks.ErrorArgs) (bool, error) { return false, nil }); err != nil {
		return err
	}
	stop, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return mon.Finish(stop)
}
