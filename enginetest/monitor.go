package enginetest

import (
	"context"
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// monitorServer adapts the engine to the ResourceMonitor service. Every
// method records an event.
type monitorServer struct {
	pulumirpc.UnimplementedResourceMonitorServer
	e *Engine
}

var _ pulumirpc.ResourceMonitorServer = (*monitorServer)(nil)

func (m *monitorServer) record(kind EventKind, urn, name string, req, resp proto.Message, err error, detail string) {
	ev := Event{Kind: kind, URN: urn, Name: name, Request: clonePB(req), Detail: detail}
	if err != nil {
		ev.Err = err.Error()
	} else if resp != nil {
		ev.Response = clonePB(resp)
	}
	m.e.rec.add(ev)
}

func (m *monitorServer) GetDeploymentInfo(context.Context, *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	e := m.e
	if e.cfg.oldEngine {
		err := status.Error(codes.Unimplemented, "method GetDeploymentInfo not implemented")
		m.record(kindGetDeploymentInfo, "", "", nil, nil, err, "")
		return nil, err
	}
	info := &pulumirpc.DeploymentInfo{
		Project:           e.cfg.project,
		Stack:             e.cfg.stack,
		Organization:      e.cfg.organization,
		Config:            e.cfg.config,
		ConfigSecretKeys:  e.cfg.configSecretKeys,
		DryRun:            e.cfg.dryRun,
		Parallel:          e.cfg.parallel,
		SupportedFeatures: e.cfg.features(),
	}
	m.record(kindGetDeploymentInfo, "", "", nil, info, nil, "")
	return info, nil
}

func (m *monitorServer) SupportsFeature(
	_ context.Context, req *pulumirpc.SupportsFeatureRequest,
) (*pulumirpc.SupportsFeatureResponse, error) {
	resp := &pulumirpc.SupportsFeatureResponse{HasSupport: m.e.cfg.supports(req.GetId())}
	m.record(kindSupportsFeature, "", req.GetId(), req, resp, nil, fmt.Sprintf("hasSupport=%t", resp.HasSupport))
	return resp, nil
}

func (m *monitorServer) RegisterResource(
	ctx context.Context, req *pulumirpc.RegisterResourceRequest,
) (*pulumirpc.RegisterResourceResponse, error) {
	resp, err := m.e.registerResource(ctx, req)
	urn := resp.GetUrn()
	if urn == "" {
		urn = m.e.URN(req.GetParent(), req.GetType(), req.GetName())
	}
	if errors.Is(err, errUnanswered) {
		err = m.e.unanswered(ctx, err)
		m.record(kindRegisterResource, urn, "", req, nil, err, "")
		return nil, err
	}
	detail := ""
	if err == nil {
		detail = "ok"
		if resp.GetId() != "" {
			detail += " id=" + resp.GetId()
		}
	}
	m.record(kindRegisterResource, urn, "", req, resp, err, detail)
	return resp, err
}

func (m *monitorServer) RegisterResourceOutputs(
	ctx context.Context, req *pulumirpc.RegisterResourceOutputsRequest,
) (*emptypb.Empty, error) {
	err := m.e.registerResourceOutputs(ctx, req)
	if errors.Is(err, errUnanswered) {
		err = m.e.unanswered(ctx, err)
	}
	m.record(kindRegisterResourceOutputs, req.GetUrn(), "", req, nil, err, "ok")
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (m *monitorServer) ReadResource(
	ctx context.Context, req *pulumirpc.ReadResourceRequest,
) (*pulumirpc.ReadResourceResponse, error) {
	resp, err := m.e.readResource(ctx, req)
	if errors.Is(err, errUnanswered) {
		err = m.e.unanswered(ctx, err)
	}
	m.record(kindReadResource, resp.GetUrn(), "", req, resp, err, "ok")
	return resp, err
}

func (m *monitorServer) Invoke(
	ctx context.Context, req *pulumirpc.ResourceInvokeRequest,
) (*pulumirpc.ResourceInvokeResponse, error) {
	resp, err := m.e.invoke(ctx, req)
	if errors.Is(err, errUnanswered) {
		err = m.e.unanswered(ctx, err)
	}
	m.record(kindInvoke, "", req.GetTok(), req, resp, err, "ok")
	return resp, err
}

func (m *monitorServer) Call(context.Context, *pulumirpc.ResourceCallRequest) (*pulumirpc.CallResponse, error) {
	return nil, status.Error(codes.Unimplemented, "Call is not simulated")
}

func (m *monitorServer) RegisterStackTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	err := m.e.registerStackTransform(cb)
	m.e.rec.add(Event{
		Kind: kindRegisterStackTransform, Target: cb.GetTarget(), Token: cb.GetToken(),
		Request: clonePB(cb), Err: errText(err), Detail: "ok",
	})
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (m *monitorServer) RegisterStackInvokeTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	err := m.e.registerStackInvokeTransform(cb)
	m.e.rec.add(Event{
		Kind: kindRegisterStackInvokeTransform, Target: cb.GetTarget(), Token: cb.GetToken(),
		Request: clonePB(cb), Err: errText(err), Detail: "ok",
	})
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (m *monitorServer) RegisterResourceHook(
	_ context.Context, req *pulumirpc.RegisterResourceHookRequest,
) (*emptypb.Empty, error) {
	err := m.e.registerHook(req.GetName(), hookResource, req.GetCallback(), req.GetOnDryRun(), req.GetIgnoreErrors())
	m.e.rec.add(Event{
		Kind: kindRegisterResourceHook, Name: req.GetName(),
		Target: req.GetCallback().GetTarget(), Token: req.GetCallback().GetToken(),
		Request: clonePB(req), Err: errText(err), Detail: "ok",
	})
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (m *monitorServer) RegisterErrorHook(
	_ context.Context, req *pulumirpc.RegisterErrorHookRequest,
) (*emptypb.Empty, error) {
	err := m.e.registerHook(req.GetName(), hookError, req.GetCallback(), false, false)
	m.e.rec.add(Event{
		Kind: kindRegisterErrorHook, Name: req.GetName(),
		Target: req.GetCallback().GetTarget(), Token: req.GetCallback().GetToken(),
		Request: clonePB(req), Err: errText(err), Detail: "ok",
	})
	if err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

func (m *monitorServer) RegisterPackage(
	_ context.Context, req *pulumirpc.RegisterPackageRequest,
) (*pulumirpc.RegisterPackageResponse, error) {
	e := m.e
	key := req.GetName() + "@" + req.GetVersion() + "@" + req.GetDownloadUrl()
	if p := req.GetParameterization(); p != nil {
		key += "@" + p.GetName() + "@" + p.GetVersion()
	}
	e.mu.Lock()
	ref, ok := e.packages[key]
	if !ok {
		ref = fmt.Sprintf("package-%d", len(e.packages)+1)
		e.packages[key] = ref
	}
	e.mu.Unlock()
	resp := &pulumirpc.RegisterPackageResponse{Ref: ref}
	m.record(kindRegisterPackage, "", req.GetName(), req, resp, nil, "ref="+ref)
	return resp, nil
}

func (m *monitorServer) SignalAndWaitForShutdown(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	e := m.e
	if e.cfg.noShutdownSignal {
		err := status.Error(codes.Unimplemented, "method SignalAndWaitForShutdown not implemented")
		m.record(kindSignalAndWaitForShutdown, "", "", nil, nil, err, "")
		return nil, err
	}
	e.mu.Lock()
	already := e.signalled
	e.signalled = true
	e.mu.Unlock()
	if already {
		//lint:ignore ST1005 the engine's exact wording.
		err := errors.New("Already waiting for shutdown")
		m.record(kindSignalAndWaitForShutdown, "", "", nil, nil, err, "")
		return nil, err
	}
	m.record(kindSignalAndWaitForShutdown, "", "", nil, nil, nil, "waiting")
	if f := e.cfg.beforeShutdown; f != nil {
		f(ctx)
	}
	e.changed.Broadcast()
	e.startEnd()
	// The engine answers at the end of a deployment that succeeded. After
	// a failure 3.260 never does (the program is stopped instead), 3.274
	// does once it has shut the monitor down.
	select {
	case <-e.waiterReleased:
		return &emptypb.Empty{}, nil
	case <-e.monitorDown:
		// 3.274 releases the waiter when it shuts a failed deployment's
		// monitor down.
		return &emptypb.Empty{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-e.cut:
		return nil, errCutOff
	case <-e.closing:
		return nil, errShuttingDown
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
