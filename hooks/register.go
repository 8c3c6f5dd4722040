package hooks

import (
	"context"
	"fmt"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/monitor"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Hook is a resource hook registered with the engine under a name. Bind it
// to resources through a [transforms.HooksBinding]: program.Hooks puts one in the
// registration of a resource the Go SDK creates, and [Attach] binds one to
// resources other code creates. Do not build a pulumi.ResourceHook from a
// Hook's name by hand: the SDK's pulumi.ResourceHooks option fails, on a
// nil pointer, for any hook the SDK did not register itself; program.Hooks
// is that same option, made to carry this module's hooks. A Hook is
// immutable and safe for concurrent use.
type Hook struct {
	name         string
	onDryRun     bool
	ignoreErrors bool
	shared       bool
}

// Name returns the name the hook is registered under, so that a *Hook is a
// [transforms.HookRef]. It returns "" for a nil Hook.
func (h *Hook) Name() string {
	if h == nil {
		return ""
	}
	return h.name
}

// ErrorHook is an error hook registered with the engine under a name. Bind it
// to resources with [transforms.HooksBinding].OnError, through program.Hooks or [Attach]
// as a [Hook] (and, like a Hook, never through a pulumi.ErrorHook built by
// hand). An ErrorHook is immutable and safe for concurrent use.
type ErrorHook struct {
	name   string
	shared bool
}

// Name returns the name the hook is registered under, so that an
// *ErrorHook is a [transforms.HookRef]. It returns "" for a nil ErrorHook.
func (h *ErrorHook) Name() string {
	if h == nil {
		return ""
	}
	return h.name
}

// ResourceOption configures [Register]: [OnDryRun] and [IgnoreErrors],
// which apply to resource hooks only, and every [Option].
type ResourceOption interface {
	applyHook(*config)
}

// Option configures the registration of either kind of hook: [Register]
// and [RegisterErrorHook] take it.
type Option interface {
	ResourceOption
	errorHook()
}

// config collects the options of a hook registration.
type config struct {
	onDryRun       bool
	ignoreErrors   bool
	requireOptions bool
	shared         bool
	register       []callbacks.RegisterOption
}

func newConfig[O ResourceOption](opts []O) *config {
	c := &config{}
	for _, o := range opts {
		if any(o) != nil {
			o.applyHook(c)
		}
	}
	return c
}

type resourceOption func(*config)

func (f resourceOption) applyHook(c *config) { f(c) }

type option func(*config)

func (f option) applyHook(c *config) { f(c) }
func (option) errorHook()            {}

// OnDryRun makes the hook run in previews too. Default: the engine skips the
// hook in previews. In a preview, IDs are empty and outputs may be unknown.
// Resource hooks only: it is not an option of [RegisterErrorHook].
func OnDryRun() ResourceOption {
	return resourceOption(func(c *config) { c.onDryRun = true })
}

// IgnoreErrors makes the engine report the hook's failures as warnings,
// `<Point> hook "NAME" failed: MSG`, and carry on. Default: a failure fails
// the step. Resource hooks only: it is not an option of [RegisterErrorHook].
func IgnoreErrors() ResourceOption {
	return resourceOption(func(c *config) { c.ignoreErrors = true })
}

// RequireOptions makes registration fail on engines that do not send
// resource options to hooks (SENDS_OPTIONS_TO_HOOKS), for hooks that depend
// on them. Default: register anyway; the options are then nil, which a
// hook can tell beforehand with monitor.Monitor.Supports.
func RequireOptions() Option {
	return option(func(c *config) { c.requireOptions = true })
}

// Shared is how code that runs once per component instance registers its
// hooks: a component library's NewX, a component provider's Construct.
// Hook names are one space per deployment, so the second instance cannot
// register the name again; with Shared, when the name is already
// registered in this deployment, with Shared, as a hook of the same kind
// and the same settings, registration returns that hook instead of
// failing, and the function given is not used; if the engine has not yet
// answered that hook's registration, it waits (bounded by ctx) and then
// returns the hook, or fails as that registration did. The hook is then
// one for every instance and must not depend on the instance that
// registered it first: tell instances apart by the resource the engine
// calls it about (its URN, or its parent in [Args.NewOptions]). Without
// Shared, a taken name is an error. Sharing works within one process: a name that another
// process of the deployment registered (the program, when this is a
// component provider, or the other way round) is refused by the engine.
func Shared() Option {
	return option(func(c *config) { c.shared = true })
}

// WithRegisterOptions gives the hook's registration with the callback
// server options of package callbacks, such as [callbacks.Timeout] and
// [callbacks.FailOpen]. The registration is named after the hook unless
// [callbacks.Name] says otherwise.
func WithRegisterOptions(opts ...callbacks.RegisterOption) Option {
	return option(func(c *config) { c.register = append(c.register, opts...) })
}

// Register registers fn as a resource hook named name: it checks that the
// engine supports resource hooks, claims the name in the deployment's hook
// name space, stores fn on mon's server and tells the engine. Bind the
// returned hook with a [transforms.HooksBinding]: program.Hooks for a resource the Go SDK
// registers (not a pulumi.ResourceHook built by hand, which the SDK's
// option refuses), [Attach] for resources other code creates. The same
// hook can be bound to any number of resources.
//
// Names are unique per deployment, shared with error hooks: registering a
// taken name is an error that says where the name was first registered,
// returned before the engine is asked ([Lookup] tells whether a name is
// taken). Code that runs once per component
// instance registers with [Shared], and every instance gets the one hook.
//
// A hook bound as a delete hook must be registered again, under the same
// name, in every run while resources in the state are bound to it: see
// "Delete hooks" in the package documentation.
//
// If any step fails, nothing is left behind: the callback is unregistered
// and the name released. Every error is a [*callbacks.Error].
func Register(ctx context.Context, mon *monitor.Monitor, name string, fn Func, opts ...ResourceOption) (*Hook, error) {
	cfg := newConfig(opts)
	what := fmt.Sprintf("hooks: registering resource hook %q", name)
	fail := func(err error) (*Hook, error) {
		return nil, registration.Failed(callbacks.KindResourceHook, what, err)
	}
	dryRun, err := ask(ctx, mon, name, fn == nil, monitor.ResourceHooks, cfg.requireOptions)
	if err != nil {
		return fail(err)
	}
	srv := mon.Server()
	cb, err := srv.Register(ctx, newFunc(fn, dryRun), registerOptions(name, cfg)...)
	if err != nil {
		return fail(err)
	}
	h := &Hook{name: name, onDryRun: cfg.onDryRun, ignoreErrors: cfg.ignoreErrors, shared: cfg.shared}
	if got, err := reserve(ctx, mon, name, h, cfg.shared); err != nil || got != h {
		srv.Registry().Unregister(cb.GetToken())
		if err != nil {
			return fail(err)
		}
		return got.(*Hook), nil
	}
	_, err = mon.Client().RegisterResourceHook(ctx, &pulumirpc.RegisterResourceHookRequest{
		Name: name, Callback: cb, OnDryRun: cfg.onDryRun, IgnoreErrors: cfg.ignoreErrors,
	})
	if err = namesOf(mon).registered(name, err); err != nil {
		srv.Registry().Unregister(cb.GetToken())
		return fail(err)
	}
	return h, nil
}

// RegisterErrorHook registers fn as an error hook named name, the way
// [Register] registers resource hooks: it checks the ERROR_HOOKS feature,
// claims the name in the name space error hooks share with resource hooks,
// and tells the engine. Bind the hook with [transforms.HooksBinding].OnError. Every error
// is a [*callbacks.Error].
func RegisterErrorHook(ctx context.Context, mon *monitor.Monitor, name string, fn ErrorFunc, opts ...Option) (*ErrorHook, error) {
	cfg := newConfig(opts)
	what := fmt.Sprintf("hooks: registering error hook %q", name)
	fail := func(err error) (*ErrorHook, error) {
		return nil, registration.Failed(callbacks.KindErrorHook, what, err)
	}
	dryRun, err := ask(ctx, mon, name, fn == nil, monitor.ErrorHooks, cfg.requireOptions)
	if err != nil {
		return fail(err)
	}
	srv := mon.Server()
	cb, err := srv.Register(ctx, newErrorFunc(fn, dryRun), registerOptions(name, cfg)...)
	if err != nil {
		return fail(err)
	}
	h := &ErrorHook{name: name, shared: cfg.shared}
	if got, err := reserve(ctx, mon, name, h, cfg.shared); err != nil || got != h {
		srv.Registry().Unregister(cb.GetToken())
		if err != nil {
			return fail(err)
		}
		return got.(*ErrorHook), nil
	}
	_, err = mon.Client().RegisterErrorHook(ctx, &pulumirpc.RegisterErrorHookRequest{Name: name, Callback: cb})
	if err = namesOf(mon).registered(name, err); err != nil {
		srv.Registry().Unregister(cb.GetToken())
		return fail(err)
	}
	return h, nil
}

// ask checks a hook registration's arguments, then asks the engine what
// the registration depends on: it requires the hook kind's feature, and
// SENDS_OPTIONS_TO_HOOKS if asked to, and reports whether the deployment is
// a preview, which the hook's requests do not say.
func ask(ctx context.Context, mon *monitor.Monitor, name string, nilFunc bool, kind monitor.Feature, requireOptions bool) (dryRun bool, err error) {
	if name == "" {
		return false, fmt.Errorf("%w: a hook name cannot be empty", callbacks.ErrInvalidOption)
	}
	if err := registration.Check(mon, nilFunc); err != nil {
		return false, err
	}
	required := []monitor.Feature{kind}
	if requireOptions {
		required = append(required, monitor.SendsOptionsToHooks)
	}
	if err := mon.Require(ctx, required...); err != nil {
		return false, err
	}
	info, err := mon.DeploymentInfo(ctx)
	return info.GetDryRun(), err
}

func registerOptions(name string, cfg *config) []callbacks.RegisterOption {
	return append([]callbacks.RegisterOption{callbacks.Name(name)}, cfg.register...)
}

// reserve claims name for h in mon's deployment and returns h, or, for a
// shared hook whose name is taken by a matching shared hook, that hook's
// registration's outcome, once the engine has answered it. The error says
// what the name is taken by.
func reserve(ctx context.Context, mon *monitor.Monitor, name string, h any, shared bool) (any, error) {
	got, err := namesOf(mon).reserve(name, h)
	if err == nil {
		return h, nil
	}
	if shared && sameSettings(got.hook, h) {
		select { // not before the engine knows it: it fails the step of a resource bound to an unknown hook
		case <-got.done:
			return got.hook, got.err
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	what := "another registration"
	switch got.hook.(type) {
	case *Hook:
		what = "a resource hook"
	case *ErrorHook:
		what = "an error hook"
	}
	hint := "code that registers a hook once per component instance registers it with Shared"
	if shared {
		hint = "a shared hook must be registered with Shared and the same settings everywhere"
	}
	err = fmt.Errorf("the name is already taken by %s (resource hooks and error hooks share one name space per deployment; %s): %w", what, hint, err)
	return nil, &callbacks.Error{Code: codes.FailedPrecondition, Msg: err.Error(), Err: err}
}

func sameSettings(a, b any) bool {
	switch a := a.(type) {
	case *Hook:
		b, ok := b.(*Hook)
		return ok && a.shared && a.onDryRun == b.onDryRun && a.ignoreErrors == b.ignoreErrors
	case *ErrorHook:
		_, ok := b.(*ErrorHook)
		return ok && a.shared
	}
	return false
}
