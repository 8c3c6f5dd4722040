package hooks

import (
	"fmt"
	"maps"

	"github.com/langhost/callbacks/internal/props"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// ResourceOptions are the options of the resource a hook is called for, as
// the engine sends them in a hook request (the pulumirpc.ResourceOptions
// message). Every field of that message has a field here, and converting with
// [OptionsFromProto] and [ResourceOptions.Proto] loses nothing: unset
// booleans stay distinct from false, and fields of newer engines that this
// version does not know are carried along.
//
// The engine fills in only some of them: depends-on, ignore-changes,
// replace-on-changes, provider, deleted-with, import, hide-diff, replace-with,
// hooks, parent, aliases (as URNs), custom timeouts, additional secret
// outputs, and Protect and RetainOnDelete, which are always set. Version,
// plugin download URL, providers, plugin checksums, delete-before-replace and
// the replacement trigger stay empty.
type ResourceOptions struct {
	Parent                  resource.URN
	DependsOn               []resource.URN
	Protect                 *bool // nil when the engine did not say
	RetainOnDelete          *bool // nil when the engine did not say
	DeleteBeforeReplace     *bool // nil when the engine did not say
	IgnoreChanges           []string
	ReplaceOnChanges        []string
	HideDiff                []string
	AdditionalSecretOutputs []string
	Aliases                 []Alias
	// Provider is a provider reference, "URN::ID".
	Provider string
	// Providers maps packages to provider references, for components.
	Providers         map[string]string
	Version           string
	PluginDownloadURL string
	PluginChecksums   map[string][]byte
	CustomTimeouts    *CustomTimeouts // nil when absent
	DeletedWith       resource.URN
	ReplaceWith       []resource.URN
	// Import is the ID of an existing resource to adopt.
	Import resource.ID
	// Hooks is the resource's hook binding; nil when it has none.
	Hooks *Binding
	// ReplacementTrigger is the value whose change forces a replacement; nil
	// when absent. Secrets and unknowns in it are kept as such.
	ReplacementTrigger *resource.PropertyValue

	unknown protoreflect.RawFields // fields of newer engines
}

// CustomTimeouts are a resource's per-operation timeouts, as the strings the
// program gave ("5m").
type CustomTimeouts struct {
	Create string
	Update string
	Delete string
	Read   string

	unknown protoreflect.RawFields
}

// Alias is a former identity of a resource: either a URN or, when Spec is
// set, the parts that differ from the current identity. Hook requests carry
// aliases as URNs.
type Alias struct {
	URN  resource.URN // the former URN; ignored when Spec is set
	Spec *AliasSpec

	urnSet  bool // the message held a URN alias, even an empty one
	unknown protoreflect.RawFields
}

// AliasSpec describes a former identity by its parts; empty parts mean "the
// same as now".
type AliasSpec struct {
	Name    string
	Type    string
	Stack   string
	Project string
	// ParentURN is the former parent. NoParent says the resource had no
	// parent and wins over ParentURN. With both zero the current parent is
	// meant.
	ParentURN resource.URN
	NoParent  bool

	parent  parentKind // which member of the parent oneof the message held
	unknown protoreflect.RawFields
}

// parentKind remembers which parent alternative a received alias spec held,
// so that an empty ParentUrn or a false NoParent is sent back as it came.
type parentKind uint8

const (
	parentUnset parentKind = iota
	parentURN
	parentNone
)

// OptionsFromProto converts the options of a hook request. It returns nil
// for nil, which is what engines without the SENDS_OPTIONS_TO_HOOKS feature
// send.
func OptionsFromProto(o *pulumirpc.ResourceOptions) (*ResourceOptions, error) {
	if o == nil {
		return nil, nil
	}
	trigger, err := valueFromProto(o.GetReplacementTrigger())
	if err != nil {
		return nil, fmt.Errorf("replacement trigger: %w", err)
	}
	r := &ResourceOptions{
		Parent:                  resource.URN(o.GetParent()),
		DependsOn:               urns(o.GetDependsOn()),
		Protect:                 copyBool(o.Protect),
		RetainOnDelete:          copyBool(o.RetainOnDelete),
		DeleteBeforeReplace:     copyBool(o.DeleteBeforeReplace),
		IgnoreChanges:           cloneStrings(o.GetIgnoreChanges()),
		ReplaceOnChanges:        cloneStrings(o.GetReplaceOnChanges()),
		HideDiff:                cloneStrings(o.GetHideDiff()),
		AdditionalSecretOutputs: cloneStrings(o.GetAdditionalSecretOutputs()),
		Aliases:                 aliasesFromProto(o.GetAliases()),
		Provider:                o.GetProvider(),
		Providers:               cloneMap(o.GetProviders()),
		Version:                 o.GetVersion(),
		PluginDownloadURL:       o.GetPluginDownloadUrl(),
		PluginChecksums:         cloneChecksums(o.GetPluginChecksums()),
		DeletedWith:             resource.URN(o.GetDeletedWith()),
		ReplaceWith:             urns(o.GetReplaceWith()),
		Import:                  resource.ID(o.GetImport()),
		Hooks:                   BindingFromProto(o.GetHooks()),
		ReplacementTrigger:      trigger,
	}
	if ct := o.GetCustomTimeouts(); ct != nil {
		r.CustomTimeouts = &CustomTimeouts{
			Create: ct.GetCreate(), Update: ct.GetUpdate(), Delete: ct.GetDelete(), Read: ct.GetRead(),
			unknown: unknownOf(ct),
		}
	}
	r.unknown = unknownOf(o)
	return r, nil
}

// Proto converts o back to the wire message; nil gives nil. Only the
// replacement trigger can fail to convert.
func (o *ResourceOptions) Proto() (*pulumirpc.ResourceOptions, error) {
	if o == nil {
		return nil, nil
	}
	trigger, err := valueToProto(o.ReplacementTrigger)
	if err != nil {
		return nil, fmt.Errorf("replacement trigger: %w", err)
	}
	p := &pulumirpc.ResourceOptions{
		Parent:                  string(o.Parent),
		DependsOn:               strs(o.DependsOn),
		Protect:                 copyBool(o.Protect),
		RetainOnDelete:          copyBool(o.RetainOnDelete),
		DeleteBeforeReplace:     copyBool(o.DeleteBeforeReplace),
		IgnoreChanges:           cloneStrings(o.IgnoreChanges),
		ReplaceOnChanges:        cloneStrings(o.ReplaceOnChanges),
		HideDiff:                cloneStrings(o.HideDiff),
		AdditionalSecretOutputs: cloneStrings(o.AdditionalSecretOutputs),
		Aliases:                 aliasesToProto(o.Aliases),
		Provider:                o.Provider,
		Providers:               cloneMap(o.Providers),
		Version:                 o.Version,
		PluginDownloadUrl:       o.PluginDownloadURL,
		PluginChecksums:         cloneChecksums(o.PluginChecksums),
		DeletedWith:             string(o.DeletedWith),
		ReplaceWith:             strs(o.ReplaceWith),
		Import:                  string(o.Import),
		Hooks:                   o.Hooks.Proto(),
		ReplacementTrigger:      trigger,
	}
	if ct := o.CustomTimeouts; ct != nil {
		p.CustomTimeouts = &pulumirpc.RegisterResourceRequest_CustomTimeouts{
			Create: ct.Create, Update: ct.Update, Delete: ct.Delete, Read: ct.Read,
		}
		setUnknown(p.CustomTimeouts, ct.unknown)
	}
	setUnknown(p, o.unknown)
	return p, nil
}

func aliasesFromProto(in []*pulumirpc.Alias) []Alias {
	if len(in) == 0 {
		return nil
	}
	out := make([]Alias, len(in))
	for i, a := range in {
		out[i].unknown = unknownOf(a)
		switch v := a.GetAlias().(type) {
		case *pulumirpc.Alias_Urn:
			out[i].URN, out[i].urnSet = resource.URN(v.Urn), true
		case *pulumirpc.Alias_Spec_:
			s := v.Spec
			spec := &AliasSpec{
				Name: s.GetName(), Type: s.GetType(), Stack: s.GetStack(), Project: s.GetProject(),
				unknown: unknownOf(s),
			}
			switch p := s.GetParent().(type) {
			case *pulumirpc.Alias_Spec_ParentUrn:
				spec.ParentURN, spec.parent = resource.URN(p.ParentUrn), parentURN
			case *pulumirpc.Alias_Spec_NoParent:
				spec.NoParent, spec.parent = p.NoParent, parentNone
			}
			out[i].Spec = spec
		}
	}
	return out
}

func aliasesToProto(in []Alias) []*pulumirpc.Alias {
	if len(in) == 0 {
		return nil
	}
	out := make([]*pulumirpc.Alias, len(in))
	for i, a := range in {
		p := &pulumirpc.Alias{}
		switch {
		case a.Spec != nil:
			spec := a.Spec
			s := &pulumirpc.Alias_Spec{Name: spec.Name, Type: spec.Type, Stack: spec.Stack, Project: spec.Project}
			switch {
			case spec.NoParent:
				s.Parent = &pulumirpc.Alias_Spec_NoParent{NoParent: true}
			case spec.ParentURN != "":
				s.Parent = &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: string(spec.ParentURN)}
			case spec.parent == parentURN:
				s.Parent = &pulumirpc.Alias_Spec_ParentUrn{}
			case spec.parent == parentNone:
				s.Parent = &pulumirpc.Alias_Spec_NoParent{}
			}
			setUnknown(s, spec.unknown)
			p.Alias = &pulumirpc.Alias_Spec_{Spec: s}
		case a.URN != "" || a.urnSet:
			p.Alias = &pulumirpc.Alias_Urn{Urn: string(a.URN)}
		}
		setUnknown(p, a.unknown)
		out[i] = p
	}
	return out
}

// unknownOf returns a copy of the fields of m that this version of the
// protocol does not know.
func unknownOf(m protoreflect.ProtoMessage) protoreflect.RawFields {
	if raw := m.ProtoReflect().GetUnknown(); len(raw) > 0 {
		return append(protoreflect.RawFields(nil), raw...)
	}
	return nil
}

func setUnknown(m protoreflect.ProtoMessage, raw protoreflect.RawFields) {
	if len(raw) > 0 {
		m.ProtoReflect().SetUnknown(append(protoreflect.RawFields(nil), raw...))
	}
}

// triggerKey wraps a single value in a map so that it goes through the same
// lossless property conversion as inputs and outputs.
const triggerKey = "value"

func valueFromProto(v *structpb.Value) (*resource.PropertyValue, error) {
	if v == nil {
		return nil, nil
	}
	m, err := props.Unmarshal(&structpb.Struct{Fields: map[string]*structpb.Value{triggerKey: v}})
	if err != nil {
		return nil, err
	}
	pv, ok := m[triggerKey]
	if !ok {
		// Only an unknown dropped by the decoder could vanish; the decoder
		// keeps unknowns, so treat a vanished value as null.
		pv = resource.NewNullProperty()
	}
	return &pv, nil
}

func valueToProto(v *resource.PropertyValue) (*structpb.Value, error) {
	if v == nil {
		return nil, nil
	}
	s, err := props.Marshal(resource.PropertyMap{triggerKey: *v}, true)
	if err != nil {
		return nil, err
	}
	if pv, ok := s.GetFields()[triggerKey]; ok {
		return pv, nil
	}
	return structpb.NewNullValue(), nil
}

func urns(in []string) []resource.URN {
	if len(in) == 0 {
		return nil
	}
	out := make([]resource.URN, len(in))
	for i, s := range in {
		out[i] = resource.URN(s)
	}
	return out
}

func strs(in []resource.URN) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, len(in))
	for i, u := range in {
		out[i] = string(u)
	}
	return out
}

func cloneStrings(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return append([]string(nil), in...)
}

func cloneMap(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	return maps.Clone(in)
}

func cloneChecksums(in map[string][]byte) map[string][]byte {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(in))
	for k, v := range in {
		out[k] = append([]byte(nil), v...)
	}
	return out
}

func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}
