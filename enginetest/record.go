package enginetest

import (
	"fmt"
	"strings"
	"sync"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// EventKind names what an [Event] records. A call of the program to the
// engine is recorded under its method's name in the ResourceMonitor or
// Engine service ("RegisterResource", "RegisterResourceHook", "Invoke",
// "SupportsFeature", "SignalAndWaitForShutdown", ...), a call of the engine
// to the provider under "Provider" and its method ("ProviderCheck",
// "ProviderCreate", "ProviderDiff", ...), and what the engine does itself
// under the kinds below.
type EventKind string

// What the engine does itself.
const (
	// KindDial records the creation of a callbacks client for a target.
	KindDial EventKind = "Dial"
	// KindCallback records a transform call or a state migration (its
	// Callback is "resource-transform", "invoke-transform" or
	// "state-migration").
	KindCallback EventKind = "Callback"
	// KindHook records a resource hook call (Callback "resource-hook"), or
	// a hook that was skipped (Detail says why).
	KindHook EventKind = "Hook"
	// KindErrorHook records an error hook call (Callback "error-hook").
	KindErrorHook EventKind = "ErrorHook"
	// KindStep records the start of a step (Op says which).
	KindStep EventKind = "Step"
	// KindLog records an Engine.Log call by the program.
	KindLog EventKind = "Log"
	// KindDiagnostic records a diagnostic the engine emitted itself.
	KindDiagnostic EventKind = "Diagnostic"
)

// The calls of the program to the engine, and of the engine to the provider.
const (
	kindGetDeploymentInfo            EventKind = "GetDeploymentInfo"
	kindSupportsFeature              EventKind = "SupportsFeature"
	kindRegisterResource             EventKind = "RegisterResource"
	kindRegisterResourceOutputs      EventKind = "RegisterResourceOutputs"
	kindReadResource                 EventKind = "ReadResource"
	kindInvoke                       EventKind = "Invoke"
	kindRegisterStackTransform       EventKind = "RegisterStackTransform"
	kindRegisterStackInvokeTransform EventKind = "RegisterStackInvokeTransform"
	kindRegisterResourceHook         EventKind = "RegisterResourceHook"
	kindRegisterErrorHook            EventKind = "RegisterErrorHook"
	kindRegisterPackage              EventKind = "RegisterPackage"
	kindSignalAndWaitForShutdown     EventKind = "SignalAndWaitForShutdown"

	kindProviderCheck     EventKind = "ProviderCheck"
	kindProviderCreate    EventKind = "ProviderCreate"
	kindProviderUpdate    EventKind = "ProviderUpdate"
	kindProviderDelete    EventKind = "ProviderDelete"
	kindProviderDiff      EventKind = "ProviderDiff"
	kindProviderInvoke    EventKind = "ProviderInvoke"
	kindProviderConstruct EventKind = "ProviderConstruct"
)

// Callback kinds, as found in Event.Callback.
const (
	callbackResourceTransform = "resource-transform"
	callbackInvokeTransform   = "invoke-transform"
	callbackResourceHook      = "resource-hook"
	callbackErrorHook         = "error-hook"
)

// Event is one thing that happened during a deployment.
//
// An RPC from the program is recorded when it returns, with its request,
// response and error, so the callbacks and steps it caused come before it.
// SignalAndWaitForShutdown is the exception: it is recorded when it arrives,
// before the deletes it starts. Callback, hook and provider events are
// recorded when the call returns.
type Event struct {
	// Seq numbers events from 1 in the order they were recorded.
	Seq int
	// Kind says what the event records.
	Kind EventKind
	// URN is the resource's, or "" for an event about no resource.
	URN string
	// Name is the hook name (KindHook, KindErrorHook, and the kinds
	// "RegisterResourceHook" and "RegisterErrorHook"), the invoke token
	// (kind "Invoke", and KindCallback for an invoke transform) or the
	// feature id (kind "SupportsFeature").
	Name string
	// Callback is the callback kind for KindCallback, KindHook and
	// KindErrorHook; Point is the hook point ("before_create", ...,
	// "on_error"); Op is the step operation for KindStep.
	Callback string
	Point    string
	Op       string
	// Target and Token identify the callback that was called or
	// registered.
	Target string
	Token  string
	// Request and Response are the messages exchanged: the decoded callback
	// request and response for callback events, the RPC request and
	// response for RPC events. Treat them as read-only.
	Request  proto.Message
	Response proto.Message
	// Err is the error text, if the call or step failed.
	Err string
	// Detail is a short human-readable summary.
	Detail string
}

// String renders the event as one trace line.
func (ev Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d ", ev.Seq)
	switch ev.Kind {
	case KindCallback:
		fmt.Fprintf(&b, "callback %s", ev.Callback)
	case KindHook:
		fmt.Fprintf(&b, "hook %s %q", ev.Point, ev.Name)
	case KindErrorHook:
		fmt.Fprintf(&b, "error-hook %q", ev.Name)
	case KindStep:
		fmt.Fprintf(&b, "step %s", ev.Op)
	default:
		b.WriteString(string(ev.Kind))
		if ev.Name != "" {
			fmt.Fprintf(&b, " %q", ev.Name)
		}
	}
	if ev.Token != "" {
		fmt.Fprintf(&b, " token=%s", ev.Token)
	}
	if ev.Kind == KindDial || (ev.Target != "" && ev.Kind != KindCallback && ev.Kind != KindHook && ev.Kind != KindErrorHook) {
		fmt.Fprintf(&b, " target=%s", ev.Target)
	}
	if ev.URN != "" {
		fmt.Fprintf(&b, " urn=%s", ev.URN)
	}
	switch {
	case ev.Err != "":
		fmt.Fprintf(&b, " -> error: %s", ev.Err)
	case ev.Detail != "":
		fmt.Fprintf(&b, " -> %s", ev.Detail)
	}
	return b.String()
}

// Severities, as in the engine's LogSeverity, and severityInfoErr, the
// engine's severity for a line the program wrote to standard error.
const (
	severityDebug   = "debug"
	severityInfo    = "info"
	severityInfoErr = "info#err"
	severityWarning = "warning"
	severityError   = "error"
)

func severityOf(s pulumirpc.LogSeverity) string {
	switch s {
	case pulumirpc.LogSeverity_DEBUG:
		return severityDebug
	case pulumirpc.LogSeverity_WARNING:
		return severityWarning
	case pulumirpc.LogSeverity_ERROR:
		return severityError
	default:
		return severityInfo
	}
}

// Diagnostic is a message for the user: logged by the program through
// Engine.Log, a line of the program's standard error (see
// [Engine.RunCommand]), or emitted by the engine itself (hook failures,
// retries...).
type Diagnostic struct {
	// Severity is in the engine's own words: "debug", "info", "info#err"
	// (a line of the program's standard error), "warning" or "error".
	Severity string
	// URN is the resource the message is about, or "" for none.
	URN string
	// Message is the text the user sees.
	Message string
	// FromProgram is true for messages the program logged and for the
	// lines of its standard error.
	FromProgram bool
}

// String renders the diagnostic as one line: its severity, its URN if it
// has one, and its message.
func (d Diagnostic) String() string {
	if d.URN != "" {
		return fmt.Sprintf("%s: %s: %s", d.Severity, d.URN, d.Message)
	}
	return fmt.Sprintf("%s: %s", d.Severity, d.Message)
}

// recorder keeps events and diagnostics. It is safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	events []Event
	diags  []Diagnostic
}

func (r *recorder) add(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Seq = len(r.events) + 1
	r.events = append(r.events, ev)
}

func (r *recorder) diag(d Diagnostic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.diags = append(r.diags, d)
	if !d.FromProgram {
		r.events = append(r.events, Event{
			Seq:    len(r.events) + 1,
			Kind:   KindDiagnostic,
			URN:    d.URN,
			Detail: d.Severity + ": " + d.Message,
		})
	}
}

func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) diagnostics() []Diagnostic {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Diagnostic(nil), r.diags...)
}

// Events returns the events of the given kinds, in order; with no kinds,
// every event so far. The slice is a copy.
func (e *Engine) Events(kinds ...EventKind) []Event {
	if len(kinds) == 0 {
		return e.rec.snapshot()
	}
	var out []Event
	for _, ev := range e.rec.snapshot() {
		for _, k := range kinds {
			if ev.Kind == k {
				out = append(out, ev)
				break
			}
		}
	}
	return out
}

// Trace renders [Engine.Events] as text, one event a line.
func (e *Engine) Trace() string {
	var b strings.Builder
	for _, ev := range e.rec.snapshot() {
		b.WriteString(ev.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Diagnostics returns every diagnostic so far, in order.
func (e *Engine) Diagnostics() []Diagnostic { return e.rec.diagnostics() }

func (e *Engine) warn(urn, msg string) {
	e.rec.diag(Diagnostic{Severity: severityWarning, URN: urn, Message: msg})
}

func (e *Engine) errorDiag(urn, msg string) {
	e.rec.diag(Diagnostic{Severity: severityError, URN: urn, Message: msg})
}

func clonePB(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	return proto.Clone(m)
}
