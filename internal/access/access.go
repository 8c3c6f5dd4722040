// Package access lets the packages of this module reach each other's
// plumbing without exporting it to users: the package that owns a piece of
// plumbing stores a function in one of these variables in its init, and the
// packages that need it call it through the typed getters of the owner's
// callers. The variables hold values of types this package cannot name
// without an import cycle, hence any.
package access

import "sync"

// Set by package callbacks.
var (
	// SetDryRun is func(*callbacks.Registry, bool): records whether the
	// deployment is a preview, for CallInfo.DryRun.
	SetDryRun any
	// SetCallResource is func(ctx context.Context, urn, typ, name string):
	// records which resource the current call is about.
	SetCallResource any
	// SetCallAttempt is func(ctx context.Context, attempt int): records, for
	// an error hook, how many times the operation has failed so far.
	SetCallAttempt any
	// PreparedAs is func(callbacks.Kind, func(context.Context, []byte)
	// (func(context.Context) ([]byte, error), error)) callbacks.Func: a
	// function over undecoded payloads registered as a callback of a kind,
	// in two parts: the check of the request, which the registry runs on
	// the goroutine the call arrived on, and what it returns, which calls
	// the user's function on the call's own goroutine.
	PreparedAs any
	// NewResourceHookOption is func(func(*HookConfig)) callbacks.ResourceHookOption.
	NewResourceHookOption any
	// NewHookOption is func(func(*HookConfig)) callbacks.HookOption: an
	// option for both hook kinds.
	NewHookOption any
	// ApplyHookOption is func(opt any, c *HookConfig): applies a
	// callbacks.ResourceHookOption or callbacks.ErrorHookOption to c.
	ApplyHookOption any
)

// Set by package monitor.
var (
	// MonitorNames is func(*monitor.Monitor) *Names: the hook name space of the
	// monitor's deployment.
	MonitorNames any
	// MonitorPrepare is func(context.Context, *monitor.Monitor) error: reads
	// whether the deployment is a preview and tells the monitor's server.
	MonitorPrepare any
	// MonitorAttached is func(*monitor.Monitor) *Slot: where package
	// transforms keeps the state of the monitor's attached transforms.
	MonitorAttached any
)

// Slot holds one value for its owner, made on first use.
type Slot struct {
	mu sync.Mutex
	v  any
}

// Get returns the slot's value, storing the result of create first if the
// slot is empty.
func (s *Slot) Get(create func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.v == nil {
		s.v = create()
	}
	return s.v
}

// HookConfig collects the options of a hook registration.
type HookConfig struct {
	OnDryRun       bool
	IgnoreErrors   bool
	RequireOptions bool
	Shared         bool
	// ResourceOnly names the options given that apply to resource hooks only.
	ResourceOnly []string
	// Register holds the callbacks.RegisterOption values given, in order.
	Register []any
}
