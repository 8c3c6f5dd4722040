package hooks

import (
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Ref names a hook in a [Binding]: a registered [*Hook] or [*ErrorHook], or
// a [Name] for a hook registered elsewhere (another package, or a later
// registration in this run: the engine resolves names only when a step runs).
type Ref interface {
	HookName() string
}

// Name refers to a hook by its name alone.
type Name string

// HookName returns n.
func (n Name) HookName() string { return string(n) }

// Binding says which hooks run at which points of a resource's life. It is
// the hooks resource option, pulumirpc.RegisterResourceRequest_ResourceHooksBinding,
// with typed references instead of bare names. Hooks at one point run in
// order.
//
// The engine stores only names. Create and update hooks come from the current
// registration; delete hooks come from the binding saved in the state, and
// run under the name registered in the run that deletes the resource (see
// the package documentation).
type Binding struct {
	// BeforeCreate hooks run before the provider creates the resource.
	BeforeCreate []Ref
	// AfterCreate hooks run after the provider created the resource.
	AfterCreate []Ref
	// BeforeUpdate hooks run before the provider updates the resource.
	BeforeUpdate []Ref
	// AfterUpdate hooks run after the provider updated the resource.
	AfterUpdate []Ref
	// BeforeDelete hooks run before the provider deletes the resource.
	BeforeDelete []Ref
	// AfterDelete hooks run after the provider deleted the resource.
	AfterDelete []Ref
	// OnError names error hooks, run when the provider fails to create,
	// update or delete the resource.
	OnError []Ref

	unknown protoreflect.RawFields // fields of newer engines
}

// points lists the binding's seven fields with their names, in wire order.
func (b *Binding) points() []point {
	return []point{
		{"BeforeCreate", &b.BeforeCreate, false},
		{"AfterCreate", &b.AfterCreate, false},
		{"BeforeUpdate", &b.BeforeUpdate, false},
		{"AfterUpdate", &b.AfterUpdate, false},
		{"BeforeDelete", &b.BeforeDelete, false},
		{"AfterDelete", &b.AfterDelete, false},
		{"OnError", &b.OnError, true},
	}
}

type point struct {
	name    string
	refs    *[]Ref
	onError bool
}

func wirePoints(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) []*[]string {
	return []*[]string{
		&p.BeforeCreate, &p.AfterCreate, &p.BeforeUpdate, &p.AfterUpdate,
		&p.BeforeDelete, &p.AfterDelete, &p.OnError,
	}
}

// ToProto converts b to the wire message, nil for nil. A nil Ref becomes an
// empty name, which [Binding.Validate] reports.
func (b *Binding) ToProto() *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	if b == nil {
		return nil
	}
	p := &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}
	pts := b.points()
	for i, w := range wirePoints(p) {
		*w = refNames(*pts[i].refs)
	}
	setUnknown(p, b.unknown)
	return p
}

// BindingFromProto converts the wire message, nil for nil. Every reference
// in the result is a [Name].
func BindingFromProto(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *Binding {
	if p == nil {
		return nil
	}
	b := &Binding{unknown: unknownOf(p)}
	pts := b.points()
	for i, w := range wirePoints(p) {
		*pts[i].refs = nameRefs(*w)
	}
	return b
}

// Validate reports references without a name, and [*Hook] values bound
// under OnError or [*ErrorHook] values bound at a lifecycle point: the engine
// would accept both and fail when the step runs.
func (b *Binding) Validate() error {
	if b == nil {
		return nil
	}
	var errs []error
	for _, pt := range b.points() {
		for i, r := range *pt.refs {
			name := refName(r)
			switch r.(type) {
			case *Hook:
				if pt.onError {
					errs = append(errs, fmt.Errorf("hooks: %s[%d]: resource hook %q cannot be an error hook", pt.name, i, name))
				}
			case *ErrorHook:
				if !pt.onError {
					errs = append(errs, fmt.Errorf("hooks: %s[%d]: error hook %q can only be bound under OnError", pt.name, i, name))
				}
			}
			if name == "" {
				errs = append(errs, fmt.Errorf("hooks: %s[%d]: hook reference has no name", pt.name, i))
			}
		}
	}
	return errors.Join(errs...)
}

// Names returns the hook names bound at each point, keyed by field name
// ("BeforeCreate", …, "OnError"); points without hooks are left out.
func (b *Binding) Names() map[string][]string {
	out := map[string][]string{}
	if b == nil {
		return out
	}
	for _, pt := range b.points() {
		if names := refNames(*pt.refs); len(names) > 0 {
			out[pt.name] = names
		}
	}
	return out
}

func refName(r Ref) string {
	if r == nil {
		return ""
	}
	return r.HookName()
}

func refNames(refs []Ref) []string {
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = refName(r)
	}
	return out
}

func nameRefs(names []string) []Ref {
	if len(names) == 0 {
		return nil
	}
	out := make([]Ref, len(names))
	for i, n := range names {
		out[i] = Name(n)
	}
	return out
}
