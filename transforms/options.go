package transforms

import (
	"fmt"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ResourceOptions are a resource's options: the options of the resource
// being transformed (pulumirpc.TransformResourceOptions), and the options a
// hook is told about (pulumirpc.ResourceOptions, read-only there; see
// hooks.Args). It has one field for each field of those messages, with the
// same meaning, and converts both ways without loss: optional booleans stay
// pointers so that "unset" and "false" differ, and fields of newer engines
// that this version does not know are carried along untouched.
//
// The engine replaces all of a resource's options with the ones a transform
// returns, so a transform that changes one option must return the others as
// they were. [Args].Options is a complete copy made for that purpose: change
// it and return it (see [Args.WithOptions]).
//
// The zero value is the empty option set. A ResourceOptions is not safe for
// concurrent mutation.
type ResourceOptions struct {
	// Parent is the URN of the resource's parent (parent). A transform sees
	// it here and as [Args].Parent, and cannot change it: the engine takes
	// the parent from the registration, so Parent is never sent back.
	Parent resource.URN
	// DependsOn lists the resources this one explicitly depends on
	// (depends_on). The engine re-reads it only for a resource's own
	// transforms, not for parent or stack transforms.
	DependsOn []resource.URN
	// Protect, when set, marks the resource protected or unprotected
	// (protect). Nil leaves it unset, which is not the same as false.
	Protect *bool
	// IgnoreChanges lists property paths whose changes are ignored in diffs
	// (ignore_changes).
	IgnoreChanges []string
	// ReplaceOnChanges lists property paths whose changes force a
	// replacement (replace_on_changes).
	ReplaceOnChanges []string
	// Version is the provider plugin version (version).
	Version string
	// Aliases are the resource's earlier identities (aliases).
	Aliases []Alias
	// Provider is a reference ("URN::ID") to the provider resource to use
	// (provider).
	Provider string
	// CustomTimeouts are the create, update, delete and read timeouts
	// (custom_timeouts); nil means none.
	CustomTimeouts *CustomTimeouts
	// PluginDownloadURL is where the provider plugin is downloaded from
	// (plugin_download_url).
	PluginDownloadURL string
	// RetainOnDelete, when set, keeps the cloud resource when Pulumi deletes
	// it (retain_on_delete). Nil leaves it unset.
	RetainOnDelete *bool
	// DeletedWith names a resource whose deletion deletes this one
	// (deleted_with).
	DeletedWith resource.URN
	// DeleteBeforeReplace, when set, chooses delete-then-create replacement
	// (delete_before_replace). Nil leaves it unset.
	DeleteBeforeReplace *bool
	// AdditionalSecretOutputs lists outputs to treat as secrets
	// (additional_secret_outputs).
	AdditionalSecretOutputs []string
	// Providers maps packages to provider references, for components
	// (providers).
	Providers map[string]string
	// PluginChecksums maps platforms to provider plugin checksums
	// (plugin_checksums).
	PluginChecksums map[string][]byte
	// Hooks binds resource hooks (hooks); nil means none. The engine gets
	// the hooks' names.
	Hooks *HooksBinding
	// Import is the ID of an existing resource to import (import).
	Import resource.ID
	// HideDiff lists property paths whose diffs are hidden (hide_diff).
	HideDiff []string
	// ReplaceWith lists resources whose replacement replaces this one
	// (replace_with).
	ReplaceWith []resource.URN
	// ReplacementTrigger is a value whose change forces a replacement
	// (replacement_trigger). Nil leaves it unset; a pointer to a null value
	// sends an explicit null. Secrets, unknowns and output values in it are
	// kept as such.
	ReplacementTrigger *resource.PropertyValue

	unknown protoreflect.RawFields // fields of newer engines, sent back as received
}

// replacementTriggerKey labels the trigger in messages about values that do
// not convert.
const replacementTriggerKey = "replacementTrigger"

// optionsFromProto converts the wire form of resource options. A nil message
// converts to empty options. The result shares the message's slices and maps;
// it fails only when the replacement trigger is not a valid property value.
func optionsFromProto(pb *pulumirpc.TransformResourceOptions) (*ResourceOptions, error) {
	o := &ResourceOptions{}
	if pb == nil {
		return o, nil
	}
	o.DependsOn = wire.Strings[resource.URN](pb.GetDependsOn())
	o.Protect = pb.Protect
	o.IgnoreChanges = pb.GetIgnoreChanges()
	o.ReplaceOnChanges = pb.GetReplaceOnChanges()
	o.Version = pb.GetVersion()
	o.Aliases = aliasesFromProto(pb.GetAliases())
	o.Provider = pb.GetProvider()
	o.CustomTimeouts = timeoutsFromProto(pb.GetCustomTimeouts())
	o.PluginDownloadURL = pb.GetPluginDownloadUrl()
	o.RetainOnDelete = pb.RetainOnDelete
	o.DeletedWith = resource.URN(pb.GetDeletedWith())
	o.DeleteBeforeReplace = pb.DeleteBeforeReplace
	o.AdditionalSecretOutputs = pb.GetAdditionalSecretOutputs()
	o.Providers = pb.GetProviders()
	o.PluginChecksums = pb.GetPluginChecksums()
	o.Hooks = bindingFromProto(pb.GetHooks())
	o.Import = resource.ID(pb.GetImport())
	o.HideDiff = pb.GetHideDiff()
	o.ReplaceWith = wire.Strings[resource.URN](pb.GetReplaceWith())
	if t := pb.GetReplacementTrigger(); t != nil {
		v, err := wire.ValueFromProto(replacementTriggerKey, t)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", replacementTriggerKey, err)
		}
		o.ReplacementTrigger = &v
	}
	o.unknown = pb.ProtoReflect().GetUnknown()
	return o, nil
}

// toProto converts the options to their wire form. A nil receiver converts to
// nil. The message shares the options' slices and maps. It fails only when
// the replacement trigger holds a string that is not valid UTF-8 and
// acceptsByteStrings is false (see [callbacks.AcceptsByteStrings]).
func (o *ResourceOptions) toProto(acceptsByteStrings bool) (*pulumirpc.TransformResourceOptions, error) {
	if o == nil {
		return nil, nil
	}
	pb := &pulumirpc.TransformResourceOptions{
		DependsOn:               wire.Strings[string](o.DependsOn),
		Protect:                 o.Protect,
		IgnoreChanges:           o.IgnoreChanges,
		ReplaceOnChanges:        o.ReplaceOnChanges,
		Version:                 o.Version,
		Aliases:                 aliasesToProto(o.Aliases),
		Provider:                o.Provider,
		CustomTimeouts:          timeoutsToProto(o.CustomTimeouts),
		PluginDownloadUrl:       o.PluginDownloadURL,
		RetainOnDelete:          o.RetainOnDelete,
		DeletedWith:             string(o.DeletedWith),
		DeleteBeforeReplace:     o.DeleteBeforeReplace,
		AdditionalSecretOutputs: o.AdditionalSecretOutputs,
		Providers:               o.Providers,
		PluginChecksums:         o.PluginChecksums,
		Import:                  string(o.Import),
		HideDiff:                o.HideDiff,
		ReplaceWith:             wire.Strings[string](o.ReplaceWith),
	}
	pb.Hooks = o.Hooks.toProto()
	if o.ReplacementTrigger != nil {
		v, err := wire.ValueToProto(replacementTriggerKey, *o.ReplacementTrigger, acceptsByteStrings)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", replacementTriggerKey, err)
		}
		pb.ReplacementTrigger = v
	}
	wire.SetUnknown(pb, o.unknown)
	return pb, nil
}
