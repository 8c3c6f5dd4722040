package transforms

import (
	"slices"

	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/internal/wire"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// HookRef names a hook in a [HooksBinding]: a hook registered with the
// hooks package (*hooks.Hook, *hooks.ErrorHook), or a [HookName] for a hook
// registered elsewhere (another package, another process, or later in this
// run: the engine resolves names only when a step runs).
type HookRef interface {
	// Name returns the name the hook is registered under.
	Name() string
}

// HookName refers to a hook by its name alone: transforms.HookName("audit").
type HookName string

// Name returns n, so that a HookName is a [HookRef].
func (n HookName) Name() string { return string(n) }

// HooksBinding says which hooks run at which points of a resource's life:
// the hooks resource option, pulumirpc.RegisterResourceRequest_ResourceHooksBinding,
// with typed references in place of bare names. It is the one binding type
// of this module: the Hooks field of a transform's [ResourceOptions], the
// binding of hooks.Attach and of program.Hooks, and the Hooks field of the
// options a hook receives. Hooks at one point run in order.
//
// The engine stores only names. Create and update hooks come from the
// current registration; delete hooks come from the binding saved in the
// state (see "Delete hooks" in package hooks).
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

// points are the seven fields of b, in wire order.
func (b *HooksBinding) points() [7]*[]HookRef {
	return [7]*[]HookRef{&b.BeforeCreate, &b.AfterCreate, &b.BeforeUpdate, &b.AfterUpdate, &b.BeforeDelete, &b.AfterDelete, &b.OnError}
}

// wirePoints are the seven fields of p, in the order of points.
func wirePoints(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) [7]*[]string {
	return [7]*[]string{&p.BeforeCreate, &p.AfterCreate, &p.BeforeUpdate, &p.AfterUpdate, &p.BeforeDelete, &p.AfterDelete, &p.OnError}
}

// toProto converts b to the wire message, nil for nil. A nil reference
// becomes an empty name.
func (b *HooksBinding) toProto() *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	if b == nil {
		return nil
	}
	p := &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}
	pts := b.points()
	for i, w := range wirePoints(p) {
		*w = refNames(*pts[i])
	}
	wire.SetUnknown(p, b.unknown)
	return p
}

// bindingFromProto converts the wire message, nil for nil. Every reference
// in the result is a [HookName].
func bindingFromProto(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *HooksBinding {
	if p == nil {
		return nil
	}
	b := &HooksBinding{unknown: slices.Clone(p.ProtoReflect().GetUnknown())}
	pts := b.points()
	for i, w := range wirePoints(p) {
		*pts[i] = nameRefs(*w)
	}
	return b
}

func refNames(refs []HookRef) []string {
	if len(refs) == 0 {
		return nil
	}
	out := make([]string, len(refs))
	for i, r := range refs {
		name := ""
		if r != nil {
			name = r.Name()
		}
		out[i] = registration.RefName(name)
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
