// Command proto is the baseline target of bench/peers: a pulumirpc.Callbacks
// server that does the least any server of a resource transform written
// with plain protobuf does. It decodes the TransformRequest with
// proto.Unmarshal and encodes a TransformResponse holding the same
// properties and options with proto.Marshal: no transform function, no
// property conversion, no registry.
//
// With -splice (target "splice") it answers without decoding anything: it
// copies the request's serialized properties and options (fields 5 and 6 of
// a TransformRequest) into fields 1 and 2 of the response. That is what the
// transport alone costs, the floor under any server.
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
	"flag"
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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// maxMessage is the engine's limit on a gRPC message, 400 MiB.
const maxMessage = 400 << 20

// token names the one callback this server has.
const token = "identity"

type server struct {
	pulumirpc.UnimplementedCallbacksServer
	answer func([]byte) ([]byte, error)
}

// Invoke answers a TransformRequest with s.answer: a TransformResponse with
// the request's properties and options.
func (s server) Invoke(_ context.Context, req *pulumirpc.CallbackInvokeRequest) (*pulumirpc.CallbackInvokeResponse, error) {
	if req.GetToken() != token {
		return nil, status.Errorf(codes.NotFound, "no callback with token %q", req.GetToken())
	}
	out, err := s.answer(req.GetRequest())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CallbackInvokeResponse{Response: out}, nil
}

// roundTrip decodes the request and encodes the response.
func roundTrip(req []byte) ([]byte, error) {
	var in pulumirpc.TransformRequest
	if err := proto.Unmarshal(req, &in); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the TransformRequest: %v", err)
	}
	out, err := proto.Marshal(&pulumirpc.TransformResponse{Properties: in.GetProperties(), Options: in.GetOptions()})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encoding the TransformResponse: %v", err)
	}
	return out, nil
}

// splice copies the request's properties and options, as they are
// serialized, into a response.
func splice(req []byte) ([]byte, error) {
	var out []byte
	for len(req) > 0 {
		num, typ, n := protowire.ConsumeTag(req)
		if n < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "reading the TransformRequest: %v", protowire.ParseError(n))
		}
		req = req[n:]
		n = protowire.ConsumeFieldValue(num, typ, req)
		if n < 0 {
			return nil, status.Errorf(codes.InvalidArgument, "reading the TransformRequest: %v", protowire.ParseError(n))
		}
		if (num == 5 || num == 6) && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(req[:n])
			out = protowire.AppendTag(out, num-4, protowire.BytesType) // properties 5 → 1, options 6 → 2
			out = protowire.AppendBytes(out, v)
		}
		req = req[n:]
	}
	return out, nil
}

func main() {
	log.SetPrefix("proto: ")
	log.SetFlags(0)
	spliced := flag.Bool("splice", false, "answer with the request's serialized properties and options, decoding nothing")
	flag.Parse()
	answer := roundTrip
	if *spliced {
		answer = splice
	}
	if err := run(answer); err != nil {
		log.Fatal(err)
	}
}

func run(answer func([]byte) ([]byte, error)) error {
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
	pulumirpc.RegisterCallbacksServer(srv, server{answer: answer})
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
