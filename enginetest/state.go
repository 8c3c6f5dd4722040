package enginetest

import (
	"maps"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// rootStackType is the type of the stack's root component resource.
const rootStackType = "pulumi:pulumi:Stack"

// providerTypePrefix starts the type of every provider resource.
const providerTypePrefix = "pulumi:providers:"

// State is a stack's state: what the engine keeps between deployments.
// Pass it to [WithState] to start the next deployment from it. A State is a
// plain value; it is not safe for concurrent mutation.
type State struct {
	// Resources are the stack's resources in the order their steps
	// completed.
	Resources []*ResourceState
}

// Get returns the resource with the given URN, or nil. If the state holds a
// resource waiting for deletion under the same URN as a live one, Get returns
// the live one.
func (s *State) Get(urn string) *ResourceState {
	if s == nil {
		return nil
	}
	var pending *ResourceState
	for _, r := range s.Resources {
		if r.URN == urn {
			if !r.PendingDelete {
				return r
			}
			pending = r
		}
	}
	return pending
}

// URNs lists the URNs of the resources in s, in order.
func (s *State) URNs() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Resources))
	for i, r := range s.Resources {
		out[i] = r.URN
	}
	return out
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	out := &State{Resources: make([]*ResourceState, len(s.Resources))}
	for i, r := range s.Resources {
		out.Resources[i] = r.Clone()
	}
	return out
}

// ResourceState is one resource as the engine records it. A replaced
// resource whose delete has not run is kept with PendingDelete set.
type ResourceState struct {
	URN  string
	Type string
	Name string
	// Custom is true for a custom resource (a provider's), false for a
	// component.
	Custom bool
	// External is true for resources read with ReadResource.
	External bool
	// Parent is the parent's URN, "" for none.
	Parent string
	// ID is the provider's ID of a custom resource.
	ID string
	// Inputs and Outputs are in the engine's stored form, as the
	// provider sees them (see [FakeProvider]).
	Inputs  *structpb.Struct
	Outputs *structpb.Struct
	// Provider is the provider reference, "<provider URN>::<provider ID>",
	// of a custom resource.
	Provider string
	// Providers is the providers option of a component, by package.
	Providers map[string]string
	// The resource options it was registered with (dependsOn, protect,
	// ignoreChanges and the rest), after its transforms.
	DependsOn            []string
	PropertyDependencies map[string][]string
	Protect              bool
	RetainOnDelete       bool
	DeletedWith          string
	ReplaceWith          []string
	IgnoreChanges        []string
	ReplaceOnChanges     []string
	HideDiff             []string
	// Aliases are the alias URNs the resource was registered with.
	Aliases                 []string
	AdditionalSecretOutputs []string
	CustomTimeouts          *pulumirpc.RegisterResourceRequest_CustomTimeouts
	DeleteBeforeReplace     bool
	ImportID                string
	ReplacementTrigger      *structpb.Value
	// Hooks is the resource hook binding: hook names per point. Delete hooks
	// of the next deployment are taken from here.
	Hooks *pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	// PendingDelete marks a replaced resource whose deletion failed or has
	// not happened yet.
	PendingDelete bool
}

// Clone returns a deep copy of r.
func (r *ResourceState) Clone() *ResourceState {
	if r == nil {
		return nil
	}
	c := *r
	c.Inputs = cloneStruct(r.Inputs)
	c.Outputs = cloneStruct(r.Outputs)
	c.Providers = maps.Clone(r.Providers)
	c.DependsOn = cloneStrings(r.DependsOn)
	if r.PropertyDependencies != nil {
		c.PropertyDependencies = make(map[string][]string, len(r.PropertyDependencies))
		for k, v := range r.PropertyDependencies {
			c.PropertyDependencies[k] = cloneStrings(v)
		}
	}
	c.ReplaceWith = cloneStrings(r.ReplaceWith)
	c.IgnoreChanges = cloneStrings(r.IgnoreChanges)
	c.ReplaceOnChanges = cloneStrings(r.ReplaceOnChanges)
	c.HideDiff = cloneStrings(r.HideDiff)
	c.Aliases = cloneStrings(r.Aliases)
	c.AdditionalSecretOutputs = cloneStrings(r.AdditionalSecretOutputs)
	if r.CustomTimeouts != nil {
		c.CustomTimeouts = proto.Clone(r.CustomTimeouts).(*pulumirpc.RegisterResourceRequest_CustomTimeouts)
	}
	c.ReplacementTrigger = cloneValue(r.ReplacementTrigger)
	if r.Hooks != nil {
		c.Hooks = proto.Clone(r.Hooks).(*pulumirpc.RegisterResourceRequest_ResourceHooksBinding)
	}
	return &c
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

// newURN builds a resource URN the way the engine does. parentType is the
// qualified type of the parent (see [QualifiedType]); it is ignored when
// empty or when the parent is the root stack.
func newURN(stack, project, parentType, typ, name string) string {
	qt := typ
	if parentType != "" && parentType != rootStackType {
		qt = parentType + "$" + typ
	}
	return "urn:pulumi:" + stack + "::" + project + "::" + qt + "::" + name
}

// QualifiedType returns the qualified type part of a URN: the parent's
// type and the resource's, "pkg:mod:Parent$pkg:mod:Child", or the
// resource's alone under the stack or no parent. It returns "" for a string
// with fewer parts than a URN, such as the "" of an event or diagnostic
// about no resource.
func QualifiedType(urn string) string {
	parts := strings.SplitN(strings.TrimPrefix(urn, "urn:pulumi:"), "::", 4)
	if len(parts) < 4 {
		return ""
	}
	return parts[2]
}

// URNName returns the name part of a URN, its last, or "" for a string
// with fewer parts than a URN, such as the "" of an event or diagnostic
// about no resource.
func URNName(urn string) string {
	parts := strings.SplitN(strings.TrimPrefix(urn, "urn:pulumi:"), "::", 4)
	if len(parts) < 4 {
		return ""
	}
	return parts[3]
}

// packageOf returns the package of a type token ("aws" for "aws:s3:Bucket";
// "aws" for the provider type "pulumi:providers:aws").
func packageOf(typ string) string {
	if strings.HasPrefix(typ, providerTypePrefix) {
		return strings.TrimPrefix(typ, providerTypePrefix)
	}
	pkg, _, _ := strings.Cut(typ, ":")
	return pkg
}

func isProviderType(typ string) bool { return strings.HasPrefix(typ, providerTypePrefix) }

// providerReference joins a provider URN and ID into a reference.
func providerReference(urn, id string) string { return urn + "::" + id }
