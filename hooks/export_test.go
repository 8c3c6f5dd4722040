package hooks

// What the external tests of this package reach that users do not: the
// adapters a registration makes, setters and an encoder for Args built by
// hand, the hook name space, and the helpers of Attach.

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// Adapt is the callbacks.Func Register makes of fn, in a deployment that is
// not a preview; AdaptErrorHook is RegisterErrorHook's.
func Adapt(fn Func) callbacks.Func               { return newFunc(fn, false) }
func AdaptErrorHook(fn ErrorFunc) callbacks.Func { return newErrorFunc(fn, false) }

var (
	OptionsFromProto = optionsFromProto
	AddHooks         = addHooks
)

// Validate is the check Attach makes of a binding, for references that say
// their kind.
func Validate(b *transforms.HooksBinding) error { return validate(b, nil) }

// NameHeldBy returns what holds name in mon's deployment's hook name space:
// the *Hook or *ErrorHook registered under it.
func NameHeldBy(mon *monitor.Monitor, name string) (any, bool) {
	return namesOf(mon).get(name)
}

func (h *Hook) OnDryRun() bool     { return h.onDryRun }
func (h *Hook) IgnoreErrors() bool { return h.ignoreErrors }

func (a *Args) SetNewInputs(m resource.PropertyMap)              { a.newInputs.Set(m) }
func (a *Args) SetOldInputs(m resource.PropertyMap)              { a.oldInputs.Set(m) }
func (a *Args) SetNewOutputs(m resource.PropertyMap)             { a.newOutputs.Set(m) }
func (a *Args) SetOldOutputs(m resource.PropertyMap)             { a.oldOutputs.Set(m) }
func (a *Args) SetNewOptions(o *transforms.ResourceOptions)      { a.newOptions = o }
func (a *Args) SetOldOptions(o *transforms.ResourceOptions)      { a.oldOptions = o }
func (a *ErrorArgs) SetNewInputs(m resource.PropertyMap)         { a.newInputs.Set(m) }
func (a *ErrorArgs) SetOldInputs(m resource.PropertyMap)         { a.oldInputs.Set(m) }
func (a *ErrorArgs) SetOldOutputs(m resource.PropertyMap)        { a.oldOutputs.Set(m) }
func (a *ErrorArgs) SetNewOptions(o *transforms.ResourceOptions) { a.newOptions = o }
func (a *ErrorArgs) SetOldOptions(o *transforms.ResourceOptions) { a.oldOptions = o }

// ToProto encodes a as the request the engine would send. Binary strings
// are encoded as byte-string envelopes.
func (a *Args) ToProto() (*pulumirpc.ResourceHookRequest, error) {
	req := &pulumirpc.ResourceHookRequest{Urn: string(a.URN), Id: string(a.ID), Name: a.Name, Type: a.Type}
	return req, encodeParts(a.err(),
		propMaps{{"new_inputs", a.NewInputs(), &req.NewInputs}, {"old_inputs", a.OldInputs(), &req.OldInputs},
			{"new_outputs", a.NewOutputs(), &req.NewOutputs}, {"old_outputs", a.OldOutputs(), &req.OldOutputs}},
		a.NewOptions(), &req.NewOptions, a.OldOptions(), &req.OldOptions)
}

// ToProto encodes a as the request the engine would send.
func (a *ErrorArgs) ToProto() (*pulumirpc.ErrorHookRequest, error) {
	req := &pulumirpc.ErrorHookRequest{
		Urn: string(a.URN), Id: string(a.ID), Name: a.Name, Type: a.Type,
		FailedOperation: string(a.FailedOperation), Errors: cloneStrings(a.Errors),
	}
	return req, encodeParts(a.err(),
		propMaps{{"new_inputs", a.NewInputs(), &req.NewInputs}, {"old_inputs", a.OldInputs(), &req.OldInputs},
			{"old_outputs", a.OldOutputs(), &req.OldOutputs}},
		a.NewOptions(), &req.NewOptions, a.OldOptions(), &req.OldOptions)
}

type propMaps []struct {
	name string
	in   resource.PropertyMap
	out  **structpb.Struct
}

// encodeParts encodes the maps and option sets of a request, leaving nil
// ones absent so that "not sent" survives a round trip.
func encodeParts(unread error, ms propMaps, newOpts *transforms.ResourceOptions, newOut **pulumirpc.ResourceOptions,
	oldOpts *transforms.ResourceOptions, oldOut **pulumirpc.ResourceOptions) error {
	if unread != nil {
		return unread
	}
	for _, m := range ms {
		if m.in == nil {
			continue
		}
		s, err := wire.MarshalStruct(m.in, true)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		*m.out = s
	}
	var err error
	if *newOut, err = OptionsToProto(newOpts); err != nil {
		return fmt.Errorf("new_options: %w", err)
	}
	if *oldOut, err = OptionsToProto(oldOpts); err != nil {
		return fmt.Errorf("old_options: %w", err)
	}
	return nil
}

// OptionsToProto converts o back to the wire message; nil gives nil.
func OptionsToProto(o *transforms.ResourceOptions) (*pulumirpc.ResourceOptions, error) {
	if o == nil {
		return nil, nil
	}
	var trigger *structpb.Value
	if o.ReplacementTrigger != nil {
		var err error
		if trigger, err = wire.ValueToProto(triggerKey, *o.ReplacementTrigger, true); err != nil {
			return nil, fmt.Errorf("replacement trigger: %w", err)
		}
	}
	p := &pulumirpc.ResourceOptions{
		Parent:                  string(o.Parent),
		DependsOn:               wire.Strings[string](o.DependsOn),
		Protect:                 o.Protect,
		RetainOnDelete:          o.RetainOnDelete,
		DeleteBeforeReplace:     o.DeleteBeforeReplace,
		IgnoreChanges:           o.IgnoreChanges,
		ReplaceOnChanges:        o.ReplaceOnChanges,
		HideDiff:                o.HideDiff,
		AdditionalSecretOutputs: o.AdditionalSecretOutputs,
		Provider:                o.Provider,
		Providers:               o.Providers,
		Version:                 o.Version,
		PluginDownloadUrl:       o.PluginDownloadURL,
		PluginChecksums:         o.PluginChecksums,
		DeletedWith:             string(o.DeletedWith),
		ReplaceWith:             wire.Strings[string](o.ReplaceWith),
		Import:                  string(o.Import),
		Hooks:                   BindingToProto(o.Hooks),
		ReplacementTrigger:      trigger,
	}
	for _, a := range o.Aliases {
		p.Aliases = append(p.Aliases, aliasToProto(a))
	}
	if t := o.CustomTimeouts; t != nil {
		p.CustomTimeouts = &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: t.Create, Update: t.Update, Delete: t.Delete, Read: t.Read}
	}
	return p, nil
}

func aliasToProto(a transforms.Alias) *pulumirpc.Alias {
	s := a.Spec
	if s == nil {
		return &pulumirpc.Alias{Alias: &pulumirpc.Alias_Urn{Urn: string(a.URN)}}
	}
	spec := &pulumirpc.Alias_Spec{Name: s.Name, Type: s.Type, Stack: s.Stack, Project: s.Project}
	switch {
	case s.NoParent:
		spec.Parent = &pulumirpc.Alias_Spec_NoParent{NoParent: true}
	case s.ParentURN != "":
		spec.Parent = &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: string(s.ParentURN)}
	}
	return &pulumirpc.Alias{Alias: &pulumirpc.Alias_Spec_{Spec: spec}}
}

// BindingToProto converts b to the hooks resource option; nil gives nil.
func BindingToProto(b *transforms.HooksBinding) *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	if b == nil {
		return nil
	}
	p := &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}
	wire := [7]*[]string{&p.BeforeCreate, &p.AfterCreate, &p.BeforeUpdate, &p.AfterUpdate, &p.BeforeDelete, &p.AfterDelete, &p.OnError}
	for i, pt := range points(b) {
		for _, r := range *pt.refs {
			*wire[i] = append(*wire[i], r.Name())
		}
	}
	return p
}

// BindingNames returns the hook names b binds at each point, keyed by field
// name ("BeforeCreate", …, "OnError"); points without hooks are left out.
func BindingNames(b *transforms.HooksBinding) map[string][]string {
	out := map[string][]string{}
	if b == nil {
		return out
	}
	for _, pt := range points(b) {
		for _, r := range *pt.refs {
			out[pt.name] = append(out[pt.name], r.Name())
		}
	}
	return out
}
