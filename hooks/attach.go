package hooks

import (
	"context"
	"fmt"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// Attach binds the hooks of b to the resources of scope registered from
// now on: a library's way to bind hooks to resources it does not create,
// such as the children a program gives one of its components
// (program.Descendants(component) is that scope). For resources the code
// creates itself, put the binding in their own registration instead
// (program.Hooks with the Go SDK): that involves no transform at all.
//
// Attach is [transforms.Attach] with a transform that adds the hooks to
// the ones a resource already has, keeping every other option; a hook
// already bound at a point is not bound again, and a resource that already
// has every hook is left untouched. So it costs what every attached
// transform costs: one engine call per resource registered after the
// deployment's first Attach, however many bindings there are. It returns
// an error wrapping [transforms.ErrNeverMatches] for a binding that can
// never apply.
//
// Hooks are bound by name: the names need not be registered yet, but the
// engine fails a step whose hook is not registered by the time it runs.
// Names registered in mon's deployment must be of the right kind: resource
// hooks at the lifecycle points, error hooks under OnError. The engine must
// support transforms and resource hooks (and error hooks, if b binds any).
// b is copied; later changes to it have no effect. opts apply to the
// binding as they do in transforms.Attach (a name for its messages, a
// timeout, failing open). Every error is a [*callbacks.Error].
func Attach(ctx context.Context, mon *monitor.Monitor, scope transforms.Scope, b *transforms.HooksBinding, opts ...callbacks.RegisterOption) error {
	const what = "hooks: attaching hooks"
	if err := checkAttach(mon, b); err != nil {
		return registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	// An engine without hooks would drop the binding without a word.
	required := []monitor.Feature{monitor.Transforms, monitor.ResourceHooks}
	if len(b.OnError) > 0 {
		required = append(required, monitor.ErrorHooks)
	}
	if err := mon.Require(ctx, required...); err != nil {
		return registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	add := clone(b)
	err := transforms.Attach(ctx, mon, scope, func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if args.Options == nil {
			args.Options = &transforms.ResourceOptions{}
		}
		if !addHooks(args.Options, add) {
			return nil, nil
		}
		return &transforms.Result{Options: args.Options}, nil
	}, opts...)
	if err != nil {
		return registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	return nil
}

// checkAttach refuses a binding the engine would take and fail on later:
// one without hooks, with references without names, or with hooks bound at
// a point of the other kind, whether the reference says its kind or the
// name is registered in mon's deployment.
func checkAttach(mon *monitor.Monitor, b *transforms.HooksBinding) error {
	if err := registration.Check(mon, false); err != nil {
		return err
	}
	if empty(b) {
		return fmt.Errorf("%w: the binding names no hooks", callbacks.ErrInvalidOption)
	}
	if err := validate(b, namesOf(mon)); err != nil {
		return fmt.Errorf("%w: %w", callbacks.ErrInvalidOption, err)
	}
	return nil
}
