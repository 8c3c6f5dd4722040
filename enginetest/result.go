package enginetest

import (
	"github.com/langhost/callbacks/enginetest/internal/engine"
)

// ProgramError is a program's failure as the language host reports it: its
// exit status. What the program wrote to standard error is kept beside it
// for the test, but is not part of the report: the engine shows each of its
// lines as a diagnostic of its own.
type ProgramError = engine.ProgramError

// Result is the outcome of a deployment.
type Result = engine.Result

// Step is one step of the deployment.
type Step = engine.Step

// Op is a step operation.
type Op = engine.Op

const OpSame = engine.OpSame

const OpCreate = engine.OpCreate

const OpUpdate = engine.OpUpdate

const OpReplace = engine.OpReplace

const OpImport = engine.OpImport

const OpRead = engine.OpRead

const OpDelete = engine.OpDelete

const OpDeleteReplaced = engine.OpDeleteReplaced

// ErrProgramReported marks a program failure the program has already
// reported to the user itself, as a Go program does before it exits with
// status 32: the language host then adds no message of its own. Wrap it in
// the error given to [Engine.ProgramFailed].
var ErrProgramReported = engine.ErrProgramReported

// CallbackStateMigration is the Event.Callback of a state migration call.
const CallbackStateMigration = engine.CallbackStateMigration

// EventKind names what an [Event] records.
type EventKind = engine.EventKind

const KindGetDeploymentInfo = engine.KindGetDeploymentInfo

const KindSupportsFeature = engine.KindSupportsFeature

const KindRegisterResource = engine.KindRegisterResource

const KindRegisterResourceOutputs = engine.KindRegisterResourceOutputs

const KindReadResource = engine.KindReadResource

const KindInvoke = engine.KindInvoke

const KindRegisterStackTransform = engine.KindRegisterStackTransform

const KindRegisterStackInvokeTransform = engine.KindRegisterStackInvokeTransform

const KindRegisterResourceHook = engine.KindRegisterResourceHook

const KindRegisterErrorHook = engine.KindRegisterErrorHook

const KindRegisterPackage = engine.KindRegisterPackage

const KindSignalAndWaitForShutdown = engine.KindSignalAndWaitForShutdown

// KindDial records the creation of a callbacks client for a target.
const KindDial = engine.KindDial

// KindCallback records a transform call (Callback is
// "resource-transform" or "invoke-transform").
const KindCallback = engine.KindCallback

// KindHook records a resource hook call, or a hook that was skipped
// (Detail says why).
const KindHook = engine.KindHook

// KindErrorHook records an error hook call.
const KindErrorHook = engine.KindErrorHook

// KindStep records the start of a step (Op says which).
const KindStep = engine.KindStep

const KindProviderCheck = engine.KindProviderCheck

const KindProviderCreate = engine.KindProviderCreate

const KindProviderUpdate = engine.KindProviderUpdate

const KindProviderDelete = engine.KindProviderDelete

const KindProviderDiff = engine.KindProviderDiff

const KindProviderInvoke = engine.KindProviderInvoke

const KindProviderConstruct = engine.KindProviderConstruct

// KindLog records an Engine.Log call by the program.
const KindLog = engine.KindLog

// KindDiagnostic records a diagnostic the engine emitted itself.
const KindDiagnostic = engine.KindDiagnostic

const CallbackResourceTransform = engine.CallbackResourceTransform

const CallbackInvokeTransform = engine.CallbackInvokeTransform

const CallbackResourceHook = engine.CallbackResourceHook

const CallbackErrorHook = engine.CallbackErrorHook

// Event is one thing that happened during a deployment.
//
// An RPC from the program is recorded when it returns, with its request,
// response and error, so the callbacks and steps it caused come before it.
// SignalAndWaitForShutdown is the exception: it is recorded when it arrives,
// before the deletes it starts. Callback, hook and provider events are
// recorded when the call returns.
type Event = engine.Event

// Severity is a diagnostic's level.
type Severity = engine.Severity

const SeverityDebug = engine.SeverityDebug

const SeverityInfo = engine.SeverityInfo

const SeverityInfoErr = engine.SeverityInfoErr

const SeverityWarning = engine.SeverityWarning

const SeverityError = engine.SeverityError

// Diagnostic is a message for the user: logged by the program through
// Engine.Log, a line of the program's standard error (see
// [Engine.RunCommand]), or emitted by the engine itself (hook failures,
// retries...).
type Diagnostic = engine.Diagnostic

// RootStackType is the type of the stack's root component resource.
const RootStackType = engine.RootStackType

// State is a stack's state: what the engine keeps between deployments.
// A State is a plain value; it is not safe for concurrent mutation.
type State = engine.State

// ResourceState is one resource as the engine records it.
type ResourceState = engine.ResourceState

// QualifiedType returns the qualified type part of a URN.
func QualifiedType(urn string) string {
	return engine.QualifiedType(urn)
}

// URNName returns the name part of a URN.
func URNName(urn string) string {
	return engine.URNName(urn)
}
