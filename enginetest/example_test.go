package enginetest_test

import (
	"context"
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/enginetest"
)

// A program registers two resources through a raw ResourceMonitor client,
// as a language host does. The provider fails one of them: the program's
// RegisterResource gets the error and the deployment reports it.
func Example() {
	ctx := context.Background()
	e, err := enginetest.Start(
		enginetest.WithProject("demo"),
		enginetest.WithStack("dev"),
		enginetest.WithProvider(&enginetest.FakeProvider{
			OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
				if req.Name == "flaky" {
					return nil, errors.New("quota exceeded")
				}
				return &enginetest.CreateResponse{ID: req.Name + "-1", Outputs: req.Inputs}, nil
			},
		}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()

	conn, err := grpc.NewClient(e.MonitorAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	monitor := pulumirpc.NewResourceMonitorClient(conn)

	props, _ := structpb.NewStruct(map[string]any{"size": 3})
	resp, err := monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: "demo:index:Bucket", Name: "steady", Custom: true, Object: props,
	})
	fmt.Println("steady:", resp.GetId(), err)
	_, err = monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type: "demo:index:Bucket", Name: "flaky", Custom: true, Object: props,
	})
	fmt.Println("flaky:", err)
	if _, err := monitor.SignalAndWaitForShutdown(ctx, &emptypb.Empty{}); err != nil {
		fmt.Println(err)
		return
	}

	res, err := e.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Steps {
		fmt.Println(s.Op, s.URN, s.Err)
	}
	fmt.Println("deployment error:", res.Err)
	fmt.Println("in state:", len(res.State.Resources))
	// Output:
	// steady: steady-1 <nil>
	// flaky: rpc error: code = Unknown desc = quota exceeded
	// create urn:pulumi:dev::demo::pulumi:providers:demo::default <nil>
	// create urn:pulumi:dev::demo::demo:index:Bucket::steady <nil>
	// create urn:pulumi:dev::demo::demo:index:Bucket::flaky quota exceeded
	// deployment error: quota exceeded
	// in state: 2
}
