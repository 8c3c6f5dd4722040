package invoketransforms_test

import (
	"context"
	"fmt"
	"log"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/monitor"
)

// An invoke transform that pins every AWS function call to one region and
// keeps the invoke's options. The engine here is the simulator, whose
// provider answers a function call with its arguments; a program gets its
// monitor from program.Monitor.
func Example() {
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

	pinRegion := func(_ context.Context, args *invoketransforms.Args) (*invoketransforms.Result, error) {
		if _, ok := args.Arguments()["region"]; ok {
			return nil, nil // no change
		}
		return args.WithArgs(func(m resource.PropertyMap) {
			m["region"] = resource.NewProperty("eu-central-1")
		}), nil
	}
	if _, err := invoketransforms.RegisterStack(ctx, mon, pinRegion, callbacks.Name("pin-region")); err != nil {
		log.Fatal(err)
	}

	res, err := mon.Client().Invoke(ctx, &pulumirpc.ResourceInvokeRequest{
		Tok:  "aws:ec2/getAmi:getAmi",
		Args: &structpb.Struct{Fields: map[string]*structpb.Value{"mostRecent": structpb.NewBoolValue(true)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("region:", res.GetReturn().GetFields()["region"].GetStringValue())
	fmt.Println("mostRecent:", res.GetReturn().GetFields()["mostRecent"].GetBoolValue())
	if err := mon.Finish(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// region: eu-central-1
	// mostRecent: true
}
