package enginetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func (e *Engine) registerStackTransform(cb *pulumirpc.Callback) error {
	if !e.cfg.supports("transforms") {
		return status.Error(codes.Unimplemented, "method RegisterStackTransform not implemented")
	}
	if cb.GetTarget() == "" {
		return errors.New("target must be specified")
	}
	if err := e.register(cb); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stackTransforms = append(e.stackTransforms, proto.Clone(cb).(*pulumirpc.Callback))
	return nil
}

func (e *Engine) registerStackInvokeTransform(cb *pulumirpc.Callback) error {
	if !e.cfg.supports("invokeTransforms") {
		return status.Error(codes.Unimplemented, "method RegisterStackInvokeTransform not implemented")
	}
	if cb.GetTarget() == "" {
		return errors.New("target must be specified")
	}
	if err := e.register(cb); err != nil {
		return err
	}
	// Waits while an invoke's transforms run.
	e.invokeMu.Lock()
	defer e.invokeMu.Unlock()
	e.invokeTransforms = append(e.invokeTransforms, proto.Clone(cb).(*pulumirpc.Callback))
	return nil
}

// transformInput is what a chain of resource transforms works on.
type transformInput struct {
	typ, name, parent, urn string
	custom                 bool
	// props is in output-value form.
	props *structpb.Struct
	opts  *pulumirpc.TransformResourceOptions
}

// applyTransforms runs a chain of resource transforms in order; each gets
// the previous one's result. It uses the RPC's context and holds no lock.
func (e *Engine) applyTransforms(ctx context.Context, in *transformInput, chain []*pulumirpc.Callback) error {
	for _, cb := range chain {
		if err := e.applyTransform(ctx, in, cb); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) applyTransform(ctx context.Context, in *transformInput, cb *pulumirpc.Callback) error {
	ev := Event{
		Kind: KindCallback, Callback: callbackResourceTransform, URN: in.urn,
		Target: cb.GetTarget(), Token: cb.GetToken(),
	}
	props, err := forReceiver(in.props, cb.GetAcceptsByteString())
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return err
	}
	if e.cfg.engine != engine3_260 {
		props = withDependencyLists(props)
	}
	req := &pulumirpc.TransformRequest{
		Type:       in.typ,
		Name:       in.name,
		Custom:     in.custom,
		Parent:     in.parent,
		Properties: props,
		Options:    proto.Clone(in.opts).(*pulumirpc.TransformResourceOptions),
	}
	ev.Request = req
	raw, err := e.invokeCallback(ctx, cb, req)
	if err != nil {
		err = fmt.Errorf("invoke transform: %w", err)
		ev.Err = err.Error()
		e.rec.add(ev)
		return err
	}
	var resp pulumirpc.TransformResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		err = fmt.Errorf("invoke transform: unmarshaling transform response: %w", err)
		ev.Err = err.Error()
		e.rec.add(ev)
		return err
	}
	ev.Response = &resp
	var changes []string
	if resp.Properties != nil {
		in.props = upgrade(resp.Properties)
		changes = append(changes, "props replaced")
	}
	if resp.Options != nil {
		in.opts = proto.Clone(resp.Options).(*pulumirpc.TransformResourceOptions)
		changes = append(changes, "options replaced")
	}
	if len(changes) == 0 {
		ev.Detail = "ok (no change)"
	} else {
		ev.Detail = "ok (" + strings.Join(changes, ", ") + ")"
	}
	e.rec.add(ev)
	return nil
}

// transformOptions builds the options a transform sees from a registration,
// after inheriting from the parent.
func (e *Engine) transformOptions(req *pulumirpc.RegisterResourceRequest, parent *ResourceState) *pulumirpc.TransformResourceOptions {
	o := &pulumirpc.TransformResourceOptions{
		DependsOn:               cloneStrings(req.GetDependencies()),
		IgnoreChanges:           cloneStrings(req.GetIgnoreChanges()),
		ReplaceOnChanges:        cloneStrings(req.GetReplaceOnChanges()),
		Version:                 req.GetVersion(),
		Provider:                req.GetProvider(),
		PluginDownloadUrl:       req.GetPluginDownloadURL(),
		DeletedWith:             req.GetDeletedWith(),
		AdditionalSecretOutputs: cloneStrings(req.GetAdditionalSecretOutputs()),
		Providers:               maps.Clone(req.GetProviders()),
		PluginChecksums:         maps.Clone(req.GetPluginChecksums()),
		Import:                  req.GetImportId(),
		HideDiff:                cloneStrings(req.GetHideDiffs()),
		ReplaceWith:             cloneStrings(req.GetReplaceWith()),
		ReplacementTrigger:      cloneValue(req.GetReplacementTrigger()),
	}
	if req.Protect != nil {
		p := req.GetProtect()
		o.Protect = &p
	}
	if req.RetainOnDelete != nil {
		r := req.GetRetainOnDelete()
		o.RetainOnDelete = &r
	}
	if req.GetDeleteBeforeReplaceDefined() || req.GetDeleteBeforeReplace() {
		d := req.GetDeleteBeforeReplace()
		o.DeleteBeforeReplace = &d
	}
	for _, a := range req.GetAliasURNs() {
		o.Aliases = append(o.Aliases, &pulumirpc.Alias{Alias: &pulumirpc.Alias_Urn{Urn: a}})
	}
	for _, a := range req.GetAliases() {
		o.Aliases = append(o.Aliases, proto.Clone(a).(*pulumirpc.Alias))
	}
	if t := req.GetCustomTimeouts(); t != nil {
		o.CustomTimeouts = &pulumirpc.RegisterResourceRequest_CustomTimeouts{
			Create: normalizeTimeout(t.GetCreate()),
			Update: normalizeTimeout(t.GetUpdate()),
			Delete: normalizeTimeout(t.GetDelete()),
			Read:   normalizeTimeout(t.GetRead()),
		}
	}
	if e.cfg.supports("resourceHooks") && req.Hooks != nil {
		o.Hooks = proto.Clone(req.Hooks).(*pulumirpc.RegisterResourceRequest_ResourceHooksBinding)
	}
	inheritFromParent(o, req, parent, e.goalProvider(req.GetParent()))
	return o
}

// inheritFromParent fills the options a child inherits from its parent, and
// resolves the provider a transform sees as the engine does: the provider
// option (inherited from the parent when it is of the same package, or for
// a component), then the resource's own providers[pkg], then its parent
// component's providers[pkg].
//
// parentProvider is the provider a custom parent was registered with.
func inheritFromParent(o *pulumirpc.TransformResourceOptions, req *pulumirpc.RegisterResourceRequest,
	parent *ResourceState, parentProvider string,
) {
	if parent != nil {
		if o.Protect == nil && parent.Protect {
			t := true
			o.Protect = &t
		}
		if o.RetainOnDelete == nil && parent.RetainOnDelete {
			t := true
			o.RetainOnDelete = &t
		}
		if o.DeletedWith == "" {
			o.DeletedWith = parent.DeletedWith
		}
	}
	if o.Provider == "" && parentProvider != "" &&
		((!req.GetCustom() && !req.GetRemote()) || packageOf(QualifiedType(providerURN(parentProvider))) == packageOf(req.GetType())) {
		o.Provider = parentProvider
	}
	if (req.GetCustom() || req.GetRemote()) && o.Provider == "" {
		pkg := packageOf(req.GetType())
		if ref := o.Providers[pkg]; ref != "" {
			o.Provider = ref
		} else if parent != nil && !parent.Custom {
			o.Provider = parent.Providers[pkg]
		}
	}
}

// goalProvider returns the provider a registered resource was registered
// with, for its children to inherit.
func (e *Engine) goalProvider(urn string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.resources[urn]; r != nil {
		return r.provider
	}
	return ""
}

// mergeParentProviders adds, for a component whose parent is a component,
// the parent's providers the component does not name itself, as the engine
// does once the transforms have run.
func mergeParentProviders(o *pulumirpc.TransformResourceOptions, custom bool, parent *ResourceState) {
	if custom || parent == nil || parent.Custom || len(parent.Providers) == 0 {
		return
	}
	merged := maps.Clone(parent.Providers)
	maps.Copy(merged, o.Providers)
	o.Providers = merged
}

// normalizeTimeout renders a timeout as the engine does after parsing it
// ("1000s" becomes "16m40s"). Values that do not parse are kept.
func normalizeTimeout(s string) string {
	if s == "" {
		return ""
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return s
	}
	return d.String()
}

// invoke serves ResourceMonitor.Invoke: invoke transforms, then the
// provider.
func (e *Engine) invoke(ctx context.Context, req *pulumirpc.ResourceInvokeRequest) (*pulumirpc.ResourceInvokeResponse, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()

	args, err := canonical(emptyIfNil(req.GetArgs()))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	opts := &pulumirpc.TransformInvokeOptions{
		Provider:          req.GetProvider(),
		PluginDownloadUrl: req.GetPluginDownloadURL(),
		Version:           req.GetVersion(),
		PluginChecksums:   maps.Clone(req.GetPluginChecksums()),
	}
	if opts.Provider == "" && req.GetParent() != "" {
		if p := e.stateOf(req.GetParent()); p != nil {
			opts.Provider = p.Providers[packageOf(req.GetTok())]
		}
	}
	if args, opts, err = e.applyInvokeTransforms(ctx, req.GetTok(), args, opts); err != nil {
		return nil, err
	}

	if req.GetTok() == "pulumi:pulumi:getResource" {
		return e.getResource(args)
	}

	// As in the engine, an invoke with no provider uses the default provider
	// of its package, which is created (and kept in the state) if needed.
	ref := opts.GetProvider()
	if ref == "" {
		if !e.beginStep() {
			return nil, errUnanswered
		}
		ref, err = e.defaultProvider(packageOf(req.GetTok()), opts.GetVersion())
		e.endStepRun()
		if err != nil {
			if e.isCancelled() {
				return nil, errUnanswered
			}
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	preq := &InvokeRequest{Token: req.GetTok(), Args: args, Provider: ref}
	presp, err := e.prov.invoke(e.base, preq)
	ev := Event{Kind: kindProviderInvoke, Name: req.GetTok(), Detail: "ok"}
	if err != nil {
		ev.Err = err.Error()
	}
	e.rec.add(ev)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.ResourceInvokeResponse{
		Return:   forProgram(emptyIfNil(presp.Return), true, req.GetAcceptResources()),
		Failures: presp.Failures,
	}, nil
}

// applyInvokeTransforms runs the stack's invoke transforms, in registration
// order, while holding the invoke transform lock. A callback's error is
// returned as it is.
func (e *Engine) applyInvokeTransforms(ctx context.Context, tok string, args *structpb.Struct,
	opts *pulumirpc.TransformInvokeOptions,
) (*structpb.Struct, *pulumirpc.TransformInvokeOptions, error) {
	e.invokeMu.Lock()
	defer e.invokeMu.Unlock()
	if e.cfg.noCallbacks {
		return args, opts, nil
	}
	for _, cb := range e.invokeTransforms {
		ev := Event{
			Kind: KindCallback, Callback: callbackInvokeTransform, Name: tok,
			Target: cb.GetTarget(), Token: cb.GetToken(),
		}
		sent, err := forReceiver(args, cb.GetAcceptsByteString())
		if err != nil {
			ev.Err = err.Error()
			e.rec.add(ev)
			return nil, nil, err
		}
		req := &pulumirpc.TransformInvokeRequest{
			Token:   tok,
			Args:    sent,
			Options: proto.Clone(opts).(*pulumirpc.TransformInvokeOptions),
		}
		ev.Request = req
		raw, err := e.invokeCallback(ctx, cb, req)
		if err != nil {
			ev.Err = err.Error()
			e.rec.add(ev)
			return nil, nil, err
		}
		var resp pulumirpc.TransformInvokeResponse
		if err := proto.Unmarshal(raw, &resp); err != nil {
			err = fmt.Errorf("invoke transform: unmarshaling transform response: %w", err)
			ev.Err = err.Error()
			e.rec.add(ev)
			return nil, nil, err
		}
		ev.Response = &resp
		var changes []string
		if resp.Args != nil {
			if args, err = canonical(resp.Args); err != nil {
				ev.Err = err.Error()
				e.rec.add(ev)
				return nil, nil, err
			}
			changes = append(changes, "args replaced")
		}
		if resp.Options != nil {
			opts = proto.Clone(resp.Options).(*pulumirpc.TransformInvokeOptions)
			changes = append(changes, "options replaced")
		}
		if len(changes) == 0 {
			ev.Detail = "ok (no change)"
		} else {
			ev.Detail = "ok (" + strings.Join(changes, ", ") + ")"
		}
		e.rec.add(ev)
	}
	return args, opts, nil
}

// getResource serves the built-in pulumi:pulumi:getResource invoke.
func (e *Engine) getResource(args *structpb.Struct) (*pulumirpc.ResourceInvokeResponse, error) {
	urn := args.GetFields()["urn"].GetStringValue()
	st := e.stateOf(urn)
	if st == nil {
		return nil, fmt.Errorf("unknown resource %s", urn)
	}
	ret := &structpb.Struct{Fields: map[string]*structpb.Value{
		"urn":   structpb.NewStringValue(st.URN),
		"id":    structpb.NewStringValue(st.ID),
		"state": structpb.NewStructValue(emptyIfNil(cloneStruct(st.Outputs))),
	}}
	return &pulumirpc.ResourceInvokeResponse{Return: ret}, nil
}
