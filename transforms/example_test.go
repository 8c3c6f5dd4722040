package transforms_test

import (
	"context"
	"fmt"
	"log"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// A program registers a stack transform under the SDK's own pulumi.Run:
// program.Monitor serves it for as long as the deployment runs, and the
// engine calls it for every resource registered afterwards. The simulated
// engine stands in for `pulumi up`.
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
			protect := func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
				if !args.Custom {
					return nil, nil // the stack itself may pass through: the SDK registers it first
				}
				fmt.Println("protecting", args.Name)
				return args.WithOptions(func(o *transforms.ResourceOptions) { o.Protect = new(true) }), nil
			}
			if _, err := transforms.RegisterStack(ctx.Context(), mon, protect, callbacks.Name("protect")); err != nil {
				return err
			}
			var bucket pulumi.CustomResourceState
			return ctx.RegisterResource("aws:s3/bucket:Bucket", "logs", pulumi.Map{}, &bucket)
		})
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// protecting logs
}

// A transform that protects every bucket and keeps all its other options,
// called as the engine would call it.
func ExampleArgs_WithOptions() {
	protectBuckets := func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if args.Type != "aws:s3/bucket:Bucket" {
			return nil, nil // no change
		}
		return args.WithOptions(func(o *transforms.ResourceOptions) {
			o.Protect = new(true)
		}), nil
	}

	args := &transforms.Args{
		Type: "aws:s3/bucket:Bucket", Name: "logs", Custom: true,
		Options: &transforms.ResourceOptions{IgnoreChanges: []string{"tags"}},
	}
	res, err := protectBuckets(context.Background(), args)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("properties unchanged:", res.Properties == nil)
	fmt.Println("protect:", *res.Options.Protect)
	fmt.Println("ignore changes:", res.Options.IgnoreChanges)
	// Output:
	// properties unchanged: true
	// protect: true
	// ignore changes: [tags]
}

// Testing a transform without an engine or a server: build the Args by
// hand, with SetProperties for the inputs, and call the function.
func ExampleArgs_SetProperties() {
	defaultACL := func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if _, ok := args.Properties()["acl"]; ok {
			return nil, nil // the resource chose one
		}
		return args.WithProperties(func(m resource.PropertyMap) {
			m["acl"] = resource.NewProperty("private")
		}), nil
	}

	args := &transforms.Args{Type: "aws:s3/bucket:Bucket", Name: "logs", Custom: true}
	args.SetProperties(resource.PropertyMap{"bucket": resource.NewProperty("logs-bucket")})
	res, err := defaultACL(context.Background(), args)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Properties["acl"].StringValue(), res.Properties["bucket"].StringValue(), res.Options == nil)
	// Output:
	// private logs-bucket true
}

// A component library labels the resources a program puts under one of its
// components, and nothing else. Every binding of the deployment shares one
// stack transform. (With the Go SDK, the library registers the component
// with ctx.RegisterComponentResource and attaches to
// program.Descendants(component).)
func ExampleAttach() {
	ctx := context.Background()
	engine, err := enginetest.Start(enginetest.WithProject("shop"), enginetest.WithStack("dev"))
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

	for _, team := range []string{"payments", "search"} {
		comp, err := mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{Type: "teams:index:Team", Name: team})
		if err != nil {
			log.Fatal(err)
		}
		err = transforms.Attach(ctx, mon, transforms.Descendants(resource.URN(comp.GetUrn())),
			func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
				return a.WithProperties(func(p resource.PropertyMap) { p["team"] = resource.NewProperty(team) }), nil
			}, callbacks.Name("team-label")) // registration options apply to this binding alone
		if err != nil {
			log.Fatal(err)
		}
		for _, pet := range []string{team + "-pet", team + "-cat"} {
			_, err := mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
				Type: "random:index/randomPet:RandomPet", Name: pet, Parent: comp.GetUrn(), Custom: true,
			})
			if err != nil {
				log.Fatal(err)
			}
		}
	}
	_, err = mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: "random:index/randomPet:RandomPet", Name: "stray", Custom: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := mon.Finish(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := engine.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res.State.Resources {
		if r.Custom && r.Type == "random:index/randomPet:RandomPet" {
			fmt.Printf("%s: team %q\n", r.Name, r.Inputs.GetFields()["team"].GetStringValue())
		}
	}
	fmt.Println("stack transforms registered:", len(engine.Events("RegisterStackTransform")))
	// Output:
	// payments-pet: team "payments"
	// payments-cat: team "payments"
	// search-pet: team "search"
	// search-cat: team "search"
	// stray: team ""
	// stack transforms registered: 1
}
