package replay

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
)

// target is where a current registration's callback is served.
type target struct {
	Target, Token string
}

// regKey names a registration the way a recorded call names its own:
// Method, plus the hook's name, the order among the stack (invoke)
// transforms or in the resource's list, the resource, and the kind that
// tells a resource's transforms from its migrations.
type regKey struct {
	Method   string
	Kind     callbacks.Kind
	Name     string
	Order    int
	Resource resource.URN
}

// runInfo is what the engine told the program in the recording: the
// LanguageRuntime/Run request, and the features its monitor had.
type runInfo struct {
	Project, Stack, Organization, RootDirectory string
	Config                                      map[string]string
	ConfigSecretKeys                            []string
	DryRun                                      bool
	Parallel                                    int32
	Features                                    []pulumirpc.ResourceMonitorFeature // nil: every feature
}

// engine is an in-process stand-in for the Pulumi engine: the
// ResourceMonitor and Engine services on loopback, answering a program's
// registrations without ever calling a callback, and recording each
// callback registration under the key a recorded call is matched by.
// onShutdown runs inside SignalAndWaitForShutdown, where the real engine
// would still be calling back.
type engine struct {
	pulumirpc.UnimplementedResourceMonitorServer
	info       runInfo
	onShutdown func(ctx context.Context)

	srv *grpc.Server
	lis net.Listener

	mu        sync.Mutex
	regs      map[regKey]target
	order     []regKey       // registration order, for reports
	orders    map[string]int // registrations counted in order, by method
	logs      []string       // the program's warnings and errors
	shutdowns int
	resources []resource.URN // registered or read, in order
	seen      map[resource.URN]bool
}

// newEngine starts the engine's services on 127.0.0.1.
func newEngine(info runInfo, opts ...grpc.ServerOption) (*engine, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("replay: starting the engine: %w", err)
	}
	opts = append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(callbacks.DefaultMaxMessageSize),
		grpc.MaxSendMsgSize(callbacks.DefaultMaxMessageSize),
	}, opts...)
	e := &engine{info: info, lis: lis, srv: grpc.NewServer(opts...), regs: map[regKey]target{}, orders: map[string]int{}, seen: map[resource.URN]bool{}}
	pulumirpc.RegisterResourceMonitorServer(e.srv, e)
	pulumirpc.RegisterEngineServer(e.srv, &engineService{e: e})
	go func() { _ = e.srv.Serve(lis) }()
	return e, nil
}

// Addr is the address of both services.
func (e *engine) Addr() string { return e.lis.Addr().String() }

// Stop ends the services and closes every connection to them, which is how
// a program's callback server learns that the deployment is over.
func (e *engine) Stop() { e.srv.Stop() }

// registrations returns the current registrations in the order made.
func (e *engine) registrations() ([]regKey, map[regKey]target) {
	e.mu.Lock()
	defer e.mu.Unlock()
	regs := make(map[regKey]target, len(e.regs))
	for k, v := range e.regs {
		regs[k] = v
	}
	return append([]regKey(nil), e.order...), regs
}

// register notes the callbacks cbs registered by method: counted in
// order within the run, or named, or in a resource's list field.
func (e *engine) register(method, field, name string, resource resource.URN, cbs ...*pulumirpc.Callback) {
	row, v := viaOf(method, field)
	if row == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, cb := range cbs {
		k := regKey{Method: method, Kind: row.kind}
		switch {
		case cb == nil:
			continue
		case v.field == "":
			e.orders[method]++
			k.Order = e.orders[method]
		case v.field == "callback":
			k.Name = name
		default:
			k.Order, k.Resource = i+1, resource
		}
		if _, dup := e.regs[k]; !dup {
			e.order = append(e.order, k)
		}
		e.regs[k] = target{Target: cb.GetTarget(), Token: cb.GetToken()}
	}
}

// resourceLocked notes a resource the program registered or read.
func (e *engine) resourceLocked(urn resource.URN) {
	if !e.seen[urn] {
		e.seen[urn] = true
		e.resources = append(e.resources, urn)
	}
}

// registered returns the resources the program registered or read, in
// order.
func (e *engine) registered() []resource.URN {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]resource.URN(nil), e.resources...)
}

func (e *engine) supports(f pulumirpc.ResourceMonitorFeature) bool {
	if e.info.Features == nil {
		return true
	}
	for _, g := range e.info.Features {
		if g == f {
			return true
		}
	}
	return false
}

func (e *engine) features() []pulumirpc.ResourceMonitorFeature {
	if e.info.Features != nil {
		return e.info.Features
	}
	fs := make([]pulumirpc.ResourceMonitorFeature, 0, len(pulumirpc.ResourceMonitorFeature_name))
	for v := range len(pulumirpc.ResourceMonitorFeature_name) {
		fs = append(fs, pulumirpc.ResourceMonitorFeature(v))
	}
	return fs
}

// legacyFeatures are the SupportsFeature ids the Go SDK asks about, by the
// feature each stands for.
var legacyFeatures = map[string]pulumirpc.ResourceMonitorFeature{
	"secrets":             pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SECRETS,
	"resourceReferences":  pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_REFERENCES,
	"outputValues":        pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_OUTPUT_VALUES,
	"aliasSpecs":          pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ALIAS_SPECS,
	"deletedWith":         pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_DELETED_WITH,
	"transforms":          pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_TRANSFORMS,
	"invokeTransforms":    pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_INVOKE_TRANSFORMS,
	"resourceHooks":       pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS,
	"errorHooks":          pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ERROR_HOOKS,
	"sendsOptionsToHooks": pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SENDS_OPTIONS_TO_HOOKS,
	"parameterization":    pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_PARAMETERIZATION,
	"replacementTrigger":  pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_REPLACEMENT_TRIGGER,
	"replaceWith":         pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_REPLACE_WITH,
}

func (e *engine) SupportsFeature(_ context.Context, req *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	f, known := legacyFeatures[req.GetId()]
	return &pulumirpc.SupportsFeatureResponse{HasSupport: !known || e.supports(f)}, nil
}

func (e *engine) GetDeploymentInfo(context.Context, *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	i := e.info
	return &pulumirpc.DeploymentInfo{
		Project: i.Project, Stack: i.Stack, Organization: i.Organization, Config: i.Config,
		ConfigSecretKeys: i.ConfigSecretKeys, DryRun: i.DryRun, Parallel: i.Parallel,
		SupportedFeatures: e.features(),
	}, nil
}

func (e *engine) RegisterStackTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	e.register("RegisterStackTransform", "", "", "", cb)
	return &emptypb.Empty{}, nil
}

func (e *engine) RegisterStackInvokeTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	e.register("RegisterStackInvokeTransform", "", "", "", cb)
	return &emptypb.Empty{}, nil
}

func (e *engine) RegisterResourceHook(_ context.Context, req *pulumirpc.RegisterResourceHookRequest) (*emptypb.Empty, error) {
	e.register("RegisterResourceHook", "callback", req.GetName(), "", req.GetCallback())
	return &emptypb.Empty{}, nil
}

func (e *engine) RegisterErrorHook(_ context.Context, req *pulumirpc.RegisterErrorHookRequest) (*emptypb.Empty, error) {
	e.register("RegisterErrorHook", "callback", req.GetName(), "", req.GetCallback())
	return &emptypb.Empty{}, nil
}

// urnOf computes a resource's URN the way the engine does, from its
// parent's type, its own type and its name.
func (e *engine) urnOf(parent, typ, name string) resource.URN {
	var parentType tokens.Type
	if parent != "" {
		parentType = resource.URN(parent).QualifiedType()
	}
	return resource.NewURN(tokens.QName(e.info.Stack), tokens.PackageName(e.info.Project), parentType, tokens.Type(typ), name)
}

func (e *engine) RegisterResource(_ context.Context, req *pulumirpc.RegisterResourceRequest) (*pulumirpc.RegisterResourceResponse, error) {
	urn := e.urnOf(req.GetParent(), req.GetType(), req.GetName())
	e.mu.Lock()
	e.resourceLocked(urn)
	e.mu.Unlock()
	m := req.ProtoReflect()
	for _, row := range kinds {
		for _, v := range row.via {
			if v.method != registerRes {
				continue
			}
			list := m.Get(m.Descriptor().Fields().ByJSONName(v.field)).List()
			cbs := make([]*pulumirpc.Callback, list.Len())
			for i := range cbs {
				cbs[i], _ = list.Get(i).Message().Interface().(*pulumirpc.Callback)
			}
			e.register(registerRes, v.field, "", urn, cbs...)
		}
	}
	res := &pulumirpc.RegisterResourceResponse{Urn: string(urn), Object: req.GetObject()}
	if res.Object == nil {
		res.Object = &structpb.Struct{}
	}
	if req.GetCustom() {
		res.Id = req.GetName() + "-id"
		if req.GetImportId() != "" {
			res.Id = req.GetImportId()
		}
	}
	return res, nil
}

func (e *engine) RegisterResourceOutputs(context.Context, *pulumirpc.RegisterResourceOutputsRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (e *engine) ReadResource(_ context.Context, req *pulumirpc.ReadResourceRequest) (*pulumirpc.ReadResourceResponse, error) {
	urn := e.urnOf(req.GetParent(), req.GetType(), req.GetName())
	e.mu.Lock()
	e.resourceLocked(urn)
	e.mu.Unlock()
	return &pulumirpc.ReadResourceResponse{Urn: string(urn), Properties: req.GetProperties()}, nil
}

func (e *engine) Invoke(context.Context, *pulumirpc.ResourceInvokeRequest) (*pulumirpc.ResourceInvokeResponse, error) {
	return &pulumirpc.ResourceInvokeResponse{Return: &structpb.Struct{}}, nil
}

func (e *engine) SignalAndWaitForShutdown(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	e.mu.Lock()
	e.shutdowns++
	first := e.shutdowns == 1
	e.mu.Unlock()
	if !first {
		return nil, status.Error(codes.FailedPrecondition, "replay: SignalAndWaitForShutdown called twice")
	}
	if e.onShutdown != nil {
		e.onShutdown(ctx)
	}
	return &emptypb.Empty{}, nil
}

// engineService is the Engine service: the program's log, and its root
// resource.
type engineService struct {
	pulumirpc.UnimplementedEngineServer
	e *engine

	mu   sync.Mutex
	root string
}

func (s *engineService) Log(_ context.Context, req *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	if req.GetSeverity() >= pulumirpc.LogSeverity_WARNING {
		msg := strings.ToLower(req.GetSeverity().String()) + ": " + req.GetMessage()
		if req.GetUrn() != "" {
			msg += " (" + req.GetUrn() + ")"
		}
		s.e.mu.Lock()
		s.e.logs = append(s.e.logs, msg)
		s.e.mu.Unlock()
	}
	return &emptypb.Empty{}, nil
}

func (s *engineService) GetRootResource(context.Context, *pulumirpc.GetRootResourceRequest) (*pulumirpc.GetRootResourceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &pulumirpc.GetRootResourceResponse{Urn: s.root}, nil
}

func (s *engineService) SetRootResource(_ context.Context, req *pulumirpc.SetRootResourceRequest) (*pulumirpc.SetRootResourceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.root = req.GetUrn()
	return &pulumirpc.SetRootResourceResponse{}, nil
}
