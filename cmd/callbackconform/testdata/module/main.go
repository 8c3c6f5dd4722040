// Command module is the kit's fixture for this module's callbacks server:
// callbacks of every kind the engine calls (a stack transform, an invoke
// transform, a resource hook, an error hook and a resource's state
// migration), following the fixture convention in CONFORMANCE.md, served
// until SignalAndWaitForShutdown returns.
//
//	go build -o /tmp/module ./cmd/callbackconform/testdata/module
//	go run ./cmd/callbackconform -- /tmp/module
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// The fixture convention's names (CONFORMANCE.md).
const (
	changeName    = "lossless"
	changeToken   = "conform:index:lossless"
	changeKey     = "conformAdded"
	changeValue   = "added by the transform"
	changeVersion = "7.0.0"
	refuseName    = "refuse-me"
	versionKey    = "conformVersion"
	returnKey     = "conformReturn"
	successorsKey = "conformSuccessors"
	failKey       = "conformFail"
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
	// The transforms send back what they get (properties and every
	// option), but for the convention's change; the hooks succeed, but for
	// the resource they refuse; the error hook retries once.
	if _, err := transforms.RegisterStack(ctx, mon,
		func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
			props := args.Properties()
			if args.Name == changeName {
				props[changeKey] = resource.NewStringProperty(changeValue)
				retain := true
				args.Options.RetainOnDelete = &retain
			}
			return &transforms.Result{Properties: props, Options: args.Options}, nil
		},
		callbacks.Name("conform-transform")); err != nil {
		return err
	}
	if _, err := invoketransforms.RegisterStack(ctx, mon,
		func(_ context.Context, args *invoketransforms.Args) (*invoketransforms.Result, error) {
			if args.Token == changeToken {
				args.Properties()[changeKey] = resource.NewStringProperty(changeValue)
				args.Options.Version = changeVersion
			}
			return args.Result(), nil
		},
		callbacks.Name("conform-invoke-transform")); err != nil {
		return err
	}
	if _, err := hooks.Register(ctx, mon, "conform-hook",
		func(_ context.Context, args *hooks.Args) error {
			if args.Name == refuseName {
				return errors.New("conform: refused " + refuseName)
			}
			return nil
		}); err != nil {
		return err
	}
	if _, err := hooks.RegisterErrorHook(ctx, mon, "conform-error-hook",
		func(_ context.Context, args *hooks.ErrorArgs) (bool, error) { return len(args.Errors) == 1, nil }); err != nil {
		return err
	}
	if err := registerMigrated(ctx, mon); err != nil {
		return err
	}
	// Serve until the engine (the kit) answers SignalAndWaitForShutdown, for
	// as long as its checks take: a -count run under load takes longer
	// than any bound worth setting here, and the kit's death takes the
	// program with it.
	return mon.Finish(ctx)
}

// registerMigrated registers a custom resource with the convention's
// migration.
func registerMigrated(ctx context.Context, mon *monitor.Monitor) error {
	if err := mon.Require(ctx, monitor.StateMigrations); err != nil {
		return err
	}
	cb, err := migrations.Callback(ctx, mon, migrate, callbacks.Name("conform-migration"))
	if err != nil {
		return err
	}
	_, err = mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: "conform:index:Migrated", Name: "migrated", Custom: true,
		StateMigrations: []*pulumirpc.Callback{cb},
	})
	return err
}

// migrate sets versionKey from 1 to 2 wherever a resource's outputs have
// it at 1; returns the state under returnKey verbatim; fails with the text
// under failKey; and changes nothing otherwise.
func migrate(_ context.Context, args *migrations.Args) (*migrations.Result, error) {
	resources, err := args.Resources()
	if err != nil {
		return nil, err
	}
	if len(resources) > 0 {
		outputs, _ := resources[0]["outputs"].(map[string]any)
		if msg, ok := outputs[failKey].(string); ok {
			return nil, errors.New(msg)
		}
		if ret, ok := outputs[returnKey].(string); ok {
			successors := map[string]string{}
			if s, ok := outputs[successorsKey].(map[string]any); ok {
				for k, v := range s {
					successors[k], _ = v.(string)
				}
			}
			return &migrations.Result{NewState: json.RawMessage(ret), Successors: successors}, nil
		}
	}
	changed := false
	for _, r := range resources {
		outputs, _ := r["outputs"].(map[string]any)
		if outputs[versionKey] == json.Number("1") {
			outputs[versionKey] = json.Number("2")
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	return migrations.Replace(resources, nil)
}
