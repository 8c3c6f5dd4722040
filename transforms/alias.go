package transforms

import (
	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Conversions from the wire share the message's unknown fields and
// conversions to the wire share the value's; cloneAliases and cloneTimeouts
// make copies that share nothing. Package hooks uses the same types for the
// options in hook requests.

// Alias is one earlier identity of a resource (the aliases option): either a
// URN or an [AliasSpec]. Aliases decoded from the wire remember the
// encodings their fields cannot tell apart (an empty URN, an empty parent
// URN, a false NoParent) and fields of newer engines, and are sent back as
// they came.
type Alias struct {
	// URN is the resource's former URN. It is ignored when Spec is set.
	URN resource.URN
	// Spec describes the former identity by its parts instead of a URN.
	Spec *AliasSpec

	// urnSet records that the message carried a URN alias even though the
	// URN was empty, so that such an alias is sent back as it came.
	urnSet  bool
	unknown protoreflect.RawFields
}

// AliasSpec describes an earlier identity by its parts. Empty parts mean "the
// same as now". ParentURN and NoParent are alternatives: if NoParent is true,
// the resource formerly had no parent and ParentURN is ignored. With both
// zero the current parent is meant.
type AliasSpec struct {
	// Name is the former name; empty means the current name.
	Name string
	// Type is the former type token; empty means the current type.
	Type string
	// Stack is the former stack; empty means the current stack.
	Stack string
	// Project is the former project; empty means the current project.
	Project string
	// ParentURN is the former parent's URN; empty (with NoParent false)
	// means the current parent.
	ParentURN resource.URN
	// NoParent says the resource formerly had no parent; it wins over
	// ParentURN.
	NoParent bool

	parent  parentKind // which parent alternative the message carried
	unknown protoreflect.RawFields
}

// parentKind records which member of the Alias.Spec parent oneof was set, so
// that a received empty ParentUrn or a false NoParent survives the round trip.
type parentKind uint8

const (
	parentUnset parentKind = iota
	parentURN
	parentNone
)

// CustomTimeouts are per-operation timeouts as the engine spells them, such as
// "5m" or "1h30m". Empty means the provider's default.
type CustomTimeouts struct {
	// Create bounds the provider's Create.
	Create string
	// Update bounds the provider's Update.
	Update string
	// Delete bounds the provider's Delete.
	Delete string
	// Read bounds the provider's Read.
	Read string

	unknown protoreflect.RawFields
}

// aliasesFromProto converts the wire form of aliases; none gives nil.
func aliasesFromProto(in []*pulumirpc.Alias) []Alias {
	if len(in) == 0 {
		return nil
	}
	out := make([]Alias, len(in))
	for i, a := range in {
		out[i] = aliasFromProto(a)
	}
	return out
}

func aliasFromProto(pb *pulumirpc.Alias) Alias {
	a := Alias{unknown: pb.ProtoReflect().GetUnknown()}
	switch v := pb.GetAlias().(type) {
	case *pulumirpc.Alias_Urn:
		a.URN, a.urnSet = resource.URN(v.Urn), v.Urn == ""
	case *pulumirpc.Alias_Spec_:
		s := v.Spec
		spec := &AliasSpec{
			Name: s.GetName(), Type: s.GetType(), Stack: s.GetStack(), Project: s.GetProject(),
			unknown: s.ProtoReflect().GetUnknown(),
		}
		// The hidden marks are set only where the public fields cannot tell
		// what was sent, so that decoded aliases equal hand-built ones.
		switch p := s.GetParent().(type) {
		case *pulumirpc.Alias_Spec_ParentUrn:
			spec.ParentURN = resource.URN(p.ParentUrn)
			if p.ParentUrn == "" {
				spec.parent = parentURN
			}
		case *pulumirpc.Alias_Spec_NoParent:
			spec.NoParent = p.NoParent
			if !p.NoParent {
				spec.parent = parentNone
			}
		}
		a.Spec = spec
	}
	return a
}

// aliasesToProto converts aliases to their wire form; none gives nil.
func aliasesToProto(in []Alias) []*pulumirpc.Alias {
	if len(in) == 0 {
		return nil
	}
	out := make([]*pulumirpc.Alias, len(in))
	for i := range in {
		out[i] = in[i].toProto()
	}
	return out
}

func (a *Alias) toProto() *pulumirpc.Alias {
	pb := &pulumirpc.Alias{}
	switch {
	case a.Spec != nil:
		s := a.Spec
		spec := &pulumirpc.Alias_Spec{Name: s.Name, Type: s.Type, Stack: s.Stack, Project: s.Project}
		switch {
		case s.NoParent:
			spec.Parent = &pulumirpc.Alias_Spec_NoParent{NoParent: true}
		case s.ParentURN != "":
			spec.Parent = &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: string(s.ParentURN)}
		case s.parent == parentURN:
			spec.Parent = &pulumirpc.Alias_Spec_ParentUrn{}
		case s.parent == parentNone:
			spec.Parent = &pulumirpc.Alias_Spec_NoParent{}
		}
		wire.SetUnknown(spec, s.unknown)
		pb.Alias = &pulumirpc.Alias_Spec_{Spec: spec}
	case a.URN != "" || a.urnSet:
		pb.Alias = &pulumirpc.Alias_Urn{Urn: string(a.URN)}
	}
	wire.SetUnknown(pb, a.unknown)
	return pb
}

// timeoutsFromProto converts the wire form of custom timeouts; nil gives nil.
func timeoutsFromProto(ct *pulumirpc.RegisterResourceRequest_CustomTimeouts) *CustomTimeouts {
	if ct == nil {
		return nil
	}
	return &CustomTimeouts{
		Create: ct.GetCreate(), Update: ct.GetUpdate(), Delete: ct.GetDelete(), Read: ct.GetRead(),
		unknown: ct.ProtoReflect().GetUnknown(),
	}
}

// timeoutsToProto converts custom timeouts to their wire form; nil gives nil.
func timeoutsToProto(ct *CustomTimeouts) *pulumirpc.RegisterResourceRequest_CustomTimeouts {
	if ct == nil {
		return nil
	}
	pb := &pulumirpc.RegisterResourceRequest_CustomTimeouts{
		Create: ct.Create, Update: ct.Update, Delete: ct.Delete, Read: ct.Read,
	}
	wire.SetUnknown(pb, ct.unknown)
	return pb
}
