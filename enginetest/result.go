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

// Step is one step of the deployment: its Op, the resource's URN and the
// step's Err.
type Step = engine.Step

// Op is a step operation.
type Op = engine.Op

const OpSame Op = engine.OpSame

const OpCreate Op = engine.OpCreate

const OpUpdate Op = engine.OpUpdate

const OpReplace Op = engine.OpReplace

const OpImport Op = engine.OpImport

const OpRead Op = engine.OpRead

const OpDelete Op = engine.OpDelete

const OpDeleteReplaced Op = engine.OpDeleteReplaced

// ErrProgramReported marks a program failure the program has already
// reported to the user itself, as a Go program does before it exits with
// status 32: the language host then adds no message of its own. Wrap it in
// the error given to [Engine.ProgramFailed].
var ErrProgramReported = engine.ErrProgramReported

// CallbackStateMigration is the Event.Callback of a state migration call.
const CallbackStateMigration = engine.CallbackStateMigration

// EventKind names what an [Event] records.
type EventKind = engine.EventKind

const KindGetDeploymentInfo EventKind = engine.KindGetDeploymentInfo

const KindSupportsFeature EventKind = engine.KindSupportsFeature

const KindRegisterResource EventKind = engine.KindRegisterResource

const KindRegisterResourceOutputs EventKind = engine.KindRegisterResourceOutputs

const KindReadResource EventKind = engine.KindReadResource

const KindInvoke EventKind = engine.KindInvoke

const KindRegisterStackTransform EventKind = engine.KindRegisterStackTransform

const KindRegisterStackInvokeTransform EventKind = engine.KindRegisterStackInvokeTransform

const KindRegisterResourceHook EventKind = engine.KindRegisterResourceHook

const KindRegisterErrorHook EventKind = engine.KindRegisterErrorHook

const KindRegisterPackage EventKind = engine.KindRegisterPackage

const KindSignalAndWaitForShutdown EventKind = engine.KindSignalAndWaitForShutdown

// KindDial records the creation of a callbacks client for a target.
const KindDial EventKind = engine.KindDial

// KindCallback records a transform call (Callback is
// "resource-transform" or "invoke-transform").
const KindCallback EventKind = engine.KindCallback

// KindHook records a resource hook call, or a hook that was skipped
// (Detail says why).
const KindHook EventKind = engine.KindHook

// KindErrorHook records an error hook call.
const KindErrorHook EventKind = engine.KindErrorHook

// KindStep records the start of a step (Op says which).
const KindStep EventKind = engine.KindStep

const KindProviderCheck EventKind = engine.KindProviderCheck

const KindProviderCreate EventKind = engine.KindProviderCreate

const KindProviderUpdate EventKind = engine.KindProviderUpdate

const KindProviderDelete EventKind = engine.KindProviderDelete

const KindProviderDiff EventKind = engine.KindProviderDiff

const KindProviderInvoke EventKind = engine.KindProviderInvoke

const KindProviderConstruct EventKind = engine.KindProviderConstruct

// KindLog records an Engine.Log call by the program.
const KindLog EventKind = engine.KindLog

// KindDiagnostic records a diagnostic the engine emitted itself.
const KindDiagnostic EventKind = engine.KindDiagnostic

// Callback kinds, as found in Event.Callback.
const (
	CallbackResourceTransform = engine.CallbackResourceTransform
	CallbackInvokeTransform   = engine.CallbackInvokeTransform
	CallbackResourceHook      = engine.CallbackResourceHook
	CallbackErrorHook         = engine.CallbackErrorHook
)

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

// Severity is a diagnostic's level.
type Severity = engine.Severity

const SeverityDebug Severity = engine.SeverityDebug

const SeverityInfo Severity = engine.SeverityInfo

const SeverityInfoErr Severity = engine.SeverityInfoErr

const SeverityWarning Severity = engine.SeverityWarning

const SeverityError Severity = engine.SeverityError

// Diagnostic is a message for the user: logged by the program through
// Engine.Log, a line of the program's standard error (see
// [Engine.RunCommand]), or emitted by the engine itself (hook failures,
// retries...). Its fields: Severity, URN ("" for none), Message, and
// FromProgram for what the program said rather than the engine.
type Diagnostic = engine.Diagnostic

// RootStackType is the type of the stack's root component resource.
const RootStackType = engine.RootStackType

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

// QualifiedType returns the qualified type part of a URN.
func QualifiedType(urn string) string {
	return engine.QualifiedType(urn)
}

// URNName returns the name part of a URN.
func URNName(urn string) string {
	return engine.URNName(urn)
}
