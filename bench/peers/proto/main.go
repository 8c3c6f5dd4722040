// Command proto is the baseline target of bench/peers: a pulumirpc.Callbacks
// server that does the least any server of a resource transform written
// with plain protobuf does. It decodes the TransformRequest with
// proto.Unmarshal and encodes a TransformResponse holding the same
// properties and options with proto.Marshal: no transform function, no
// property conversion, no registry.
//
// It follows the target contract of bench/peers: it serves on 127.0.0.1,
// registers itself as a stack transform with the resource monitor named by
// PULUMI_MONITOR (ResourceMonitor.RegisterStackTransform), and waits in
// SignalAndWaitForShutdown until the driver ends the run, or until SIGINT
// or SIGTERM.
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// maxMessage is the engine's limit on a gRPC message, 400 MiB.
const maxMessage = 400 << 20

// token names the one callback this server has.
const token = "identity"

type server struct {
	pulumirpc.UnimplementedCallbacksServer
}

// Invoke answers a TransformRequest with its own properties and options.
func (server) Invoke(_ context.Context, req *pulumirpc.CallbackInvokeRequest) (*pulumirpc.CallbackInvokeResponse, error) {
	if req.GetToken() != token {
		return nil, status.Errorf(codes.NotFound, "no callback with token %q", req.GetToken())
	}
	var in pulumirpc.TransformRequest
	if err := proto.Unmarshal(req.GetRequest(), &in); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the TransformRequest: %v", err)
	}
	out, err := proto.Marshal(&pulumirpc.TransformResponse{Properties: in.GetProperties(), Options: in.GetOptions()})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding the TransformResponse: %v", err)
	}
	return &pulumirpc.CallbackInvokeResponse{Response: out}, nil
}

func main() {
	log.SetPrefix("proto: ")
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	addr := os.Getenv("PULUMI_MONITOR")
	if addr == "" {
		return errors.New("PULUMI_MONITOR is not set: this program is a target that bench/peers starts")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage))
	pulumirpc.RegisterCallbacksServer(srv, server{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	mon := pulumirpc.NewResourceMonitorClient(conn)
	cb := &pulumirpc.Callback{Target: lis.Addr().String(), Token: token}
	if _, err := mon.RegisterStackTransform(ctx, cb); err != nil {
		return err
	}
	if _, err := mon.SignalAndWaitForShutdown(ctx, &emptypb.Empty{}); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
