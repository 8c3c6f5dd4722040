package hooks_test

import (
	"context"
	"fmt"
	"log"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// A language host that speaks to the engine itself (a Go program uses
// program.Monitor, as the package example shows) listens, dials the
// monitor, registers its hooks and resources, and finishes the deployment.
func ExampleRegister() {
	ctx := context.Background()
	engine, err := enginetest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()

	srv, err := callbacks.Listen()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	mon, err := monitor.Dial(engine.MonitorAddr(), srv)
	if err != nil {
		log.Fatal(err)
	}

	audit, err := hooks.Register(ctx, mon, "audit", func(ctx context.Context, args *hooks.Args) error {
		pw := args.NewInputs()["password"]
		fmt.Printf("creating %s; password is secret: %v\n", args.Name, pw.IsSecret())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	inputs, err := plugin.MarshalProperties(resource.PropertyMap{
		"password": resource.MakeSecret(resource.NewProperty("hunter2")),
	}, plugin.MarshalOptions{KeepSecrets: true})
	if err != nil {
		log.Fatal(err)
	}
	_, err = mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: "test:index:Database", Name: "db", Custom: true, Object: inputs, AcceptSecrets: true,
		Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{audit.Name()}},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Signal the end of the program, let the engine run delete hooks, then
	// stop serving.
	if err := mon.Finish(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// creating db; password is secret: true
}

// A program registers a hook once and binds it to the resources that need
// it, under the SDK's own pulumi.Run: program.Monitor serves the hook for
// as long as the deployment runs. The simulated engine stands in for
// `pulumi up`.
func Example() {
	engine, err := enginetest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	_, err = engine.RunFunc(context.Background(), func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			mon, err := program.Monitor(ctx)
			if err != nil {
				return err
			}
			audit, err := hooks.Register(ctx.Context(), mon, "audit", func(ctx context.Context, args *hooks.Args) error {
				fmt.Println("creating", args.Name)
				return nil
			})
			if err != nil {
				return err
			}
			var db pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Database", "db", pulumi.Map{}, &db,
				program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}}))
		})
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// creating db
}

// A library binds hooks to resources it does not create: the children
// that a program gives one of its components. The bucket outside the
// component gets nothing. (With the Go SDK, program.Descendants(component)
// is the scope, and the library registers the component with
// ctx.RegisterComponentResource.)
func ExampleAttach() {
	ctx := context.Background()
	engine, err := enginetest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer engine.Close()
	srv, err := callbacks.Listen()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	mon, err := monitor.Dial(engine.MonitorAddr(), srv)
	if err != nil {
		log.Fatal(err)
	}

	audit, err := hooks.Register(ctx, mon, "audit", func(ctx context.Context, args *hooks.Args) error {
		fmt.Printf("audit %s: before create %v\n", args.Name, args.NewOptions().Hooks.BeforeCreate)
		return nil
	}, hooks.Shared())
	if err != nil {
		log.Fatal(err)
	}
	team, err := mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{Type: "teams:index:Team", Name: "payments"})
	if err != nil {
		log.Fatal(err)
	}
	err = hooks.Attach(ctx, mon, transforms.Descendants(resource.URN(team.GetUrn())),
		&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}})
	if err != nil {
		log.Fatal(err)
	}

	for _, r := range []struct{ name, parent string }{{"ledger", team.GetUrn()}, {"scratch", ""}} {
		_, err := mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
			Type: "aws:s3/bucket:Bucket", Name: r.name, Parent: r.parent, Custom: true,
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := mon.Finish(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// audit ledger: before create [audit]
}

// A hook function is plain Go: a test calls it with Args built from plain
// values, as httptest.NewRequest builds a request for a handler.
func ExampleNewArgs() {
	requireOwner := func(_ context.Context, a *hooks.Args) error {
		if _, ok := a.NewInputs()["owner"]; !ok {
			return fmt.Errorf("%s has no owner", a.Name)
		}
		return nil
	}
	urn := resource.URN("urn:pulumi:dev::shop::random:index/randomPet:RandomPet::stray")
	args := hooks.NewArgs(urn, "", hooks.State{
		Inputs:  resource.PropertyMap{"length": resource.NewProperty(2.0)},
		Options: &transforms.ResourceOptions{Protect: new(true)},
	}, hooks.State{})
	fmt.Println(requireOwner(context.Background(), args))
	fmt.Println(args.Type, *args.NewOptions().Protect, args.OldInputs() == nil)
	// Output:
	// stray has no owner
	// random:index/randomPet:RandomPet true true
}
