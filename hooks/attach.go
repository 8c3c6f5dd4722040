package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// Selector picks the resources [Attach] binds hooks to. It must not change
// the Args it is given. A nil Selector picks every resource. It is also asked
// about the stack resource itself (type pulumi:pulumi:Stack), whose Parent
// and URN are empty: check args.Parent.IsValid() before calling URN methods
// such as Type, which panic on an empty URN.
type Selector func(args *transforms.Args) bool

// ByType picks resources whose type token is one of types, such as
// "aws:s3/bucket:Bucket".
func ByType(types ...string) Selector {
	types = slices.Clone(types)
	return func(a *transforms.Args) bool { return slices.Contains(types, a.Type) }
}

// ByName picks resources whose name is one of names.
func ByName(names ...string) Selector {
	names = slices.Clone(names)
	return func(a *transforms.Args) bool { return slices.Contains(names, a.Name) }
}

// Bind adds the hooks of b to the hooks option in o, keeping the hooks
// already bound and every other option. A hook already bound at a point is
// not bound there again, so binding twice changes nothing. It reports
// whether o changed. Use it in a transform of your own; [Attach] does this
// for every resource a selector picks.
func Bind(o *transforms.ResourceOptions, b *Binding) bool {
	if o == nil || b == nil {
		return false
	}
	add := b.Proto()
	if o.Hooks == nil {
		if isEmpty(add) {
			return false
		}
		o.Hooks = &transforms.HooksBinding{}
	}
	h := o.Hooks
	changed := false
	dst := []*[]string{
		&h.BeforeCreate, &h.AfterCreate, &h.BeforeUpdate, &h.AfterUpdate,
		&h.BeforeDelete, &h.AfterDelete, &h.OnError,
	}
	for i, src := range wirePoints(add) {
		for _, name := range *src {
			if slices.Contains(*dst[i], name) {
				continue
			}
			if !changed {
				// The slices may be shared with the request; copy before
				// the first append.
				for _, d := range dst {
					*d = slices.Clone(*d)
				}
				changed = true
			}
			*dst[i] = append(*dst[i], name)
		}
	}
	return changed
}

func isEmpty(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) bool {
	for _, w := range wirePoints(p) {
		if len(*w) > 0 {
			return false
		}
	}
	return true
}

// Attach binds the hooks of b to every resource that sel picks, by
// registering a stack transform (see [transforms.RegisterStack]). It lets a
// library attach hooks to resources it does not construct, such as the
// children of a component. The hooks are added to the ones a resource
// already has and every other option is kept; a hook already bound at a point
// is not bound again. Resources sel does not pick, and picked resources that
// already have every hook, are left untouched.
//
// Like every stack transform it applies only to resources registered after
// it, so call it early. Hooks are bound by name: the names need not be
// registered yet, but the engine fails a step whose hook is not registered
// by the time it runs. Names that are registered through mon must be of the
// right kind: resource hooks at the lifecycle points, error hooks under
// OnError. The engine must support transforms and resource hooks (and error
// hooks, if b binds any). b is copied; later changes to it have no effect.
// opts configure the transform's registration.
func Attach(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor, sel Selector, b *Binding, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	if err := checkAttach(mon, b); err != nil {
		return nil, fmt.Errorf("hooks: attaching hooks: %w", err)
	}
	// An engine without hooks would drop the binding without a word.
	required := []monitor.Feature{monitor.ResourceHooks}
	if len(b.OnError) > 0 {
		required = append(required, monitor.ErrorHooks)
	}
	if err := mon.Require(ctx, required...); err != nil {
		return nil, fmt.Errorf("hooks: attaching hooks: %w", err)
	}
	add := BindingFromProto(b.Proto())
	fn := func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if sel != nil && !sel(args) {
			return nil, nil
		}
		if args.Options == nil {
			args.Options = &transforms.ResourceOptions{}
		}
		if !Bind(args.Options, add) {
			return nil, nil
		}
		return &transforms.Result{Options: args.Options}, nil
	}
	cb, err := transforms.RegisterStack(ctx, srv, mon, fn, opts...)
	if err != nil {
		return nil, fmt.Errorf("hooks: attaching hooks: %w", err)
	}
	return cb, nil
}

func checkAttach(mon *monitor.Monitor, b *Binding) error {
	if b == nil || isEmpty(b.Proto()) {
		return errors.New("the binding names no hooks")
	}
	if mon == nil {
		return errors.New("no monitor")
	}
	if err := b.Validate(); err != nil {
		return err
	}
	var errs []error
	for _, pt := range b.points() {
		for _, r := range *pt.refs {
			name := refName(r)
			v, ok := mon.Named(name)
			if !ok {
				continue
			}
			switch v.(type) {
			case *Hook:
				if pt.onError {
					errs = append(errs, fmt.Errorf("%s: %q is a resource hook, not an error hook", pt.name, name))
				}
			case *ErrorHook:
				if !pt.onError {
					errs = append(errs, fmt.Errorf("%s: %q is an error hook; bind it under OnError", pt.name, name))
				}
			}
		}
	}
	return errors.Join(errs...)
}
