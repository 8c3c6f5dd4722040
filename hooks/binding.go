package hooks

import (
	"errors"
	"fmt"
	"slices"

	"github.com/langhost/callbacks/transforms"
)

// point is one of the seven fields of a binding.
type point struct {
	name    string
	refs    *[]transforms.HookRef
	onError bool // the point of error hooks
}

// points lists the seven fields of b with their names.
func points(b *transforms.HooksBinding) [7]point {
	return [7]point{
		{"BeforeCreate", &b.BeforeCreate, false}, {"AfterCreate", &b.AfterCreate, false},
		{"BeforeUpdate", &b.BeforeUpdate, false}, {"AfterUpdate", &b.AfterUpdate, false},
		{"BeforeDelete", &b.BeforeDelete, false}, {"AfterDelete", &b.AfterDelete, false},
		{"OnError", &b.OnError, true},
	}
}

// empty reports whether b binds no hook at any point.
func empty(b *transforms.HooksBinding) bool {
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
// transforms.HookName one has the kind of the hook registered under its name in names,
// if names is not nil.
func validate(b *transforms.HooksBinding, names *names) error {
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
func kindOf(r transforms.HookRef, names *names) (isErrorHook, known bool) {
	h := any(r)
	if _, named := r.(transforms.HookName); named && names != nil {
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
func addHooks(o *transforms.ResourceOptions, b *transforms.HooksBinding) bool {
	if o == nil || empty(b) {
		return false
	}
	if o.Hooks == nil {
		o.Hooks = &transforms.HooksBinding{}
	}
	changed := false
	dst, src := points(o.Hooks), points(b)
	for i := range src {
		for _, r := range *src[i].refs {
			if slices.ContainsFunc(*dst[i].refs, func(have transforms.HookRef) bool { return have != nil && have.Name() == r.Name() }) {
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
func clone(b *transforms.HooksBinding) *transforms.HooksBinding {
	c := &transforms.HooksBinding{}
	src, dst := points(b), points(c)
	for i := range src {
		*dst[i].refs = slices.Clone(*src[i].refs)
	}
	return c
}
