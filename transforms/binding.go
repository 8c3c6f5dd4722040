package transforms

import (
	"errors"
	"fmt"
	"slices"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/wire/optconv"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// HookRef names a hook in a [HooksBinding]: a hook registered with the
// hooks package (*hooks.Hook, *hooks.ErrorHook), or a [HookName] for a hook
// registered elsewhere (another package, another process, or later in this
// run: the engine resolves names only when a step runs). The hooks package
// calls this type hooks.Ref.
type HookRef interface {
	HookName() string
}

// HookName refers to a hook by its name alone. The hooks package calls this
// type hooks.Name.
type HookName string

// HookName returns n, so that a HookName is a [HookRef].
func (n HookName) HookName() string { return string(n) }

// HooksBinding says which hooks run at which points of a resource's life:
// the hooks resource option, pulumirpc.RegisterResourceRequest_ResourceHooksBinding,
// with typed references in place of bare names. It is the one binding type
// of this module: the Hooks field of a transform's [ResourceOptions], the
// binding of hooks.Attach and of program.Hooks, and the Hooks field of the
// options a hook receives. The hooks package calls it hooks.Binding. Hooks
// at one point run in order.
//
// The engine stores only names. Create and update hooks come from the
// current registration; delete hooks come from the binding saved in the
// state, and run under the name registered in the run that deletes the
// resource.
type HooksBinding struct {
	// BeforeCreate hooks run before the provider creates the resource.
	BeforeCreate []HookRef
	// AfterCreate hooks run after the provider created the resource.
	AfterCreate []HookRef
	// BeforeUpdate hooks run before the provider updates the resource.
	BeforeUpdate []HookRef
	// AfterUpdate hooks run after the provider updated the resource.
	AfterUpdate []HookRef
	// BeforeDelete hooks run before the provider deletes the resource.
	BeforeDelete []HookRef
	// AfterDelete hooks run after the provider deleted the resource.
	AfterDelete []HookRef
	// OnError names error hooks, run when the provider fails to create,
	// update or delete the resource.
	OnError []HookRef

	unknown protoreflect.RawFields // fields of newer engines
}

// hookPoint is one of the seven fields of a binding.
type hookPoint struct {
	name    string
	refs    *[]HookRef
	onError bool
}

// points lists the binding's seven fields with their names, in wire order.
func (b *HooksBinding) points() []hookPoint {
	return []hookPoint{
		{"BeforeCreate", &b.BeforeCreate, false},
		{"AfterCreate", &b.AfterCreate, false},
		{"BeforeUpdate", &b.BeforeUpdate, false},
		{"AfterUpdate", &b.AfterUpdate, false},
		{"BeforeDelete", &b.BeforeDelete, false},
		{"AfterDelete", &b.AfterDelete, false},
		{"OnError", &b.OnError, true},
	}
}

func wireHookPoints(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) []*[]string {
	return []*[]string{
		&p.BeforeCreate, &p.AfterCreate, &p.BeforeUpdate, &p.AfterUpdate,
		&p.BeforeDelete, &p.AfterDelete, &p.OnError,
	}
}

// ToProto converts b to the wire message, nil for nil. A nil reference
// becomes an empty name, which [HooksBinding.Validate] reports.
func (b *HooksBinding) ToProto() *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	if b == nil {
		return nil
	}
	p := &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}
	pts := b.points()
	for i, w := range wireHookPoints(p) {
		*w = refNames(*pts[i].refs)
	}
	optconv.SetUnknown(p, b.unknown)
	return p
}

// HooksFromProto converts the wire message, nil for nil. Every reference in
// the result is a [HookName].
func HooksFromProto(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *HooksBinding {
	if p == nil {
		return nil
	}
	b := &HooksBinding{unknown: slices.Clone(p.ProtoReflect().GetUnknown())}
	pts := b.points()
	for i, w := range wireHookPoints(p) {
		*pts[i].refs = nameRefs(*w)
	}
	return b
}

// Clone returns a copy of b whose slices are its own. The references are
// shared: they are immutable.
func (b *HooksBinding) Clone() *HooksBinding {
	if b == nil {
		return nil
	}
	c := &HooksBinding{unknown: slices.Clone(b.unknown)}
	src, dst := b.points(), c.points()
	for i := range src {
		*dst[i].refs = slices.Clone(*src[i].refs)
	}
	return c
}

// Empty reports whether b binds no hook at any point.
func (b *HooksBinding) Empty() bool {
	if b == nil {
		return true
	}
	for _, pt := range b.points() {
		if len(*pt.refs) > 0 {
			return false
		}
	}
	return true
}

// kinded is what a reference that knows its hook's kind implements:
// *hooks.Hook and *hooks.ErrorHook do.
type kinded interface {
	Kind() callbacks.Kind
}

// Validate reports references without a name, resource hooks bound under
// OnError and error hooks bound at a lifecycle point (for references that
// know their kind, as *hooks.Hook and *hooks.ErrorHook do): the engine would
// accept all three and fail when the step runs.
func (b *HooksBinding) Validate() error {
	if b == nil {
		return nil
	}
	var errs []error
	for _, pt := range b.points() {
		for i, r := range *pt.refs {
			name := refName(r)
			if k, ok := r.(kinded); ok && name != "" {
				switch kind := k.Kind(); {
				case kind == callbacks.KindResourceHook && pt.onError:
					errs = append(errs, fmt.Errorf("hooks: %s[%d]: resource hook %q cannot be an error hook", pt.name, i, name))
				case kind == callbacks.KindErrorHook && !pt.onError:
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
func (b *HooksBinding) Names() map[string][]string {
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

// Each calls fn for every reference of b, with the name of its point
// ("BeforeCreate", …) and whether that point is OnError.
func (b *HooksBinding) Each(fn func(point string, onError bool, ref HookRef)) {
	if b == nil {
		return
	}
	for _, pt := range b.points() {
		for _, r := range *pt.refs {
			fn(pt.name, pt.onError, r)
		}
	}
}

// AddHooks adds the hooks of b to the options' binding, keeping the hooks
// already bound and every other option. A hook already bound at a point
// (by name) is not bound there again, so adding twice changes nothing. It
// reports whether o changed, and never writes into slices o shares with
// anything else.
func (o *ResourceOptions) AddHooks(b *HooksBinding) bool {
	if o == nil || b.Empty() {
		return false
	}
	if o.Hooks == nil {
		o.Hooks = &HooksBinding{}
	}
	changed := false
	dst, src := o.Hooks.points(), b.points()
	for i := range src {
		for _, r := range *src[i].refs {
			name := refName(r)
			if slices.ContainsFunc(*dst[i].refs, func(have HookRef) bool { return refName(have) == name }) {
				continue
			}
			if !changed {
				// The slices may be shared with the request; copy
				// before the first append.
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

func refName(r HookRef) string {
	if r == nil {
		return ""
	}
	return r.HookName()
}

func refNames(refs []HookRef) []string {
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = refName(r)
	}
	return out
}

func nameRefs(names []string) []HookRef {
	if len(names) == 0 {
		return nil
	}
	out := make([]HookRef, len(names))
	for i, n := range names {
		out[i] = HookName(n)
	}
	return out
}
