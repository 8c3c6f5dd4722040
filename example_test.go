package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// A Registry works without any socket: Invoke is the whole protocol minus
// the transport, which makes callbacks easy to test.
func ExampleRegistry() {
	reg, err := callbacks.NewRegistry()
	if err != nil {
		log.Fatal(err)
	}
	token, err := reg.Register(callbacks.ErrorHook(
		func(_ context.Context, req *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
			// Retry a create up to three times.
			return &pulumirpc.ErrorHookResponse{Retry: req.GetFailedOperation() == "create" && len(req.GetErrors()) < 3}, nil
		}), callbacks.Name("retry-creates"))
	if err != nil {
		log.Fatal(err)
	}
	payload, _ := proto.Marshal(&pulumirpc.ErrorHookRequest{FailedOperation: "create", Errors: []string{"throttled"}})
	out, err := reg.Invoke(context.Background(), token, payload)
	if err != nil {
		log.Fatal(err)
	}
	var res pulumirpc.ErrorHookResponse
	_ = proto.Unmarshal(out, &res)
	fmt.Println("retry:", res.GetRetry())

	_, err = reg.Invoke(context.Background(), "no-such-token", payload)
	fmt.Println(errors.Is(err, callbacks.ErrUnknownToken), status.Code(err))
	// Output:
	// retry: true
	// true NotFound
}

// A Server listens on a free loopback port and hands out Callbacks for the
// engine. Here a plain gRPC client plays the engine.
func ExampleServer() {
	srv, err := callbacks.Listen()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	cb, err := srv.Register(context.Background(), callbacks.ResourceTransform(
		func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			opts := proto.Clone(req.GetOptions()).(*pulumirpc.TransformResourceOptions)
			opts.Protect = proto.Bool(true) // keep every other option as it was
			return &pulumirpc.TransformResponse{Options: opts}, nil
		}), callbacks.Name("protect-all"))
	if err != nil {
		log.Fatal(err)
	}

	conn, err := grpc.NewClient(cb.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	payload, _ := proto.Marshal(&pulumirpc.TransformRequest{Type: "aws:s3/bucket:Bucket", Name: "logs",
		Options: &pulumirpc.TransformResourceOptions{DependsOn: []string{"urn:pulumi:dev::p::t::other"}}})
	res, err := pulumirpc.NewCallbacksClient(conn).Invoke(context.Background(),
		&pulumirpc.CallbackInvokeRequest{Token: cb.Token, Request: payload})
	if err != nil {
		log.Fatal(err)
	}
	var out pulumirpc.TransformResponse
	_ = proto.Unmarshal(res.GetResponse(), &out)
	fmt.Println(out.GetOptions().GetProtect(), out.GetOptions().GetDependsOn())

	// Shutdown lets calls in flight finish; afterwards the server is closed.
	_ = srv.Shutdown(context.Background())
	_, err = srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
	fmt.Println(err)
	// Output:
	// true [urn:pulumi:dev::p::t::other]
	// callbacks: server closed
}

// callCounter is an Observer that keeps per-callback counts, the way a
// Prometheus counter vector or an OpenTelemetry meter would be fed.
type callCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *callCounter) CallStarted(context.Context, callbacks.CallInfo) {}

func (c *callCounter) CallFinished(_ context.Context, info callbacks.CallInfo, code codes.Code, _ time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[fmt.Sprintf("%s/%s/%s", info.Kind, info.Name, code)]++
}

// An Observer sees every invocation once, with its outcome, without this
// module depending on any metrics library. Tracing interceptors such as
// OpenTelemetry's gRPC stats handler plug in with GRPCServerOptions.
func ExampleWithObserver() {
	counter := &callCounter{counts: map[string]int{}}
	reg, err := callbacks.NewRegistry(callbacks.WithObserver(counter))
	if err != nil {
		log.Fatal(err)
	}
	token, _ := reg.Register(callbacks.ResourceHook(
		func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			return nil, nil
		}), callbacks.Name("audit"))
	for range 3 {
		_, _ = reg.Invoke(context.Background(), token, nil)
	}
	_, _ = reg.Invoke(context.Background(), token, []byte{0xff})
	fmt.Println(counter.counts["resource hook/audit/OK"], counter.counts["resource hook/audit/InvalidArgument"])
	// Output: 3 1
}
