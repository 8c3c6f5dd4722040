package enginetest

import (
	"github.com/langhost/callbacks/enginetest/internal/engine"
)

// CheckRequest asks a provider to check a resource's inputs.
type CheckRequest = engine.CheckRequest

// CheckResponse is a provider's answer to Check.
type CheckResponse = engine.CheckResponse

// CreateRequest asks a provider to create a resource.
type CreateRequest = engine.CreateRequest

// CreateResponse is a provider's answer to Create.
type CreateResponse = engine.CreateResponse

// UpdateRequest asks a provider to update a resource in place.
type UpdateRequest = engine.UpdateRequest

// UpdateResponse is a provider's answer to Update.
type UpdateResponse = engine.UpdateResponse

// DeleteRequest asks a provider to delete a resource.
type DeleteRequest = engine.DeleteRequest

// DiffRequest asks a provider how a resource changes.
type DiffRequest = engine.DiffRequest

// DiffResponse is a provider's answer to Diff. No changed keys means no
// change. The engine adds a replacement itself when a changed key is listed
// in the resource's replaceOnChanges option.
type DiffResponse = engine.DiffResponse

// InvokeRequest asks a provider to run a function.
type InvokeRequest = engine.InvokeRequest

// InvokeResponse is a provider's answer to Invoke.
type InvokeResponse = engine.InvokeResponse

// ConstructRequest asks a provider to build a remote component. The provider
// registers the component (and its children) through Monitor, a client
// connected to the engine itself, exactly as a component provider does.
type ConstructRequest = engine.ConstructRequest

// ConstructResponse is a provider's answer to Construct.
type ConstructResponse = engine.ConstructResponse

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
// FakeProvider is safe for concurrent use if its functions are.
// Properties are in the simulator's stored form: secrets as secret
// envelopes, unknowns as the engine's unknown sentinel string, byte
// strings that are not valid UTF-8 as byte-string envelopes.
//
// OnCheck, when set, checks a custom resource's inputs, as a provider
// plugin's Check does. The engine calls it before the resource's step (in
// a preview too, and not for imports or provider resources); the inputs
// it returns (defaults applied, values normalised) replace the program's:
// they are what resource hooks, error hooks, Diff, Create and Update see
// and what the state keeps. An error fails the resource; failures are
// reported one by one, then the resource is invalid and the deployment
// fails. A nil OnCheck accepts the inputs unchanged.
type FakeProvider = engine.FakeProvider
