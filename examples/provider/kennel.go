package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// The package, its component and what the component creates.
const (
	Package    = "kennel"
	Version    = "0.1.0"
	KennelType = "kennel:index:Kennel"
	PetType    = "random:index/randomPet:RandomPet"

	// AuditHook is the hook every Construct registers under the same name:
	// hook names are one space per deployment, so the second Construct
	// finds the first one's registration instead of failing.
	AuditHook = "kennel-audit"
)

// schema declares the component for SDK generators.
const schema = `{
  "name": "kennel",
  "version": "0.1.0",
  "resources": {
    "kennel:index:Kennel": {
      "isComponent": true,
      "inputProperties": {"pets": {"type": "integer", "description": "How many pets the kennel houses."}},
      "requiredInputs": ["pets"],
      "properties": {"pets": {"type": "integer"}}
    }
  }
}`

// Kennel is the provider: a ResourceProviderServer with the four methods a
// component provider needs, and the callback server its Constructs register
// with.
type Kennel struct {
	pulumirpc.UnimplementedResourceProviderServer

	srv *callbacks.Server

	mu     sync.Mutex
	engine *grpc.ClientConn // the engine, for the SDK's Construct
}

// NewKennel starts the callback server (configured by opts) and returns the
// provider. engine is the connection to the engine, or nil until the engine
// attaches.
func NewKennel(engine *grpc.ClientConn, opts ...callbacks.ServerOption) (*Kennel, error) {
	srv, err := callbacks.Listen(opts...)
	if err != nil {
		return nil, err
	}
	return &Kennel{srv: srv, engine: engine}, nil
}

// Shutdown stops the callback server once the engine has let the provider
// go, letting calls in flight finish for at most d.
func (k *Kennel) Shutdown(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return k.srv.Shutdown(ctx)
}

// GetPluginInfo implements pulumirpc.ResourceProviderServer.
func (k *Kennel) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: Version}, nil
}

// GetSchema implements pulumirpc.ResourceProviderServer.
func (k *Kennel) GetSchema(_ context.Context, req *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	if v := req.GetVersion(); v != 0 {
		return nil, status.Errorf(codes.InvalidArgument, "unsupported schema version %d", v)
	}
	return &pulumirpc.GetSchemaResponse{Schema: schema}, nil
}

// Configure implements pulumirpc.ResourceProviderServer.
func (k *Kennel) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true, AcceptResources: true, AcceptOutputs: true}, nil
}

// Attach implements pulumirpc.ResourceProviderServer: the engine attaches to
// a provider it did not start, and gives its address.
func (k *Kennel) Attach(_ context.Context, req *pulumirpc.PluginAttach) (*emptypb.Empty, error) {
	host, err := provider.NewHostClient(req.GetAddress())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	k.mu.Lock()
	k.engine = host.EngineConn()
	k.mu.Unlock()
	return &emptypb.Empty{}, nil
}

// Construct implements pulumirpc.ResourceProviderServer. It registers the
// kennel component itself, over the monitor named in the request, with the
// kennel's callbacks in the transforms of its own registration: the engine
// applies them to the component and its descendants only, and never calls
// them about any other resource of the deployment. The SDK's
// provider.Construct then builds the children in the ordinary pulumi.Context
// programming model, under the component it reads back by URN.
func (k *Kennel) Construct(ctx context.Context, req *pulumirpc.ConstructRequest) (*pulumirpc.ConstructResponse, error) {
	if req.GetType() != KennelType {
		return nil, status.Errorf(codes.InvalidArgument, "kennel: unknown component type %q", req.GetType())
	}
	k.mu.Lock()
	engine := k.engine
	k.mu.Unlock()
	if engine == nil {
		return nil, status.Error(codes.FailedPrecondition, "kennel: no engine connection yet")
	}
	mon, err := monitor.FromConstruct(req, k.srv)
	if err != nil {
		return nil, err
	}
	// The registrations outlive the connection: the engine calls k.srv.
	defer mon.Close()
	audit, err := hooks.Register(ctx, mon, AuditHook, auditPet, hooks.Shared())
	if err != nil {
		return nil, err
	}
	// The engine applies a resource's own transforms to the resource
	// itself too: the label transform notes that it saw the kennel.
	var applied atomic.Bool
	own, err := kennelTransforms(ctx, mon, req, audit, &applied)
	if err != nil {
		return nil, err
	}
	register := func() (string, error) {
		urn, err := registerKennel(ctx, mon, req, own)
		if err != nil || applied.Load() {
			return urn, err
		}
		// The engine used the transforms the program gave the Kennel in
		// place of the kennel's own: bind through stack transforms.
		return urn, attachToChildren(ctx, mon, req, urn, audit)
	}
	return provider.Construct(ctx, req, engine, func(pctx *pulumi.Context, typ, name string,
		inputs provider.ConstructInputs, _ pulumi.ResourceOption,
	) (*provider.ConstructResult, error) {
		return buildKennel(pctx, typ, name, inputs, register)
	})
}

// kennelTransforms returns the callbacks of the kennel's two transforms:
// one labels each pet with its kennel, the other binds the audit hook to it.
// They are registered with the callback server only; the engine learns of
// them from the component's registration. The label transform sets applied
// when the engine asks it about the kennel itself.
func kennelTransforms(ctx context.Context, mon *monitor.Monitor, req *pulumirpc.ConstructRequest,
	audit *hooks.Hook, applied *atomic.Bool,
) ([]*pulumirpc.Callback, error) {
	labelFn := labelPet(req.GetName())
	label, err := transforms.Callback(ctx, mon, func(ctx context.Context, args *transforms.Args) (*transforms.Result, error) {
		if args.Type == req.GetType() && args.Name == req.GetName() && string(args.Parent) == req.GetParent() {
			applied.Store(true)
		}
		return labelFn(ctx, args)
	}, callbacks.Name("kennel-label-"+req.GetName()))
	if err != nil {
		return nil, err
	}
	bind, err := hooks.Transform(ctx, mon, hooks.ByType(PetType), &hooks.Binding{BeforeCreate: []hooks.Ref{audit}},
		callbacks.Name("kennel-bind-"+req.GetName()))
	if err != nil {
		return nil, err
	}
	// The engine applies a resource's own transforms in order: the label
	// comes first, so the audit hook sees it.
	return []*pulumirpc.Callback{label, bind}, nil
}

// attachToChildren binds the label and the audit hook through stack
// transforms, for when the engine did not apply the kennel's own: the
// program gave the Kennel transforms of its own, which the engine uses in
// place of those of the provider's registration. Through a monitor from
// FromConstruct, hooks.Attach binds only to the component's descendants;
// the label transform checks the parent. The engine asks both about every
// later resource of the deployment.
func attachToChildren(ctx context.Context, mon *monitor.Monitor, req *pulumirpc.ConstructRequest, kennel string, audit *hooks.Hook) error {
	labelFn := labelPet(req.GetName())
	_, err := transforms.RegisterStack(ctx, mon, func(ctx context.Context, args *transforms.Args) (*transforms.Result, error) {
		if string(args.Parent) != kennel {
			return nil, nil
		}
		return labelFn(ctx, args)
	}, callbacks.Name("kennel-label-stack-"+req.GetName()))
	if err != nil {
		return err
	}
	_, err = hooks.Attach(ctx, mon, hooks.ByType(PetType), &hooks.Binding{BeforeCreate: []hooks.Ref{audit}},
		callbacks.Name("kennel-attach-"+req.GetName()))
	return err
}

// registerKennel registers the component the request asks for, with the
// options of the request, as the SDK's provider.Construct would, plus own
// in its transforms. It returns the component's URN.
func registerKennel(ctx context.Context, mon *monitor.Monitor, req *pulumirpc.ConstructRequest, own []*pulumirpc.Callback) (string, error) {
	rr := &pulumirpc.RegisterResourceRequest{
		Type:                    req.GetType(),
		Name:                    req.GetName(),
		Parent:                  req.GetParent(),
		Object:                  &structpb.Struct{},
		Protect:                 req.Protect,
		Dependencies:            req.GetDependencies(),
		Providers:               req.GetProviders(),
		Aliases:                 req.GetAliases(),
		AliasSpecs:              true,
		AcceptSecrets:           true,
		AcceptResources:         true,
		AdditionalSecretOutputs: req.GetAdditionalSecretOutputs(),
		DeletedWith:             req.GetDeletedWith(),
		ReplaceWith:             req.GetReplaceWith(),
		ReplacementTrigger:      req.GetReplacementTrigger(),
		IgnoreChanges:           req.GetIgnoreChanges(),
		ReplaceOnChanges:        req.GetReplaceOnChanges(),
		RetainOnDelete:          req.RetainOnDelete,
		Transforms:              own,
	}
	if req.DeleteBeforeReplace != nil {
		rr.DeleteBeforeReplace = req.GetDeleteBeforeReplace()
		rr.DeleteBeforeReplaceDefined = true
	}
	if t := req.GetCustomTimeouts(); t != nil {
		rr.CustomTimeouts = &pulumirpc.RegisterResourceRequest_CustomTimeouts{
			Create: t.GetCreate(), Update: t.GetUpdate(), Delete: t.GetDelete(),
		}
	}
	if h := req.GetResourceHooks(); h != nil {
		rr.Hooks = &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{
			BeforeCreate: h.GetBeforeCreate(), AfterCreate: h.GetAfterCreate(),
			BeforeUpdate: h.GetBeforeUpdate(), AfterUpdate: h.GetAfterUpdate(),
			BeforeDelete: h.GetBeforeDelete(), AfterDelete: h.GetAfterDelete(),
			OnError: h.GetOnError(),
		}
	}
	resp, err := mon.Client().RegisterResource(ctx, rr)
	if err != nil {
		return "", fmt.Errorf("kennel %s: registering the component: %w", req.GetName(), err)
	}
	return resp.GetUrn(), nil
}

// labelPet returns a transform that adds kennel=<kennel> to the keepers of
// each pet. It is given in the kennel's own registration, so the engine
// asks it about the kennel and the kennel's descendants only.
func labelPet(kennel string) transforms.Func {
	return func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if args.Type != PetType {
			return nil, nil
		}
		return args.WithProperties(func(p resource.PropertyMap) {
			keepers := resource.PropertyMap{}
			if cur := p["keepers"]; cur.IsObject() {
				keepers = cur.ObjectValue().Copy()
			}
			keepers["kennel"] = resource.NewProperty(kennel)
			p["keepers"] = resource.NewProperty(keepers)
		}), nil
	}
}

// auditPet runs before each pet of a kennel is created and refuses one the
// label transform missed.
func auditPet(ctx context.Context, args *hooks.Args) error {
	keepers := args.NewInputs()["keepers"]
	if !keepers.IsObject() || !keepers.ObjectValue()["kennel"].IsString() {
		return fmt.Errorf("%s has no kennel label", args.Name)
	}
	callbacks.Info(ctx, fmt.Sprintf("%s admitted to kennel %s", args.Name, keepers.ObjectValue()["kennel"].StringValue()))
	return nil
}

// KennelComponent is the component the SDK registers.
type KennelComponent struct {
	pulumi.ResourceState

	Pets pulumi.IntOutput `pulumi:"pets"`
}

// KennelArgs are the component's inputs.
type KennelArgs struct {
	Pets pulumi.IntInput `pulumi:"pets"`
}

// buildKennel is the component in the SDK's programming model: a RandomPet
// per requested pet, each a child of the component. register registers the
// component with the engine and returns its URN; the SDK reads it back from
// the engine by that URN (pulumi.URN_) instead of registering it again.
func buildKennel(ctx *pulumi.Context, typ, name string, inputs provider.ConstructInputs,
	register func() (string, error),
) (*provider.ConstructResult, error) {
	var args struct {
		Pets int `pulumi:"pets"`
	}
	if err := inputs.CopyTo(&args); err != nil {
		return nil, fmt.Errorf("kennel %s: reading inputs: %w", name, err)
	}
	urn, err := register()
	if err != nil {
		return nil, err
	}
	comp := &KennelComponent{}
	if err := ctx.RegisterComponentResource(typ, name, comp, pulumi.URN_(urn)); err != nil {
		return nil, err
	}
	for i := range args.Pets {
		var pet pulumi.CustomResourceState
		err := ctx.RegisterResource(PetType, fmt.Sprintf("%s-pet-%d", name, i+1),
			pulumi.Map{"length": pulumi.Int(2)}, &pet, pulumi.Parent(comp))
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.RegisterResourceOutputs(comp, pulumi.Map{"pets": pulumi.Int(args.Pets)}); err != nil {
		return nil, err
	}
	return provider.NewConstructResult(comp)
}
