// Command langhost is a Pulumi program written the way a language host talks
// to the engine: without the Go SDK's pulumi package, over the raw
// ResourceMonitor protocol (pulumirpc). It shows what a host author uses
// from this module:
//
//   - monitor.FromEnv to connect, Require to check features first, and
//     DeploymentInfo for the project, stack and configuration;
//   - a callbacks.Raw callback: a resource hook whose request and response
//     bytes the author decodes and encodes with proto, as a host does for
//     messages of its own;
//   - a per-resource transform, from transforms.Callback, put in
//     RegisterResourceRequest.transforms;
//   - monitor.Finish, which signals the engine, waits while it runs the
//     delete hooks of resources the program dropped, and only then shuts the
//     callback server down.
//
// Every resource is bound to the raw "farewell" hook after delete. The
// program declares "old-pet" unless the configuration says keepOld=false;
// the run that drops it gets the hook called, after the signal.
//
// Run by `pulumi up`, it deploys pulumi-random pets. Run with `go run` and no
// engine around (PULUMI_MONITOR unset), it runs twice against the simulator
// from the enginetest package, the second time over the first one's state
// with keepOld=false, and prints what the engine did in each run.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

const (
	stackType    = "pulumi:pulumi:Stack"
	petType      = "random:index/randomPet:RandomPet"
	farewellHook = "farewell"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "langhost:", err)
		os.Exit(1)
	}
}

// run deploys with the engine that started the program, or, when there is
// none, runs twice against the simulator and reports to w what happened.
func run(ctx context.Context, w io.Writer) error {
	if os.Getenv(monitor.EnvMonitor) != "" {
		return deploy(ctx)
	}
	return simulate(ctx, w)
}

// deploy is the whole program: connect, register the callbacks and the
// resources, then end in the order delete hooks need. opts configure the
// callback server.
func deploy(ctx context.Context, opts ...callbacks.ServerOption) error {
	opts = append([]callbacks.ServerOption{callbacks.EngineAddress(os.Getenv("PULUMI_ENGINE"))}, opts...)
	srv, err := callbacks.Listen(opts...)
	if err != nil {
		return err
	}
	mon, err := monitor.FromEnv(srv)
	if err != nil {
		return err
	}
	// Nothing is registered with an engine that would ignore it.
	if err := mon.Require(ctx, monitor.Transforms, monitor.ResourceHooks); err != nil {
		return err
	}
	info, err := mon.DeploymentInfo(ctx)
	if err != nil {
		return err
	}

	finished := false
	defer func() {
		if !finished {
			_ = srv.Close() // on failure; Finish stops it gracefully otherwise
		}
	}()

	// The raw hook, registered with the engine by hand. The engine knows
	// hooks by name; every run must register the names that resources in
	// the state are bound to, or their delete hooks fail.
	cb, err := srv.Register(ctx, callbacks.Raw(farewell), callbacks.Name(farewellHook))
	if err != nil {
		return err
	}
	if _, err := mon.Client().RegisterResourceHook(ctx, &pulumirpc.RegisterResourceHookRequest{
		Name: farewellHook, Callback: cb,
	}); err != nil {
		return fmt.Errorf("registering hook %q: %w", farewellHook, err)
	}

	// The per-resource transform, handed to the engine with each pet.
	defaults, err := transforms.Callback(ctx, mon, petDefaults, callbacks.Name("pet-defaults"))
	if err != nil {
		return err
	}

	stack, err := mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: stackType, Name: info.GetProject() + "-" + info.GetStack(),
	})
	if err != nil {
		return err
	}
	pets := []string{"pet"}
	if keepOld(info) {
		pets = append(pets, "old-pet")
	}
	outputs := map[string]any{}
	for _, name := range pets {
		res, err := mon.Client().RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
			Type:          petType,
			Name:          name,
			Custom:        true,
			Parent:        stack.GetUrn(),
			Object:        &structpb.Struct{},
			AcceptSecrets: true,
			Transforms:    []*pulumirpc.Callback{defaults},
			Hooks:         &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{AfterDelete: []string{farewellHook}},
		})
		if err != nil {
			return fmt.Errorf("registering %s: %w", name, err)
		}
		outputs[name] = res.GetId()
	}
	stackOutputs, err := structpb.NewStruct(outputs)
	if err != nil {
		return err
	}
	if _, err := mon.Client().RegisterResourceOutputs(ctx, &pulumirpc.RegisterResourceOutputsRequest{
		Urn: stack.GetUrn(), Outputs: stackOutputs,
	}); err != nil {
		return err
	}

	// Signal the end of the program, serve the delete hooks the engine now
	// runs, and stop the server once the engine is done with it.
	finished = true
	return mon.Finish(ctx)
}

// keepOld reads the keepOld setting from the stack's configuration
// (`pulumi config set keepOld false`); it defaults to true.
func keepOld(info *pulumirpc.DeploymentInfo) bool {
	v, ok := info.GetConfig()[info.GetProject()+":keepOld"]
	if !ok {
		return true
	}
	keep, err := strconv.ParseBool(v)
	return err != nil || keep
}

// farewell is a resource hook written against the wire, as a language host
// whose users write hooks in another language would forward it: it decodes
// the request bytes itself and encodes the response.
func farewell(ctx context.Context, payload []byte) ([]byte, error) {
	var req pulumirpc.ResourceHookRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "farewell: the request does not decode: %v", err)
	}
	// A raw callback's request is opaque to the server; say which resource
	// the message is about so that it shows under that resource.
	callbacks.ReportFor(ctx, callbacks.SeverityInfo, req.GetUrn(), fmt.Sprintf("farewell, %s (id %s, %d words)", req.GetName(), req.GetId(),
		int(req.GetOldInputs().GetFields()["length"].GetNumberValue())))
	return proto.Marshal(&pulumirpc.ResourceHookResponse{})
}

// petDefaults gives a pet three words unless the program chose a length. It
// returns only properties, so the pet's options stay as they were.
func petDefaults(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
	if _, ok := args.Properties()["length"]; ok {
		return nil, nil
	}
	return args.WithProperties(func(m resource.PropertyMap) {
		m["length"] = resource.NewProperty(3.0)
	}), nil
}
