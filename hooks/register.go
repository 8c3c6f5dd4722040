package hooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// Hook is a resource hook registered with the engine under a name. Bind it
// to resources through a [Binding]. A Hook is immutable and safe for
// concurrent use.
type Hook struct {
	name            string
	callback        *pulumirpc.Callback
	onDryRun        bool
	ignoreErrors    bool
	receivesOptions bool
}

// Name returns the name the hook is registered under.
func (h *Hook) Name() string { return h.HookName() }

// HookName returns the hook's name, so that a *Hook is a [Ref]. It returns
// "" for a nil Hook.
func (h *Hook) HookName() string {
	if h == nil {
		return ""
	}
	return h.name
}

// Callback returns a copy of the callback the engine was given.
func (h *Hook) Callback() *pulumirpc.Callback { return proto.CloneOf(h.callback) }

// OnDryRun reports whether the hook also runs in previews.
func (h *Hook) OnDryRun() bool { return h.onDryRun }

// IgnoreErrors reports whether the hook's failures are only warnings.
func (h *Hook) IgnoreErrors() bool { return h.ignoreErrors }

// ReceivesOptions reports whether the engine sends resource options to hooks
// (the SENDS_OPTIONS_TO_HOOKS feature). Without it, [Args].NewOptions and
// OldOptions are always nil.
func (h *Hook) ReceivesOptions() bool { return h.receivesOptions }

// ErrorHook is an error hook registered with the engine under a name. Bind it
// to resources with [Binding].OnError. An ErrorHook is immutable and safe
// for concurrent use.
type ErrorHook struct {
	name            string
	callback        *pulumirpc.Callback
	receivesOptions bool
}

// Name returns the name the hook is registered under.
func (h *ErrorHook) Name() string { return h.HookName() }

// HookName returns the hook's name, so that an *ErrorHook is a [Ref]. It
// returns "" for a nil ErrorHook.
func (h *ErrorHook) HookName() string {
	if h == nil {
		return ""
	}
	return h.name
}

// Callback returns a copy of the callback the engine was given.
func (h *ErrorHook) Callback() *pulumirpc.Callback { return proto.CloneOf(h.callback) }

// ReceivesOptions reports whether the engine sends resource options to hooks;
// see [Hook.ReceivesOptions].
func (h *ErrorHook) ReceivesOptions() bool { return h.receivesOptions }

// Option configures [Register] or [RegisterErrorHook].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	onDryRun       bool
	ignoreErrors   bool
	requireOptions bool
	callbackOpts   []callbacks.RegisterOption
	resourceOnly   []string // names of options that error hooks refuse
}

// OnDryRun makes the hook run in previews too. Default: the engine skips the
// hook in previews. In a preview, IDs are empty and outputs may be unknown.
// Resource hooks only.
func OnDryRun() Option {
	return optionFunc(func(c *config) {
		c.onDryRun = true
		c.resourceOnly = append(c.resourceOnly, "OnDryRun")
	})
}

// IgnoreErrors makes the engine report the hook's failures as warnings,
// `<Point> hook "NAME" failed: MSG`, and carry on. Default: a failure fails
// the step. Resource hooks only.
func IgnoreErrors() Option {
	return optionFunc(func(c *config) {
		c.ignoreErrors = true
		c.resourceOnly = append(c.resourceOnly, "IgnoreErrors")
	})
}

// RequireOptions makes registration fail on engines that do not send
// resource options to hooks (SENDS_OPTIONS_TO_HOOKS), for hooks that depend
// on them. Default: register anyway; the options are then nil, and
// [Hook.ReceivesOptions] says so.
func RequireOptions() Option { return optionFunc(func(c *config) { c.requireOptions = true }) }

// CallbackOptions passes options to [callbacks.Server.Register], such as
// [callbacks.Timeout] or [callbacks.FailOpen]. The registration is named
// after the hook unless these options name it otherwise.
func CallbackOptions(opts ...callbacks.RegisterOption) Option {
	return optionFunc(func(c *config) { c.callbackOpts = append(c.callbackOpts, opts...) })
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// Register registers fn as a resource hook named name: it checks that the
// engine supports resource hooks, claims the name in mon's hook name space,
// stores fn on srv and tells the engine. It also tells srv whether the
// deployment is a preview (see [Func]). Bind the returned hook to resources
// with a [Binding] (or [Attach]); the same hook can be bound to any number of
// resources, and [Lookup] finds it again by name.
//
// Names are unique per deployment, shared with error hooks: registering a
// taken name is an error that says where the name was first registered,
// returned before the engine is asked.
//
// The engine runs delete hooks by name, in the run that deletes the
// resource: when a resource leaves the program, its delete hooks run after
// the program calls [monitor.Monitor.SignalAndWaitForShutdown], using
// whatever hook is registered under the bound name in that run. So a program
// must keep registering every hook that resources in its state are bound to
// (with the same name; the function may change), and keep srv serving until
// SignalAndWaitForShutdown returns ([monitor.Monitor.Finish] does both in
// order). A missing before-delete hook fails the delete.
//
// If any step fails, nothing is left behind: the callback is unregistered
// and the name released.
func Register(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor, name string, fn Func, opts ...Option) (*Hook, error) {
	cfg := newConfig(opts)
	fail := func(err error) (*Hook, error) {
		return nil, fmt.Errorf("hooks: registering resource hook %q: %w", name, err)
	}
	if err := checkArgs(srv, mon, name, fn == nil); err != nil {
		return fail(err)
	}
	receives, err := prepare(ctx, srv, mon, monitor.ResourceHooks, cfg.requireOptions)
	if err != nil {
		return fail(err)
	}
	cb, err := srv.Register(Adapt(fn), registerOptions(name, cfg)...)
	if err != nil {
		return fail(err)
	}
	h := &Hook{name: name, callback: cb, onDryRun: cfg.onDryRun, ignoreErrors: cfg.ignoreErrors, receivesOptions: receives}
	if err := reserve(mon, name, h); err != nil {
		srv.Unregister(cb.GetToken())
		return fail(err)
	}
	_, err = mon.Client().RegisterResourceHook(ctx, &pulumirpc.RegisterResourceHookRequest{
		Name: name, Callback: cb, OnDryRun: cfg.onDryRun, IgnoreErrors: cfg.ignoreErrors,
	})
	if err != nil {
		srv.Unregister(cb.GetToken())
		mon.ReleaseName(name)
		return fail(fmt.Errorf("the engine refused it: %w", err))
	}
	return h, nil
}

// RegisterErrorHook registers fn as an error hook named name, the way
// [Register] registers resource hooks: it checks the ERROR_HOOKS feature,
// claims the name in the name space error hooks share with resource hooks,
// and tells the engine. Bind the hook with [Binding].OnError. [OnDryRun] and
// [IgnoreErrors] do not apply to error hooks and make it fail.
func RegisterErrorHook(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor, name string, fn ErrorFunc, opts ...Option) (*ErrorHook, error) {
	cfg := newConfig(opts)
	fail := func(err error) (*ErrorHook, error) {
		return nil, fmt.Errorf("hooks: registering error hook %q: %w", name, err)
	}
	if len(cfg.resourceOnly) > 0 {
		return fail(fmt.Errorf("option %s applies only to resource hooks", cfg.resourceOnly[0]))
	}
	if err := checkArgs(srv, mon, name, fn == nil); err != nil {
		return fail(err)
	}
	receives, err := prepare(ctx, srv, mon, monitor.ErrorHooks, cfg.requireOptions)
	if err != nil {
		return fail(err)
	}
	cb, err := srv.Register(AdaptError(fn), registerOptions(name, cfg)...)
	if err != nil {
		return fail(err)
	}
	h := &ErrorHook{name: name, callback: cb, receivesOptions: receives}
	if err := reserve(mon, name, h); err != nil {
		srv.Unregister(cb.GetToken())
		return fail(err)
	}
	_, err = mon.Client().RegisterErrorHook(ctx, &pulumirpc.RegisterErrorHookRequest{Name: name, Callback: cb})
	if err != nil {
		srv.Unregister(cb.GetToken())
		mon.ReleaseName(name)
		return fail(fmt.Errorf("the engine refused it: %w", err))
	}
	return h, nil
}

// Lookup returns the resource hook registered under name through mon, so
// that code that did not register it (another component, a later part of
// the program) can bind the same hook instead of registering the name again.
// A hook whose registration is still in flight is found too; if the engine
// then refuses it, binding its name fails the step that runs it.
func Lookup(mon *monitor.Monitor, name string) (*Hook, bool) {
	v, _ := mon.Named(name)
	h, ok := v.(*Hook)
	return h, ok
}

// LookupErrorHook returns the error hook registered under name through mon.
func LookupErrorHook(mon *monitor.Monitor, name string) (*ErrorHook, bool) {
	v, _ := mon.Named(name)
	h, ok := v.(*ErrorHook)
	return h, ok
}

func checkArgs(srv *callbacks.Server, mon *monitor.Monitor, name string, nilFunc bool) error {
	switch {
	case name == "":
		return errors.New("a hook name cannot be empty")
	case nilFunc:
		return callbacks.ErrNilFunc
	case srv == nil:
		return errors.New("no callback server")
	case mon == nil:
		return errors.New("no monitor")
	}
	return nil
}

// checkFeatures requires the hook kind's feature, and SENDS_OPTIONS_TO_HOOKS
// if asked to; it reports whether hooks will receive options.
func checkFeatures(ctx context.Context, mon *monitor.Monitor, kind monitor.Feature, requireOptions bool) (bool, error) {
	required := []monitor.Feature{kind}
	if requireOptions {
		required = append(required, monitor.SendsOptionsToHooks)
	}
	if err := mon.Require(ctx, required...); err != nil {
		return false, err
	}
	return mon.Supports(ctx, monitor.SendsOptionsToHooks)
}

// prepare checks the engine's features and tells srv whether the deployment
// is a preview, for [callbacks.CallInfo].DryRun. It reports whether hooks will
// receive options.
func prepare(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor, kind monitor.Feature, requireOptions bool) (bool, error) {
	receives, err := checkFeatures(ctx, mon, kind, requireOptions)
	if err != nil {
		return false, err
	}
	if err := mon.Attach(ctx, srv); err != nil {
		return false, err
	}
	return receives, nil
}

func registerOptions(name string, cfg config) []callbacks.RegisterOption {
	return append([]callbacks.RegisterOption{callbacks.Name(name)}, cfg.callbackOpts...)
}

// reserve claims name for h, saying in the error what the name is taken by.
func reserve(mon *monitor.Monitor, name string, h any) error {
	err := mon.ReserveName(name, h)
	if err == nil {
		return nil
	}
	if !errors.Is(err, monitor.ErrNameTaken) {
		return err
	}
	what := "another registration"
	switch v, _ := mon.Named(name); v.(type) {
	case *Hook:
		what = "a resource hook"
	case *ErrorHook:
		what = "an error hook"
	}
	return fmt.Errorf("the name is already taken by %s (resource hooks and error hooks share one name space; use Lookup to reuse a hook): %w", what, err)
}
