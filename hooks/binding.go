package hooks

import (
	"errors"
	"fmt"
	"slices"

	"github.com/langhost/callbacks/transforms"
)

// Binding says which hooks run at which points of a resource's life. It is
// the one binding type of this module, defined in the transforms package
// (where it is also the Hooks field of a transform's options); see
// [transforms.HooksBinding]. Bind a Binding to a resource the Go SDK
// registers with program.Hooks, and to resources that other code creates
// with [Attach].
type Binding = transforms.HooksBinding

// Ref names a hook in a [Binding]: a registered [*Hook] or [*ErrorHook], or
// a [Named] hook registered elsewhere (another package, or a later
// registration in this run: the engine resolves names only when a step
// runs).
type Ref = transforms.HookRef

// Named refers to a hook by its name alone: hooks.Named("audit").
type Named = transforms.HookName

// point is one of the seven fields of a binding.
type point struct {
	name    string
	refs    *[]Ref
	onError bool // the point of error hooks
}

// points lists the seven fields of b with their names.
func points(b *Binding) [7]point {
	return [7]point{
		{"BeforeCreate", &b.BeforeCreate, false}, {"AfterCreate", &b.AfterCreate, false},
		{"BeforeUpdate", &b.BeforeUpdate, false}, {"AfterUpdate", &b.AfterUpdate, false},
		{"BeforeDelete", &b.BeforeDelete, false}, {"AfterDelete", &b.AfterDelete, false},
		{"OnError", &b.OnError, true},
	}
}

// empty reports whether b binds no hook at any point.
func empty(b *Binding) bool {
	if b == nil {
		return true
	}
	for _, pt := range points(b) {
		if len(*pt.refs) > 0 {
			return false
		}
	}
	return true
}

// validate reports references without a name, and hooks bound at a point
// of the other kind: a resource hook under OnError, an error hook at a
// lifecycle point. The engine would accept both and fail when the step
// runs. A reference says its kind if it is a *Hook or an *ErrorHook; a
// Named one has the kind of the hook registered under its name in names,
// if names is not nil.
func validate(b *Binding, names *names) error {
	if b == nil {
		return nil
	}
	var errs []error
	for _, pt := range points(b) {
		for i, r := range *pt.refs {
			if r == nil || r.Name() == "" {
				errs = append(errs, fmt.Errorf("%s[%d]: a nil hook, or one with no name: did the Register call that made it fail?", pt.name, i))
				continue
			}
			switch isError, known := kindOf(r, names); {
			case known && isError && !pt.onError:
				errs = append(errs, fmt.Errorf("%s[%d]: %q is an error hook; bind it under OnError", pt.name, i, r.Name()))
			case known && !isError && pt.onError:
				errs = append(errs, fmt.Errorf("%s[%d]: %q is a resource hook, not an error hook", pt.name, i, r.Name()))
			}
		}
	}
	return errors.Join(errs...)
}

// kindOf reports whether r is an error hook, and whether its kind is known;
// see validate.
func kindOf(r Ref, names *names) (isErrorHook, known bool) {
	h := any(r)
	if _, named := r.(Named); named && names != nil {
		h, _ = names.get(r.Name())
	}
	switch h.(type) {
	case *Hook:
		return false, true
	case *ErrorHook:
		return true, true
	}
	return false, false
}

// addHooks adds the hooks of b to the options' binding, keeping the hooks
// already bound and every other option. A hook already bound at a point
// (by name) is not bound there again, so adding twice changes nothing. It
// reports whether o changed, and never writes into slices o shares with
// anything else (the request it was decoded from, for one).
func addHooks(o *transforms.ResourceOptions, b *Binding) bool {
	if o == nil || empty(b) {
		return false
	}
	if o.Hooks == nil {
		o.Hooks = &Binding{}
	}
	changed := false
	dst, src := points(o.Hooks), points(b)
	for i := range src {
		for _, r := range *src[i].refs {
			if slices.ContainsFunc(*dst[i].refs, func(have Ref) bool { return have != nil && have.Name() == r.Name() }) {
				continue
			}
			if !changed {
				for _, d := range dst {
					*d.refs = slices.Clone(*d.refs)
				}
				changed = true
			}
			*dst[i].refs = append(*dst[i].refs, r)
		}
	}
	return changed
}

// clone returns a copy of b whose slices are its own. The references are
// shared: they are immutable.
func clone(b *Binding) *Binding {
	c := &Binding{}
	src, dst := points(b), points(c)
	for i := range src {
		*dst[i].refs = slices.Clone(*src[i].refs)
	}
	return c
}
