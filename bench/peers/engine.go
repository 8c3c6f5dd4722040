package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// The deployment every target is told it runs in.
const (
	project      = "bench"
	stack        = "dev"
	organization = "organization"
)

// maxMessage is the engine's limit on a gRPC message, 400 MiB.
const maxMessage = 400 << 20

// engine is as much of the Pulumi engine as a program needs to register a
// stack transform and then wait for the end of the deployment: a
// ResourceMonitor and an Engine service on one port of 127.0.0.1. It hands
// on the first stack transform the program registers, and holds
// SignalAndWaitForShutdown open until release.
type engine struct {
	lis  net.Listener
	srv  *grpc.Server
	mon  *monitorService
	once sync.Once
}

// startEngine starts an engine; the warnings and errors the program logs
// go to logs.
func startEngine(logs io.Writer) (*engine, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &engine{
		lis: lis,
		srv: grpc.NewServer(grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage)),
		mon: &monitorService{transform: make(chan *pulumirpc.Callback, 1), released: make(chan struct{})},
	}
	pulumirpc.RegisterResourceMonitorServer(e.srv, e.mon)
	pulumirpc.RegisterEngineServer(e.srv, &engineService{logs: logs})
	go func() { _ = e.srv.Serve(lis) }()
	return e, nil
}

// env is what the language host tells a program about its deployment:
// the variables pulumi.Run reads.
func (e *engine) env(rootDir string) []string {
	addr := e.lis.Addr().String()
	return []string{
		"PULUMI_MONITOR=" + addr,
		"PULUMI_ENGINE=" + addr,
		"PULUMI_PROJECT=" + project,
		"PULUMI_STACK=" + stack,
		"PULUMI_ORGANIZATION=" + organization,
		"PULUMI_DRY_RUN=true",
		"PULUMI_PARALLEL=16",
		"PULUMI_CONFIG={}",
		"PULUMI_CONFIG_SECRET_KEYS=[]",
		"PULUMI_ROOT_DIRECTORY=" + rootDir,
	}
}

// transform delivers the first stack transform the program registers.
func (e *engine) transform() <-chan *pulumirpc.Callback { return e.mon.transform }

// release ends the program's wait in SignalAndWaitForShutdown.
func (e *engine) release() { e.once.Do(func() { close(e.mon.released) }) }

func (e *engine) stop() {
	e.release()
	e.srv.Stop()
}

type monitorService struct {
	pulumirpc.UnimplementedResourceMonitorServer
	transform chan *pulumirpc.Callback
	released  chan struct{}
}

// GetDeploymentInfo advertises every feature the protocol names.
func (*monitorService) GetDeploymentInfo(context.Context, *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	info := &pulumirpc.DeploymentInfo{
		Project: project, Stack: stack, Organization: organization, DryRun: true, Parallel: 16,
	}
	for f := range pulumirpc.ResourceMonitorFeature_name {
		info.SupportedFeatures = append(info.SupportedFeatures, pulumirpc.ResourceMonitorFeature(f))
	}
	return info, nil
}

func (*monitorService) SupportsFeature(context.Context, *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	return &pulumirpc.SupportsFeatureResponse{HasSupport: true}, nil
}

// RegisterResource answers the program's stack resource, the one resource
// a program without resources registers.
func (*monitorService) RegisterResource(_ context.Context, req *pulumirpc.RegisterResourceRequest) (*pulumirpc.RegisterResourceResponse, error) {
	urn := fmt.Sprintf("urn:pulumi:%s::%s::%s::%s", stack, project, req.GetType(), req.GetName())
	return &pulumirpc.RegisterResourceResponse{Urn: urn, Object: &structpb.Struct{}}, nil
}

func (*monitorService) RegisterResourceOutputs(context.Context, *pulumirpc.RegisterResourceOutputsRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (m *monitorService) RegisterStackTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	select {
	case m.transform <- cb:
	default: // not the first
	}
	return &emptypb.Empty{}, nil
}

func (m *monitorService) SignalAndWaitForShutdown(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	select {
	case <-m.released:
	case <-ctx.Done():
	}
	return &emptypb.Empty{}, nil
}

// engineService keeps the stack's URN, which the Go SDK sets and reads, and
// writes the warnings and errors the program logs.
type engineService struct {
	pulumirpc.UnimplementedEngineServer
	logs io.Writer
	mu   sync.Mutex
	root string
}

func (e *engineService) Log(_ context.Context, req *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	if req.GetSeverity() >= pulumirpc.LogSeverity_WARNING {
		fmt.Fprintf(e.logs, "engine log, %s: %s\n", req.GetSeverity(), req.GetMessage())
	}
	return &emptypb.Empty{}, nil
}

func (e *engineService) GetRootResource(context.Context, *pulumirpc.GetRootResourceRequest) (*pulumirpc.GetRootResourceResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return &pulumirpc.GetRootResourceResponse{Urn: e.root}, nil
}

func (e *engineService) SetRootResource(_ context.Context, req *pulumirpc.SetRootResourceRequest) (*pulumirpc.SetRootResourceResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.root = req.GetUrn()
	return &pulumirpc.SetRootResourceResponse{}, nil
}
