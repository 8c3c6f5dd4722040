package transforms

import (
	"errors"
	"fmt"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// Selector picks resources: a [Scope] made with [Matching] or narrowed with
// [Scope.Where] takes the resources it picks. It must not change the Args it
// is given. It is also asked about the stack resource itself (type
// pulumi:pulumi:Stack), whose Parent and URN are empty: check
// args.Parent.IsValid() before calling URN methods such as Type, which
// panic on an empty URN.
type Selector func(args *Args) bool

// ByType picks resources whose type token is one of types, such as
// "aws:s3/bucket:Bucket".
func ByType(types ...string) Selector {
	types = slices.Clone(types)
	return func(a *Args) bool { return slices.Contains(types, a.Type) }
}

// ByName picks resources whose name is one of names.
func ByName(names ...string) Selector {
	names = slices.Clone(names)
	return func(a *Args) bool { return slices.Contains(names, a.Name) }
}

// Scope says which resources an attached transform or hook binding applies
// to (see [Attach] and hooks.Attach): every resource a selector picks
// ([Matching]), or the descendants of one component ([Descendants],
// [DescendantsOf], and program.Descendants for a component the Go SDK
// registered), optionally narrowed with [Scope.Where]. A scope covers only
// resources registered after the Attach that uses it returns. The zero
// Scope is not valid: Attach refuses it.
type Scope struct {
	everywhere bool         // Matching
	component  resource.URN // Descendants
	lookup     func() (resource.URN, error)
	label      string // how messages name the component
	sel        Selector
}

// Matching is the scope of every resource sel picks, across the whole
// deployment; a nil sel picks every resource. The engine asks the
// deployment's attached transform about every resource registered after
// the first Attach, whatever the scopes; only this scope makes it change
// resources that the code attaching did not create or parent.
func Matching(sel Selector) Scope {
	return Scope{everywhere: true, sel: sel}
}

// Descendants is the scope of the resources under the component whose URN
// is component: its children, their children, and so on, but not the
// component itself.
func Descendants(component resource.URN) Scope {
	return Scope{component: component, label: string(component)}
}

// DescendantsOf is [Descendants] for a component whose URN is not known yet
// when the binding is attached: the registration of a component made a
// moment ago is usually still in flight. name says which component it is,
// in messages. urn reports the URN: "" and a nil error while it is not known
// yet, the URN once it is, and an error if it never will be (the
// component's registration failed, or never happened).
//
// urn must report the URN before any descendant of the component reaches
// the engine. The Go SDK guarantees that for a component it registers (a
// child's registration waits for its parent's URN); program.Descendants
// builds this scope from a pulumi.Resource.
func DescendantsOf(name string, urn func() (resource.URN, error)) Scope {
	return Scope{lookup: urn, label: name}
}

// Where narrows s to the resources sel also picks. A nil sel changes
// nothing.
func (s Scope) Where(sel Selector) Scope {
	if sel == nil {
		return s
	}
	if prev := s.sel; prev != nil {
		s.sel = func(a *Args) bool { return prev(a) && sel(a) }
	} else {
		s.sel = sel
	}
	return s
}

// describe names the scope, as messages about bindings do.
func (s Scope) describe() string {
	switch {
	case s.everywhere && s.sel == nil:
		return "every resource"
	case s.everywhere:
		return "the resources a selector picks"
	case s.component == "" && s.lookup == nil:
		return "no scope"
	}
	what := "the descendants of " + s.label
	if s.sel != nil {
		what = "the descendants a selector picks of " + s.label
	}
	return what
}

// ErrNeverMatches is wrapped by the error [Attach] (and hooks.Attach)
// returns for a binding that can never apply to any resource: a scope made
// without a constructor, a component that is not registered or that
// belongs to another deployment (another stack or project), or a
// deployment the engine has already ended. When that only comes to light
// later (the URN of a [DescendantsOf] component becomes known), the
// binding is dropped and a warning says so under `pulumi up`.
var ErrNeverMatches = errors.New("the binding can never match a resource")

// check reports a scope that cannot match anything, whatever the
// deployment.
func (s Scope) check() error {
	switch {
	case s.everywhere:
		return nil
	case s.lookup != nil:
		return nil
	case s.component == "":
		return fmt.Errorf("%w: the scope is empty (make it with transforms.Matching, Descendants or DescendantsOf, or program.Descendants)", ErrNeverMatches)
	case !s.component.IsValid():
		return fmt.Errorf("%w: %q is not a valid URN", ErrNeverMatches, s.component)
	}
	return nil
}
