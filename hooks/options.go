package hooks

import (
	"fmt"
	"maps"

	"github.com/langhost/callbacks/internal/wire/optconv"
	"github.com/langhost/callbacks/transforms"
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
	// Parent is the URN of the resource's parent.
	Parent resource.URN
	// DependsOn lists the resources this one explicitly depends on.
	DependsOn []resource.URN
	// Protect marks the resource protected; nil when the engine did not say.
	Protect *bool
	// RetainOnDelete keeps the cloud resource when Pulumi deletes it; nil
	// when the engine did not say.
	RetainOnDelete *bool
	// DeleteBeforeReplace chooses delete-then-create replacement; nil when
	// the engine did not say.
	DeleteBeforeReplace *bool
	// IgnoreChanges lists property paths whose changes are ignored.
	IgnoreChanges []string
	// ReplaceOnChanges lists property paths whose changes force a
	// replacement.
	ReplaceOnChanges []string
	// HideDiff lists property paths whose diffs are hidden.
	HideDiff []string
	// AdditionalSecretOutputs lists outputs treated as secrets.
	AdditionalSecretOutputs []string
	// Aliases are the resource's earlier identities; hook requests carry
	// them as URNs.
	Aliases []transforms.Alias
	// Provider is a provider reference, "URN::ID".
	Provider string
	// Providers maps packages to provider references, for components.
	Providers map[string]string
	// Version is the provider plugin version.
	Version string
	// PluginDownloadURL is where the provider plugin is downloaded from.
	PluginDownloadURL string
	// PluginChecksums maps platforms to provider plugin checksums.
	PluginChecksums map[string][]byte
	// CustomTimeouts are the per-operation timeouts; nil when absent.
	CustomTimeouts *transforms.CustomTimeouts
	// DeletedWith names a resource whose deletion deletes this one.
	DeletedWith resource.URN
	// ReplaceWith lists resources whose replacement replaces this one.
	ReplaceWith []resource.URN
	// Import is the ID of an existing resource to adopt.
	Import resource.ID
	// Hooks is the resource's hook binding; nil when it has none.
	Hooks *Binding
	// ReplacementTrigger is the value whose change forces a replacement; nil
	// when absent. Secrets and unknowns in it are kept as such.
	ReplacementTrigger *resource.PropertyValue

	unknown protoreflect.RawFields // fields of newer engines
}

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
		DependsOn:               optconv.Strings[resource.URN](o.GetDependsOn()),
		Protect:                 optconv.CloneBool(o.Protect),
		RetainOnDelete:          optconv.CloneBool(o.RetainOnDelete),
		DeleteBeforeReplace:     optconv.CloneBool(o.DeleteBeforeReplace),
		IgnoreChanges:           cloneStrings(o.GetIgnoreChanges()),
		ReplaceOnChanges:        cloneStrings(o.GetReplaceOnChanges()),
		HideDiff:                cloneStrings(o.GetHideDiff()),
		AdditionalSecretOutputs: cloneStrings(o.GetAdditionalSecretOutputs()),
		Aliases:                 transforms.CloneAliases(transforms.AliasesFromProto(o.GetAliases())),
		Provider:                o.GetProvider(),
		Providers:               cloneMap(o.GetProviders()),
		Version:                 o.GetVersion(),
		PluginDownloadURL:       o.GetPluginDownloadUrl(),
		PluginChecksums:         cloneChecksums(o.GetPluginChecksums()),
		CustomTimeouts:          transforms.CloneTimeouts(transforms.TimeoutsFromProto(o.GetCustomTimeouts())),
		DeletedWith:             resource.URN(o.GetDeletedWith()),
		ReplaceWith:             optconv.Strings[resource.URN](o.GetReplaceWith()),
		Import:                  resource.ID(o.GetImport()),
		Hooks:                   transforms.HooksFromProto(o.GetHooks()),
		ReplacementTrigger:      trigger,
	}
	r.unknown = unknownOf(o)
	return r, nil
}

// ToProto converts o back to the wire message; nil gives nil. Only the
// replacement trigger can fail to convert.
func (o *ResourceOptions) ToProto() (*pulumirpc.ResourceOptions, error) {
	if o == nil {
		return nil, nil
	}
	trigger, err := valueToProto(o.ReplacementTrigger)
	if err != nil {
		return nil, fmt.Errorf("replacement trigger: %w", err)
	}
	p := &pulumirpc.ResourceOptions{
		Parent:                  string(o.Parent),
		DependsOn:               optconv.Strings[string](o.DependsOn),
		Protect:                 optconv.CloneBool(o.Protect),
		RetainOnDelete:          optconv.CloneBool(o.RetainOnDelete),
		DeleteBeforeReplace:     optconv.CloneBool(o.DeleteBeforeReplace),
		IgnoreChanges:           cloneStrings(o.IgnoreChanges),
		ReplaceOnChanges:        cloneStrings(o.ReplaceOnChanges),
		HideDiff:                cloneStrings(o.HideDiff),
		AdditionalSecretOutputs: cloneStrings(o.AdditionalSecretOutputs),
		Aliases:                 transforms.AliasesToProto(transforms.CloneAliases(o.Aliases)),
		Provider:                o.Provider,
		Providers:               cloneMap(o.Providers),
		Version:                 o.Version,
		PluginDownloadUrl:       o.PluginDownloadURL,
		PluginChecksums:         cloneChecksums(o.PluginChecksums),
		CustomTimeouts:          transforms.TimeoutsToProto(transforms.CloneTimeouts(o.CustomTimeouts)),
		DeletedWith:             string(o.DeletedWith),
		ReplaceWith:             optconv.Strings[string](o.ReplaceWith),
		Import:                  string(o.Import),
		Hooks:                   o.Hooks.ToProto(),
		ReplacementTrigger:      trigger,
	}
	setUnknown(p, o.unknown)
	return p, nil
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

// valueFromProto converts a replacement trigger; a vanished value (only an
// unknown dropped by the decoder could vanish, and the decoder keeps
// unknowns) reads as null.
func valueFromProto(v *structpb.Value) (*resource.PropertyValue, error) {
	if v == nil {
		return nil, nil
	}
	pv, err := optconv.ValueFromProto(triggerKey, v)
	if err != nil {
		return nil, err
	}
	return &pv, nil
}

func valueToProto(v *resource.PropertyValue) (*structpb.Value, error) {
	if v == nil {
		return nil, nil
	}
	return optconv.ValueToProto(triggerKey, *v, true)
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
