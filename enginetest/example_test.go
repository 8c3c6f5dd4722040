package enginetest_test

import (
	"context"
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/enginetest"
)

// A program registers two resources through a raw ResourceMonitor client,
// as a language host does. The provider fails one of them: as in the
// engine, that registration is not answered while the deployment ends; it
// reports the error on the resource and "update failed" for the stack, then
// shuts its monitor down (3.274.1), which ends the registration with
// Unavailable. (Under EngineVersion("3.260.0") it is never answered: the
// engine would kill the program.)
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
	flakyCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	flaky := make(chan error, 1)
	go func() {
		_, err := monitor.RegisterResource(flakyCtx, &pulumirpc.RegisterResourceRequest{
			Type: "demo:index:Bucket", Name: "flaky", Custom: true, Object: props,
		})
		flaky <- err
	}()

	res, err := e.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Steps {
		fmt.Println(s.Op, s.URN, s.Err)
	}
	fmt.Println("failed:", res.Failed, "error:", res.Err)
	for _, d := range res.Diagnostics {
		fmt.Println(d)
	}
	fmt.Println("in state:", len(res.State.Resources))
	fmt.Println("flaky:", status.Code(<-flaky))
	// Output:
	// steady: steady-1 <nil>
	// create urn:pulumi:dev::demo::pulumi:providers:demo::default <nil>
	// create urn:pulumi:dev::demo::demo:index:Bucket::steady <nil>
	// create urn:pulumi:dev::demo::demo:index:Bucket::flaky quota exceeded
	// failed: true error: quota exceeded
	// error: urn:pulumi:dev::demo::demo:index:Bucket::flaky: quota exceeded
	// error: update failed
	// in state: 2
	// flaky: Unavailable
}
