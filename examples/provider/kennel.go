package main

import (
	"context"
	"fmt"
	"github.com/langhost/callbacks/transforms"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
)

// The package, its component and what the component creates.
const (
	Package    = "kennel"
	Version    = "0.1.0"
	KennelType = "kennel:index:Kennel"
	PetType    = "random:index/randomPet:RandomPet"

	// AuditHook is the hook every Kennel registers under the same name,
	// with hooks.Shared: hook names are one space per deployment, so the
	// second Kennel gets the first one's hook instead of failing.
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

// Construct is the provider's ConstructFunc: it builds the component a
// program asks for, as the SDK's provider.ComponentMain calls it.
func Construct(ctx *pulumi.Context, typ, name string, inputs provider.ConstructInputs, options pulumi.ResourceOption) (*provider.ConstructResult, error) {
	if typ != KennelType {
		return nil, fmt.Errorf("kennel: unknown component type %q", typ)
	}
	var args KennelArgs
	if err := inputs.CopyTo(&args); err != nil {
		return nil, fmt.Errorf("kennel %s: reading inputs: %w", name, err)
	}
	kennel, err := NewKennel(ctx, name, &args, options)
	if err != nil {
		return nil, err
	}
	return provider.NewConstructResult(kennel)
}

// Kennel is the component.
type Kennel struct {
	pulumi.ResourceState

	Pets pulumi.IntOutput `pulumi:"pets"`
}

// KennelArgs are the component's inputs.
type KennelArgs struct {
	// Pets is how many pets the kennel houses.
	Pets int `pulumi:"pets"`
}

// NewKennel registers a kennel and its pets, a RandomPet each, labelled
// with the kennel's name and bound to the audit hook. It is a component in
// the Go SDK's shape; the provider's Construct calls it, and a Go program
// could too.
func NewKennel(ctx *pulumi.Context, name string, args *KennelArgs, opts ...pulumi.ResourceOption) (*Kennel, error) {
	if args == nil {
		args = &KennelArgs{}
	}
	mon, err := program.Monitor(ctx)
	if err != nil {
		return nil, err
	}
	audit, err := hooks.Register(ctx.Context(), mon, AuditHook, auditPet, hooks.Shared())
	if err != nil {
		return nil, err
	}

	kennel := &Kennel{}
	if err := ctx.RegisterComponentResource(KennelType, name, kennel, opts...); err != nil {
		return nil, err
	}
	for i := range args.Pets {
		var pet pulumi.CustomResourceState
		err := ctx.RegisterResource(PetType, fmt.Sprintf("%s-pet-%d", name, i+1), pulumi.Map{
			"length":  pulumi.Int(2),
			"keepers": pulumi.StringMap{"kennel": pulumi.String(name)},
		}, &pet, pulumi.Parent(kennel), program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}}))
		if err != nil {
			return nil, err
		}
	}
	kennel.Pets = pulumi.Int(args.Pets).ToIntOutput()
	if err := ctx.RegisterResourceOutputs(kennel, pulumi.Map{"pets": kennel.Pets}); err != nil {
		return nil, err
	}
	return kennel, nil
}

// auditPet runs before each pet of a kennel is created: it refuses a pet
// without its kennel's label, and reports the admission under the pet. It
// is one hook for every kennel; the pet's label says which kennel it is in.
func auditPet(ctx context.Context, args *hooks.Args) error {
	keepers := args.NewInputs()["keepers"]
	if !keepers.IsObject() || !keepers.ObjectValue()["kennel"].IsString() {
		return fmt.Errorf("%s has no kennel label", args.Name)
	}
	callbacks.Info(ctx, fmt.Sprintf("%s admitted to kennel %s", args.Name, keepers.ObjectValue()["kennel"].StringValue()))
	return nil
}
