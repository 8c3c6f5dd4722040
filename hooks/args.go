package hooks

import (
	"fmt"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// Args is what a resource hook is told about the resource it runs for.
//
// Which values are set depends on the point the hook is bound at:
//
//	point          ID      NewInputs OldInputs NewOutputs OldOutputs NewOptions OldOptions
//	BeforeCreate   ""      yes       -         -          -          yes        -
//	AfterCreate    yes(1)  yes       -         yes        -          yes        -
//	BeforeUpdate   old ID  yes       yes       -          yes        yes        yes
//	AfterUpdate    yes     yes       yes       yes        yes        yes        yes
//	BeforeDelete   old ID  -         yes       -          yes        -          yes
//	AfterDelete    old ID  -         yes       -          yes        -          yes
//
// (1) "" in a preview, where outputs may also be unknown. The options are
// nil on engines without the SENDS_OPTIONS_TO_HOOKS feature (see
// monitor.Monitor.Supports).
//
// The property maps are methods: they stay encoded until a hook reads
// them, so a hook that looks only at the URN does not pay for decoding
// them. They were checked when the request arrived, so a request that would
// not decode never reaches the hook, whether it reads them or not. The
// options are converted when the request arrives. Property values arrive exactly as the engine sent them: secrets are
// [resource.Secret] values rather than JSON envelopes, unknowns are
// [resource.Computed], resource references and output values (with their
// dependencies) keep their kind, and binary strings keep their bytes. A map
// is nil when the request did not carry it.
//
// A test of a hook function builds Args with [NewArgs] or [DecodeArgs]. An
// Args is not safe
// for concurrent use.
type Args struct {
	// URN is the resource's URN.
	URN resource.URN
	// ID is the resource's provider ID; see the table for when it is set.
	ID resource.ID
	// Name is the resource's name.
	Name string
	// Type is the type token, such as "aws:s3/bucket:Bucket".
	Type string

	newInputs, oldInputs, newOutputs, oldOutputs wire.Lazy
	newOptions, oldOptions                       *transforms.ResourceOptions
}

// NewInputs returns the inputs of this deployment, decoding them on the
// first call; nil when the request did not carry them.
func (a *Args) NewInputs() resource.PropertyMap { return inputs(&a.newInputs) }

// OldInputs returns the inputs recorded in the state, decoding them on the
// first call; nil when the request did not carry them.
func (a *Args) OldInputs() resource.PropertyMap { return inputs(&a.oldInputs) }

// NewOutputs returns the outputs the provider just returned, decoding them
// on the first call; nil when the request did not carry them.
func (a *Args) NewOutputs() resource.PropertyMap { return inputs(&a.newOutputs) }

// OldOutputs returns the outputs recorded in the state, decoding them on the
// first call; nil when the request did not carry them.
func (a *Args) OldOutputs() resource.PropertyMap { return inputs(&a.oldOutputs) }

// NewOptions returns the resource's options in this deployment; nil when
// the request did not carry them.
func (a *Args) NewOptions() *transforms.ResourceOptions { return a.newOptions }

// OldOptions returns the resource's options recorded in the
// state; nil when the request did not carry them.
func (a *Args) OldOptions() *transforms.ResourceOptions { return a.oldOptions }

// err is why a map the hook read did not decode, if one did
// not: they were checked when the request arrived, so this should never
// happen.
func (a *Args) err() error {
	return firstErr(
		named{"new_inputs", a.newInputs.Err()}, named{"old_inputs", a.oldInputs.Err()},
		named{"new_outputs", a.newOutputs.Err()}, named{"old_outputs", a.oldOutputs.Err()},
	)
}

type named struct {
	name string
	err  error
}

func firstErr(errs ...named) error {
	for _, e := range errs {
		if e.err != nil {
			return fmt.Errorf("%s: %w", e.name, e.err)
		}
	}
	return nil
}

// Operation is the provider operation an error hook runs after.
type Operation string

// The operations whose failure runs error hooks. The engine runs them for
// create, update and delete; the protocol also names read.
const (
	OperationCreate Operation = "create"
	OperationUpdate Operation = "update"
	OperationDelete Operation = "delete"
	OperationRead   Operation = "read"
)

// ErrorArgs is what an error hook is told when the provider fails to create,
// update or delete a resource. The engine calls error hooks only for custom
// resources. It calls them in a preview too: there it asks the provider to
// preview the create and the update (and never deletes), and a failed
// preview of either runs the error hooks, whose answer retries it.
//
// Create failures carry NewInputs and NewOptions; update failures carry both
// inputs, OldOutputs and both option sets; delete failures carry OldInputs,
// OldOutputs and OldOptions. The maps are methods that decode on first use,
// as in [Args], and are checked the same way; the options are decoded with
// the request.
type ErrorArgs struct {
	// URN is the resource's URN.
	URN resource.URN
	// ID is the resource's provider ID, empty for a failed create.
	ID resource.ID
	// Name is the resource's name.
	Name string
	// Type is the type token, such as "aws:s3/bucket:Bucket".
	Type string

	// FailedOperation is the provider operation that failed.
	FailedOperation Operation
	// Errors holds every failure message of this step so far, newest first.
	Errors []string

	newInputs, oldInputs, oldOutputs wire.Lazy
	newOptions, oldOptions           *transforms.ResourceOptions
}

// Attempt returns how many times the operation has failed so far: 1 on the
// first failure. The engine tries an operation at most 100 times.
func (a *ErrorArgs) Attempt() int { return len(a.Errors) }

// LastError returns the newest failure message, or "" if there is none.
func (a *ErrorArgs) LastError() string {
	if len(a.Errors) == 0 {
		return ""
	}
	return a.Errors[0]
}

// NewInputs returns the inputs of this deployment (create, update), decoding
// them on the first call; nil when the request did not carry them.
func (a *ErrorArgs) NewInputs() resource.PropertyMap { return inputs(&a.newInputs) }

// OldInputs returns the inputs recorded in the state (update, delete),
// decoding them on the first call; nil when the request did not carry them.
func (a *ErrorArgs) OldInputs() resource.PropertyMap { return inputs(&a.oldInputs) }

// OldOutputs returns the outputs recorded in the state (update, delete),
// decoding them on the first call; nil when the request did not carry them.
func (a *ErrorArgs) OldOutputs() resource.PropertyMap { return inputs(&a.oldOutputs) }

// NewOptions returns the resource's options in this deployment; nil when
// the request did not carry them.
func (a *ErrorArgs) NewOptions() *transforms.ResourceOptions { return a.newOptions }

// OldOptions returns the resource's options recorded in the
// state; nil when the request did not carry them.
func (a *ErrorArgs) OldOptions() *transforms.ResourceOptions { return a.oldOptions }

func (a *ErrorArgs) err() error {
	return firstErr(
		named{"new_inputs", a.newInputs.Err()}, named{"old_inputs", a.oldInputs.Err()},
		named{"old_outputs", a.oldOutputs.Err()},
	)
}

// State is one side of what a hook is told about its resource: the inputs,
// outputs and options of this deployment (new) or of the state (old). A nil
// map or option set is one the engine did not send.
type State struct {
	Inputs  resource.PropertyMap
	Outputs resource.PropertyMap
	Options *transforms.ResourceOptions
}

// NewArgs returns the Args a hook is given for the resource urn, whose name
// and type it takes from urn, with id and the new and old state; see the
// table of [Args] for what each point carries. It is for tests of a hook
// function, as httptest.NewRequest is for handlers: the maps and options
// are the hook's own, used as given.
func NewArgs(urn resource.URN, id resource.ID, newState, oldState State) *Args {
	a := &Args{URN: urn, ID: id, Name: urn.Name(), Type: string(urn.Type())}
	a.newInputs.Set(newState.Inputs)
	a.newOutputs.Set(newState.Outputs)
	a.oldInputs.Set(oldState.Inputs)
	a.oldOutputs.Set(oldState.Outputs)
	a.newOptions, a.oldOptions = newState.Options, oldState.Options
	return a
}

// NewErrorArgs returns the ErrorArgs an error hook is given when op failed
// for the resource urn with errs (newest first), as [NewArgs] does for a
// resource hook. An error hook is not told new outputs: newState.Outputs
// is ignored.
func NewErrorArgs(urn resource.URN, id resource.ID, op Operation, errs []string, newState, oldState State) *ErrorArgs {
	a := &ErrorArgs{URN: urn, ID: id, Name: urn.Name(), Type: string(urn.Type()), FailedOperation: op, Errors: errs}
	a.newInputs.Set(newState.Inputs)
	a.oldInputs.Set(oldState.Inputs)
	a.oldOutputs.Set(oldState.Outputs)
	a.newOptions, a.oldOptions = newState.Options, oldState.Options
	return a
}

// DecodeArgs returns the Args a hook is given for req, decoded as a
// registered hook decodes the engine's request, so it accepts and refuses
// what the hook would. It is for tests of a hook function with a request
// recorded by the engine simulator (enginetest.Event.Request) or built by
// hand.
func DecodeArgs(req *pulumirpc.ResourceHookRequest) (*Args, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return decodePayload(b, true) // the encoding belongs to this call alone
}
