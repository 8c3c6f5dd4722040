package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// renameType moves a resource to a new type: its URN changes, so the old URN
// gets the new one as its successor.
func renameType(_ context.Context, args *migrations.Args) (*migrations.Result, error) {
	resources, err := args.Resources()
	if err != nil {
		return nil, err
	}
	successors := map[string]string{}
	for _, r := range resources {
		if r["type"] != "my:index:Bucket" {
			continue
		}
		old := r["urn"].(string)
		r["type"] = "my:index:BucketV2"
		r["urn"] = "urn:pulumi:dev::proj::my:index:BucketV2::" + r["id"].(string)
		successors[old] = r["urn"].(string)
	}
	if len(successors) == 0 {
		return nil, nil // nothing to do: leave the state alone
	}
	return migrations.Replace(resources, successors)
}

// A migration is a plain function over the old state. Engines from Pulumi
// 3.274.1 on run migrations; ask before registering one.
func Example() {
	ctx := context.Background()
	res, err := renameType(ctx, &migrations.Args{
		URN:      "urn:pulumi:dev::proj::my:index:Bucket::logs",
		OldState: json.RawMessage(`[{"urn": "urn:pulumi:dev::proj::my:index:Bucket::logs", "type": "my:index:Bucket", "id": "logs", "custom": true}]`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.NewState))
	fmt.Println(res.Successors)

	engine, err := enginetest.Start() // behaves like a current `pulumi up`
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
	err = mon.Require(ctx, monitor.StateMigrations)
	fmt.Println("engine runs migrations:", !errors.Is(err, monitor.ErrMissingFeature))
	// Output:
	// [{"custom":true,"id":"logs","type":"my:index:BucketV2","urn":"urn:pulumi:dev::proj::my:index:BucketV2::logs"}]
	// map[urn:pulumi:dev::proj::my:index:Bucket::logs:urn:pulumi:dev::proj::my:index:BucketV2::logs]
	// engine runs migrations: true
}

// Callback hands a migration to the engine with the resource it applies to.
func ExampleCallback() {
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

	if err := mon.Require(ctx, monitor.StateMigrations); err != nil {
		fmt.Println("skipping migrations:", err)
		return
	}
	cb, err := migrations.Callback(ctx, mon, renameType, callbacks.Name("bucket-v2"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: "my:index:BucketV2", Name: "logs", Custom: true,
		StateMigrations: []*pulumirpc.Callback{cb},
	})
	fmt.Println("registered:", err == nil)
	// Output:
	// registered: true
}

// A migration can work on the SDK's own checkpoint type, apitype.ResourceV3,
// rather than maps: here it moves an input of the old schema to its new
// name, and gives the resources back the same way.
func ExampleArgs_Checkpoint() {
	rename := func(_ context.Context, args *migrations.Args) (*migrations.Result, error) {
		resources, err := args.Checkpoint()
		if err != nil {
			return nil, err
		}
		for i := range resources {
			if v, ok := resources[i].Inputs["bucketName"]; ok {
				delete(resources[i].Inputs, "bucketName")
				resources[i].Inputs["name"] = v
			}
		}
		return migrations.ReplaceCheckpoint(resources, nil)
	}
	res, err := rename(context.Background(), &migrations.Args{
		URN: "urn:pulumi:dev::proj::my:index:Bucket::logs",
		OldState: json.RawMessage(`[{"urn": "urn:pulumi:dev::proj::my:index:Bucket::logs", "type": "my:index:Bucket",
			"id": "logs", "custom": true, "inputs": {"bucketName": "logs-2026"}}]`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.NewState))
	// Output:
	// [{"urn":"urn:pulumi:dev::proj::my:index:Bucket::logs","custom":true,"id":"logs","type":"my:index:Bucket","inputs":{"name":"logs-2026"}}]
}
