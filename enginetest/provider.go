package enginetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

// CheckRequest asks a provider to check a resource's inputs.
type CheckRequest struct {
	URN, Type, Name string
	// OldInputs are the inputs in the prior state, nil for a new resource.
	OldInputs *structpb.Struct
	// NewInputs are the inputs after the transforms, with ignoreChanges
	// applied.
	NewInputs *structpb.Struct
}

// CheckResponse is a provider's answer to Check.
type CheckResponse struct {
	// Inputs are the checked inputs. Nil keeps NewInputs.
	Inputs *structpb.Struct
	// Failures, if any, make the resource invalid.
	Failures []*pulumirpc.CheckFailure
}

// CreateRequest asks a provider to create a resource.
type CreateRequest struct {
	URN, Type, Name string
	Inputs          *structpb.Struct
	// Preview is true during a preview; the provider should create nothing.
	Preview bool
	// Attempt counts calls for this step, from 1; it grows when an error
	// hook asks for a retry.
	Attempt int

	// replaces is the ID of the resource this one replaces, if any. The
	// engine's protocol does not tell a provider, so only FakeProvider's
	// default Create reads it, to give the replacement a new ID.
	replaces string
}

// CreateResponse is a provider's answer to Create.
type CreateResponse struct {
	// ID is the new resource's ID ("" in a preview).
	ID string
	// Outputs are the resource's outputs, kept in the state.
	Outputs *structpb.Struct
}

// UpdateRequest asks a provider to update a resource in place.
type UpdateRequest struct {
	URN, Type, Name, ID   string
	OldInputs, OldOutputs *structpb.Struct
	NewInputs             *structpb.Struct
	// Preview and Attempt are as in [CreateRequest].
	Preview bool
	Attempt int
}

// UpdateResponse is a provider's answer to Update.
type UpdateResponse struct {
	// Outputs are the resource's new outputs, kept in the state.
	Outputs *structpb.Struct
}

// DeleteRequest asks a provider to delete a resource.
type DeleteRequest struct {
	URN, Type, Name, ID string
	Inputs, Outputs     *structpb.Struct
	// Attempt is as in [CreateRequest].
	Attempt int
}

// DiffRequest asks a provider how a resource changes.
type DiffRequest struct {
	URN, Type, Name, ID   string
	OldInputs, OldOutputs *structpb.Struct
	NewInputs             *structpb.Struct
	// IgnoreChanges is the resource's ignoreChanges option.
	IgnoreChanges []string
}

// DiffResponse is a provider's answer to Diff. No changed keys means no
// change. The engine adds a replacement itself when a changed key is listed
// in the resource's replaceOnChanges option.
type DiffResponse struct {
	// Changed lists the top-level input keys that change.
	Changed []string
	// Replace lists the keys whose change needs a replacement; any makes
	// the step a replace.
	Replace []string
	// DeleteBeforeReplace makes a replacement delete the old resource
	// first, as the resource's own option does.
	DeleteBeforeReplace bool
}

// InvokeRequest asks a provider to run a function.
type InvokeRequest struct {
	// Token is the function's token.
	Token string
	// Args are the arguments, after the invoke transforms.
	Args *structpb.Struct
	// Provider is the reference of the provider that serves the invoke:
	// the one the options name after the invoke transforms, or the default
	// provider of the token's package.
	Provider string
}

// InvokeResponse is a provider's answer to Invoke.
type InvokeResponse struct {
	// Return is the function's result; nil is an empty one.
	Return *structpb.Struct
	// Failures are passed to the program with the result.
	Failures []*pulumirpc.CheckFailure
}

// ConstructRequest asks a provider to build a remote component. The provider
// registers the component (and its children) through Monitor, a client
// connected to the engine itself, exactly as a component provider does.
type ConstructRequest struct {
	Type, Name, Parent string
	Inputs             *structpb.Struct
	// Options are the component's options after the outer transforms.
	Options *pulumirpc.TransformResourceOptions
	// Hooks are the hook names the program bound; they fire only if the
	// provider binds them on its own registration.
	Hooks *pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	// Provider is the reference of the provider that constructs the
	// component: the one the options name, or the default provider of its
	// package, which the engine creates for it.
	Provider string
	// Monitor is a client of the engine's ResourceMonitor service.
	Monitor pulumirpc.ResourceMonitorClient
}

// ConstructResponse is a provider's answer to Construct.
type ConstructResponse struct {
	// URN is the component's, as its registration returned it.
	URN string
	// State is the component's outputs.
	State *structpb.Struct
	// PropertyDependencies lists, by output, the resources it depends on;
	// the engine adds those of the output values in State and returns them
	// to the program.
	PropertyDependencies map[string][]string
}

// FakeProvider plays the resource provider plugin behind every custom
// resource and invoke, built from optional functions. A nil function gets
// the default behaviour:
//   - Create: ID "<name>-id" (empty in preview), outputs equal to inputs;
//     a resource that replaces another gets an ID of its own:
//     "<name>-id-2" replaces "<name>-id", "<name>-id-3" replaces
//     "<name>-id-2", and so on;
//   - Update: outputs equal to the new inputs;
//   - Delete: succeeds;
//   - Diff: the top-level keys that differ, minus ignored ones; a change
//     of "keepers" replaces the resource and any other change updates it
//     in place, as in pulumi-random (and the stand-in provider of the
//     module's integration tests);
//   - Invoke: returns the arguments;
//   - Check: accepts the inputs unchanged;
//   - Construct: registers the component with the given type, name, parent
//     and inputs, then its outputs (equal to its inputs).
//
// The engine calls the functions from many goroutines at once: a
// FakeProvider is safe for concurrent use if its functions are. A nil
// *FakeProvider behaves as a zero one.
//
// Properties are in the simulator's stored form, as in [ResourceState]:
// a secret is the envelope {"4dabf18193072939515e22adb298388d":
// "1b47061264138c4ac30d75fd1eb44270", "value": v}, an unknown is the
// string "04da6b54-80e4-46f7-96ec-b56ff0331ba9", and a string whose bytes
// are not valid UTF-8 is a byte-string envelope.
type FakeProvider struct {
	// OnCheck checks a custom resource's inputs, as a provider plugin's
	// Check does. The engine calls it before the resource's step (in a
	// preview too, and not for imports or provider resources); the inputs
	// it returns (defaults applied, values normalised) replace the
	// program's: they are what resource hooks, error hooks, Diff, Create
	// and Update see and what the state keeps. An error fails the
	// resource; failures are reported one by one, then the resource is
	// invalid and the deployment fails.
	OnCheck func(ctx context.Context, req *CheckRequest) (*CheckResponse, error)
	// OnCreate creates a custom resource, or, in a preview, says what it
	// would be.
	OnCreate func(ctx context.Context, req *CreateRequest) (*CreateResponse, error)
	// OnUpdate updates a custom resource in place.
	OnUpdate func(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error)
	// OnDelete deletes a custom resource.
	OnDelete func(ctx context.Context, req *DeleteRequest) error
	// OnDiff says how a custom resource in the prior state changes.
	OnDiff func(ctx context.Context, req *DiffRequest) (*DiffResponse, error)
	// OnInvoke runs a function for an Invoke of the program.
	OnInvoke func(ctx context.Context, req *InvokeRequest) (*InvokeResponse, error)
	// OnConstruct builds a remote component (a registration with
	// remote=true).
	OnConstruct func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error)
}

// check is the provider's Check: OnCheck, or the inputs unchanged.
func (p *FakeProvider) check(ctx context.Context, req *CheckRequest) (*CheckResponse, error) {
	if p != nil && p.OnCheck != nil {
		return p.OnCheck(ctx, req)
	}
	return &CheckResponse{Inputs: cloneStruct(req.NewInputs)}, nil
}

// create is the provider's Create: OnCreate, or the default.
func (p *FakeProvider) create(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
	if p != nil && p.OnCreate != nil {
		return p.OnCreate(ctx, req)
	}
	id := req.Name + "-id"
	switch {
	case req.Preview:
		id = ""
	case req.replaces != "":
		id = replacementID(req.Name, req.replaces)
	}
	return &CreateResponse{ID: id, Outputs: cloneStruct(emptyIfNil(req.Inputs))}, nil
}

// update is the provider's Update: OnUpdate, or the default.
func (p *FakeProvider) update(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error) {
	if p != nil && p.OnUpdate != nil {
		return p.OnUpdate(ctx, req)
	}
	return &UpdateResponse{Outputs: cloneStruct(emptyIfNil(req.NewInputs))}, nil
}

// delete is the provider's Delete: OnDelete, or success.
func (p *FakeProvider) delete(ctx context.Context, req *DeleteRequest) error {
	if p != nil && p.OnDelete != nil {
		return p.OnDelete(ctx, req)
	}
	return nil
}

// diff is the provider's Diff: OnDiff, or the default.
func (p *FakeProvider) diff(ctx context.Context, req *DiffRequest) (*DiffResponse, error) {
	if p != nil && p.OnDiff != nil {
		return p.OnDiff(ctx, req)
	}
	var changed []string
	for _, k := range changedKeys(req.OldInputs, req.NewInputs) {
		if !slices.Contains(req.IgnoreChanges, k) {
			changed = append(changed, k)
		}
	}
	resp := &DiffResponse{Changed: changed}
	if slices.Contains(changed, replacingKey) {
		resp.Replace = []string{replacingKey}
	}
	return resp, nil
}

// replacingKey is the input whose change makes FakeProvider's default Diff
// replace a resource.
const replacingKey = "keepers"

// replacementID is the ID FakeProvider's default Create gives a resource
// named name that replaces the one with ID old.
func replacementID(name, old string) string {
	n := 2
	if s, ok := strings.CutPrefix(old, name+"-id-"); ok {
		if k, err := strconv.Atoi(s); err == nil && k >= 2 {
			n = k + 1
		}
	}
	return name + "-id-" + strconv.Itoa(n)
}

// invoke is the provider's Invoke: OnInvoke, or the arguments.
func (p *FakeProvider) invoke(ctx context.Context, req *InvokeRequest) (*InvokeResponse, error) {
	if p != nil && p.OnInvoke != nil {
		return p.OnInvoke(ctx, req)
	}
	return &InvokeResponse{Return: cloneStruct(emptyIfNil(req.Args))}, nil
}

// construct is the provider's Construct: OnConstruct, or the default.
func (p *FakeProvider) construct(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
	if p != nil && p.OnConstruct != nil {
		return p.OnConstruct(ctx, req)
	}
	resp, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
		Type:            req.Type,
		Name:            req.Name,
		Parent:          req.Parent,
		Object:          req.Inputs,
		AcceptSecrets:   true,
		AcceptResources: true,
	})
	if err != nil {
		return nil, fmt.Errorf("registering component %s: %w", req.Name, err)
	}
	if _, err := req.Monitor.RegisterResourceOutputs(ctx, &pulumirpc.RegisterResourceOutputsRequest{
		Urn:     resp.GetUrn(),
		Outputs: req.Inputs,
	}); err != nil {
		return nil, fmt.Errorf("registering component outputs %s: %w", req.Name, err)
	}
	return &ConstructResponse{URN: resp.GetUrn(), State: cloneStruct(emptyIfNil(req.Inputs))}, nil
}
