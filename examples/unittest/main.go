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
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/monitor"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "unittest:", err)
		os.Exit(1)
	}
}

// run deploys with the engine that started the program, or, when there is
// none, with the simulator, and prints the tags the resources ended with.
func run(ctx context.Context, w io.Writer) error {
	if os.Getenv(monitor.EnvMonitor) != "" {
		return deploy(ctx)
	}
	engine, err := enginetest.Start(enginetest.WithProject("unittest"), enginetest.WithStack("dev"))
	if err != nil {
		return err
	}
	defer engine.Close()
	res, err := engine.RunFunc(ctx, func() error { return deploy(ctx) })
	if err != nil {
		return err
	}
	if res.ProgramErr != nil {
		return res.ProgramErr
	}
	if res.Err != nil {
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

// deploy runs Setup, then Program, against the engine named by the
// environment. The callback server serves until pulumi.RunErr has returned,
// that is until the engine has called its last hook.
func deploy(ctx context.Context) (err error) {
	srv, err := callbacks.Listen(callbacks.EngineAddress(os.Getenv("PULUMI_ENGINE")))
	if err != nil {
		return err
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, srv.Shutdown(stop))
	}()
	mon, err := monitor.FromEnv(srv)
	if err != nil {
		return err
	}
	defer mon.Close()
	if err := Setup(ctx, mon); err != nil {
		return err
	}
	return pulumi.RunErr(Program)
}
