package hooks

import (
	"fmt"
	"maps"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

// optionsFromProto converts the options of a hook request (the
// pulumirpc.ResourceOptions message), copying what it keeps, into the one
// ResourceOptions type of the module. Every field of that message has a
// field there, and unset booleans stay distinct from false. A hook only
// reads them: nothing of them goes back to the engine.
//
// The engine fills in only some of them: depends-on, ignore-changes,
// replace-on-changes, provider, deleted-with, import, hide-diff, replace-with,
// hooks, parent, aliases (as URNs), custom timeouts, additional secret
// outputs, and Protect and RetainOnDelete, which are always set. Version,
// plugin download URL, providers, plugin checksums, delete-before-replace and
// the replacement trigger stay empty.
//
// It returns nil
// for nil, which is what engines without the SENDS_OPTIONS_TO_HOOKS feature
// send.
func optionsFromProto(o *pulumirpc.ResourceOptions) (*transforms.ResourceOptions, error) {
	if o == nil {
		return nil, nil
	}
	trigger, err := valueFromProto(o.GetReplacementTrigger())
	if err != nil {
		return nil, fmt.Errorf("replacement trigger: %w", err)
	}
	return &transforms.ResourceOptions{
		Parent:                  resource.URN(o.GetParent()),
		DependsOn:               wire.Strings[resource.URN](o.GetDependsOn()),
		Protect:                 wire.CloneBool(o.Protect),
		RetainOnDelete:          wire.CloneBool(o.RetainOnDelete),
		DeleteBeforeReplace:     wire.CloneBool(o.DeleteBeforeReplace),
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
		CustomTimeouts:          timeoutsFromProto(o.GetCustomTimeouts()),
		DeletedWith:             resource.URN(o.GetDeletedWith()),
		ReplaceWith:             wire.Strings[resource.URN](o.GetReplaceWith()),
		Import:                  resource.ID(o.GetImport()),
		Hooks:                   bindingFromProto(o.GetHooks()),
		ReplacementTrigger:      trigger,
	}, nil
}

// aliasesFromProto converts the aliases of a hook request: URNs, as the
// engine sends them to hooks, or specs.
func aliasesFromProto(in []*pulumirpc.Alias) []transforms.Alias {
	if len(in) == 0 {
		return nil
	}
	out := make([]transforms.Alias, len(in))
	for i, a := range in {
		s := a.GetSpec()
		if s == nil {
			out[i].URN = resource.URN(a.GetUrn())
			continue
		}
		out[i].Spec = &transforms.AliasSpec{
			Name: s.GetName(), Type: s.GetType(), Stack: s.GetStack(), Project: s.GetProject(),
			ParentURN: resource.URN(s.GetParentUrn()), NoParent: s.GetNoParent(),
		}
	}
	return out
}

func timeoutsFromProto(t *pulumirpc.RegisterResourceRequest_CustomTimeouts) *transforms.CustomTimeouts {
	if t == nil {
		return nil
	}
	return &transforms.CustomTimeouts{Create: t.GetCreate(), Update: t.GetUpdate(), Delete: t.GetDelete(), Read: t.GetRead()}
}

// bindingFromProto converts the hook binding of a hook request: every
// reference is [transforms.HookName].
func bindingFromProto(p *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *transforms.HooksBinding {
	if p == nil {
		return nil
	}
	b := &transforms.HooksBinding{}
	wire := [7][]string{p.GetBeforeCreate(), p.GetAfterCreate(), p.GetBeforeUpdate(), p.GetAfterUpdate(),
		p.GetBeforeDelete(), p.GetAfterDelete(), p.GetOnError()}
	for i, pt := range points(b) {
		for _, name := range wire[i] {
			*pt.refs = append(*pt.refs, transforms.HookName(name))
		}
	}
	return b
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
	pv, err := wire.ValueFromProto(triggerKey, v)
	if err != nil {
		return nil, err
	}
	return &pv, nil
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
