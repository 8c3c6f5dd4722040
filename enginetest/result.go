package enginetest

import (
	"github.com/langhost/callbacks/enginetest/internal/engine"
)

// ProgramError is a program's failure as the language host reports it: its
// exit status. What the program wrote to standard error is kept beside it
// for the test, but is not part of the report: the engine shows each of its
// lines as a diagnostic of its own.
type ProgramError = engine.ProgramError

// Result is the outcome of a deployment. Its fields: State (the stack's
// state afterwards), Failed and Err (every failure, the reason first),
// ProgramErr (the program's own error), Diagnostics and Steps.
type Result = engine.Result

// Step is one step of the deployment: its Op, in the engine's own words
// ("same", "create", "update", "replace", "import", "read", "delete" or
// "delete-replaced"), the resource's URN and the step's Err.
type Step = engine.Step

// ErrProgramReported marks a program failure the program has already
// reported to the user itself, as a Go program does before it exits with
// status 32: the language host then adds no message of its own. Wrap it in
// the error given to [Engine.ProgramFailed].
var ErrProgramReported = engine.ErrProgramReported

// EventKind names what an [Event] records. An RPC from the program is
// recorded under its method's name in the ResourceMonitor or Engine
// service ("RegisterResource", "RegisterResourceHook", "Invoke",
// "SupportsFeature", "SignalAndWaitForShutdown", ...), a call to the
// provider under "Provider" and its method ("ProviderCreate",
// "ProviderDiff", ...), and what the engine does itself under the kinds
// below.
type EventKind = engine.EventKind

// KindCallback records a transform call or a state migration (its
// Callback is "resource-transform", "invoke-transform" or
// "state-migration").
const KindCallback EventKind = engine.KindCallback

// KindHook records a resource hook call (Callback "resource-hook"), or a
// hook that was skipped (Detail says why).
const KindHook EventKind = engine.KindHook

// KindErrorHook records an error hook call (Callback "error-hook").
const KindErrorHook EventKind = engine.KindErrorHook

// KindStep records the start of a step (Op says which).
const KindStep EventKind = engine.KindStep

// KindDial records the creation of a callbacks client for a target.
const KindDial EventKind = engine.KindDial

// KindLog records an Engine.Log call by the program.
const KindLog EventKind = engine.KindLog

// KindDiagnostic records a diagnostic the engine emitted itself.
const KindDiagnostic EventKind = engine.KindDiagnostic

// Event is one thing that happened during a deployment.
//
// An RPC from the program is recorded when it returns, with its request,
// response and error, so the callbacks and steps it caused come before it.
// SignalAndWaitForShutdown is the exception: it is recorded when it arrives,
// before the deletes it starts. Callback, hook and provider events are
// recorded when the call returns.
//
// Its fields: Seq, Kind, URN, Name; for a callback, Callback (its kind),
// Point (a hook's), Target and Token; for a step, Op; the Request and
// Response messages, Err and a readable Detail.
type Event = engine.Event

// Diagnostic is a message for the user: logged by the program through
// Engine.Log, a line of the program's standard error (see
// [Engine.RunCommand]), or emitted by the engine itself (hook failures,
// retries...). Its fields: Severity, URN ("" for none), Message, and
// FromProgram for what the program said rather than the engine. Its
// Severity is in the engine's own words: "debug", "info", "info#err" (a
// line of the program's standard error), "warning" or "error".
type Diagnostic = engine.Diagnostic

// State is a stack's state: what the engine keeps between deployments,
// its Resources in the order their steps completed. Get finds one by URN,
// URNs lists them and Clone copies the state; pass it to [WithState] to
// start the next deployment from it. A State is a plain value; it is not
// safe for concurrent mutation.
type State = engine.State

// ResourceState is one resource as the engine records it: URN, Type, Name,
// Custom, ID, Parent, Inputs, Outputs, Provider, and its options (DependsOn,
// PropertyDependencies, Protect, RetainOnDelete, Aliases, Hooks and the
// rest). A replaced resource whose delete has not run is kept with
// PendingDelete set.
type ResourceState = engine.ResourceState

// URNName returns the name part of a URN, or "" for a string that is not
// a URN (an event or diagnostic with no resource has URN "").
func URNName(urn string) string {
	return engine.URNName(urn)
}

// QualifiedType returns the qualified type part of a URN (the parent's type
// and the resource's, "pkg:mod:Parent$pkg:mod:Child"), or "" for a string
// that is not a URN.
func QualifiedType(urn string) string {
	return engine.QualifiedType(urn)
}
