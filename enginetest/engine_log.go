package enginetest

import (
	"context"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
)

// engineServer adapts the engine to the Engine service: logging and the
// root resource.
type engineServer struct {
	pulumirpc.UnimplementedEngineServer
	e *Engine
}

var _ pulumirpc.EngineServer = (*engineServer)(nil)

func (s *engineServer) Log(_ context.Context, req *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	d := Diagnostic{
		Severity:    severityOf(req.GetSeverity()),
		URN:         req.GetUrn(),
		Message:     req.GetMessage(),
		FromProgram: true,
	}
	detail := d.Severity + ": " + req.GetMessage()
	if !s.e.programSays(d) {
		detail = "not shown, the deployment is over: " + detail
	}
	s.e.rec.add(Event{
		Kind: KindLog, URN: req.GetUrn(), Request: clonePB(req), Detail: detail,
	})
	return &emptypb.Empty{}, nil
}

// programSays records a message of the program's for the user, unless a
// failed deployment is over: the engine then stops the program, and the
// user never sees what it still says. It reports whether the message was
// recorded.
func (e *Engine) programSays(d Diagnostic) bool {
	if e.overAndFailed() {
		return false
	}
	e.rec.diag(d)
	return true
}

func (s *engineServer) GetRootResource(
	context.Context, *pulumirpc.GetRootResourceRequest,
) (*pulumirpc.GetRootResourceResponse, error) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	return &pulumirpc.GetRootResourceResponse{Urn: s.e.rootURN}, nil
}

func (s *engineServer) SetRootResource(
	_ context.Context, req *pulumirpc.SetRootResourceRequest,
) (*pulumirpc.SetRootResourceResponse, error) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.e.rootURN = req.GetUrn()
	return &pulumirpc.SetRootResourceResponse{}, nil
}

func (s *engineServer) StartDebugging(context.Context, *pulumirpc.StartDebuggingRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (s *engineServer) RequirePulumiVersion(
	context.Context, *pulumirpc.RequirePulumiVersionRequest,
) (*pulumirpc.RequirePulumiVersionResponse, error) {
	return &pulumirpc.RequirePulumiVersionResponse{}, nil
}
