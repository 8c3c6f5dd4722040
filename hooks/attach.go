package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/reach"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
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
	add := b.ToProto()
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
// Through a monitor from [monitor.FromConstruct], Attach binds only to the
// descendants of the component being constructed, the way the engine scopes
// a transform given in a parent's own registration, so that the hooks never
// reach the resources of the program that uses the component. The engine
// still asks the transform about every later resource of the deployment; to
// spare those calls, put the callback of [Transform] in the component's own
// registration instead.
//
// Like every stack transform it applies only to resources registered after
// it, so call it early. Hooks are bound by name: the names need not be
// registered yet, but the engine fails a step whose hook is not registered
// by the time it runs. Names that are registered in mon's deployment must be
// of the right kind: resource hooks at the lifecycle points, error hooks
// under OnError. The engine must support transforms and resource hooks (and
// error hooks, if b binds any). b is copied; later changes to it have no
// effect. opts configure the transform's registration. Every error is a
// [*callbacks.Error].
func Attach(ctx context.Context, mon *monitor.Monitor, sel Selector, b *Binding, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	fn, err := attachTransform(ctx, mon, sel, b)
	if err != nil {
		return nil, err
	}
	if parent, ok := mon.Component(); ok {
		fn = underParent(resource.URN(parent), fn)
	}
	cb, err := transforms.RegisterStack(ctx, mon, fn, opts...)
	if err != nil {
		return nil, reach.Fail(callbacks.KindResourceTransform, "hooks: attaching hooks", err)
	}
	return cb, nil
}

// Transform returns the callback of a resource transform that binds the hooks
// of b to the resources sel picks, for a component to put in the transforms
// of its own registration (RegisterResourceRequest.transforms). The engine
// then applies it to the component's descendants only, and never calls it
// for other resources. The engine applies it to the component itself too,
// and, for a remote component, uses the transforms the program gave the
// component, if it gave any, in place of those of the provider's
// registration: examples/provider shows how a provider notices that and
// falls back to [Attach]. It checks the engine's features as [Attach] does
// but registers nothing with the engine. Every error is a [*callbacks.Error].
func Transform(ctx context.Context, mon *monitor.Monitor, sel Selector, b *Binding, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	fn, err := attachTransform(ctx, mon, sel, b)
	if err != nil {
		return nil, err
	}
	if err := reach.Prepare(ctx, mon); err != nil {
		return nil, reach.Fail(callbacks.KindResourceTransform, "hooks: binding hooks", err)
	}
	return transforms.Callback(ctx, mon, fn, opts...)
}

func attachTransform(ctx context.Context, mon *monitor.Monitor, sel Selector, b *Binding) (transforms.Func, error) {
	const what = "hooks: attaching hooks"
	if err := checkAttach(mon, b); err != nil {
		return nil, reach.Fail(callbacks.KindResourceTransform, what, err)
	}
	// An engine without hooks would drop the binding without a word.
	required := []monitor.Feature{monitor.Transforms, monitor.ResourceHooks}
	if len(b.OnError) > 0 {
		required = append(required, monitor.ErrorHooks)
	}
	if err := mon.Require(ctx, required...); err != nil {
		return nil, reach.Fail(callbacks.KindResourceTransform, what, err)
	}
	add := BindingFromProto(b.ToProto())
	return func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
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
	}, nil
}

// underParent limits fn to the descendants of parent. A stack transform sees
// every resource registered after it, parents before their children, so the
// descendants are the resources whose parent is parent or a descendant.
func underParent(parent resource.URN, fn transforms.Func) transforms.Func {
	var mu sync.Mutex
	inside := map[resource.URN]bool{parent: true}
	return func(ctx context.Context, args *transforms.Args) (*transforms.Result, error) {
		mu.Lock()
		ok := args.Parent != "" && inside[args.Parent]
		if ok && args.URN != "" {
			inside[args.URN] = true
		}
		mu.Unlock()
		if !ok {
			return nil, nil
		}
		return fn(ctx, args)
	}
}

func checkAttach(mon *monitor.Monitor, b *Binding) error {
	if mon == nil || mon.Server() == nil {
		return reach.Nil("monitor")
	}
	if b == nil || isEmpty(b.ToProto()) {
		return fmt.Errorf("%w: the binding names no hooks", callbacks.ErrInvalidOption)
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("%w: %w", callbacks.ErrInvalidOption, err)
	}
	names := reach.Names(mon)
	var errs []error
	for _, pt := range b.points() {
		for _, r := range *pt.refs {
			name := refName(r)
			v, ok := names.Get(name)
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
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", callbacks.ErrInvalidOption, err)
	}
	return nil
}
