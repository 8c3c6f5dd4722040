package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

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
// kennel's callbacks through the monitor named in the request, bound to the
// kennel's own children, then builds the component with the SDK.
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
	if err := k.bindCallbacks(ctx, req); err != nil {
		return nil, err
	}
	return provider.Construct(ctx, req, engine, buildKennel)
}

// bindCallbacks registers the audit hook and binds it, with a transform that
// labels each pet with its kennel, to the descendants of the component this
// request builds. Every Construct registers the hook under the same name:
// with hooks.Shared, the second one gets the first one's hook back.
func (k *Kennel) bindCallbacks(ctx context.Context, req *pulumirpc.ConstructRequest) error {
	mon, err := monitor.FromConstruct(req, k.srv)
	if err != nil {
		return err
	}
	// The registrations outlive the connection: the engine calls k.srv.
	defer mon.Close()

	audit, err := hooks.Register(ctx, mon, AuditHook, auditPet, hooks.Shared())
	if err != nil {
		return err
	}
	kennel, _ := mon.Component()
	if _, err := transforms.RegisterStack(ctx, mon, labelPet(resource.URN(kennel)),
		callbacks.Name("kennel-label-"+req.GetName())); err != nil {
		return err
	}
	// Through a monitor from FromConstruct, Attach binds only to the
	// component's descendants.
	_, err = hooks.Attach(ctx, mon, hooks.ByType(PetType), &hooks.Binding{BeforeCreate: []hooks.Ref{audit}},
		callbacks.Name("kennel-attach-"+req.GetName()))
	return err
}

// labelPet returns a transform that adds kennel=<name> to the keepers of
// the pets whose parent is the kennel component. Every other resource of the
// deployment is left alone.
func labelPet(kennel resource.URN) transforms.Func {
	return func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if kennel == "" || args.Parent != kennel || args.Type != PetType {
			return nil, nil
		}
		return args.WithProperties(func(p resource.PropertyMap) {
			keepers := resource.PropertyMap{}
			if cur := p["keepers"]; cur.IsObject() {
				keepers = cur.ObjectValue().Copy()
			}
			keepers["kennel"] = resource.NewProperty(kennel.Name())
			p["keepers"] = resource.NewProperty(keepers)
		}), nil
	}
}

// auditPet runs before each pet of a kennel is created and refuses one the
// label transform missed.
func auditPet(ctx context.Context, args *hooks.Args) error {
	keepers := args.NewInputs["keepers"]
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
// per requested pet, each a child of the component.
func buildKennel(ctx *pulumi.Context, typ, name string, inputs provider.ConstructInputs,
	opts pulumi.ResourceOption,
) (*provider.ConstructResult, error) {
	var args struct {
		Pets int `pulumi:"pets"`
	}
	if err := inputs.CopyTo(&args); err != nil {
		return nil, fmt.Errorf("kennel %s: reading inputs: %w", name, err)
	}
	comp := &KennelComponent{}
	if err := ctx.RegisterComponentResource(typ, name, comp, opts); err != nil {
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
