package enginetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// resource is a URN registered in this deployment. Its fields are guarded
// by Engine.mu. A committed state is never mutated; changes replace it.
type resource struct {
	urn string
	// own are the resource's own transforms; its children run them as
	// ancestor transforms.
	own []*pulumirpc.Callback
	// state is the committed state, nil until the step succeeds.
	state *ResourceState
	// after is a component's after hook, run at RegisterResourceOutputs.
	after *pendingAfter
	// provider is the provider a custom resource was registered with, which
	// its children of the same package inherit. (As in the engine, a
	// component's provider option is not inherited.)
	provider string
}

type pendingAfter struct {
	step int
	run  func(cur *ResourceState) error
}

// stateOf returns the committed state of a resource of this deployment.
func (e *Engine) stateOf(urn string) *ResourceState {
	if urn == "" {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.resources[urn]; r != nil {
		return r.state
	}
	return nil
}

// reserve claims a URN for this deployment.
func (e *Engine) reserve(urn string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.resources[urn]; ok {
		return status.Errorf(codes.InvalidArgument, "Duplicate resource URN '%s'; try giving it a unique name", urn)
	}
	e.resources[urn] = &resource{urn: urn}
	return nil
}

// release gives a URN back after a registration that produced no step.
func (e *Engine) release(urn string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.resources, urn)
	if i := slices.Index(e.order, urn); i >= 0 {
		e.order = slices.Delete(e.order, i, i+1)
	}
}

// commit records a resource's new state. As in the engine, the state lists
// resources in the order their steps complete: a resource's default
// provider, created before the resource's step starts, comes before it.
func (e *Engine) commit(ns *ResourceState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.resources[ns.URN]; r != nil {
		if r.state == nil {
			e.order = append(e.order, ns.URN)
		}
		r.state = ns
	}
}

// transformChain returns, for a registration, its own transforms, then its
// ancestors' own transforms (parent first), then a copy of the stack's.
func (e *Engine) transformChain(own []*pulumirpc.Callback, parent string) []*pulumirpc.Callback {
	chain := append([]*pulumirpc.Callback(nil), own...)
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	for p := parent; p != "" && !seen[p]; {
		seen[p] = true
		r := e.resources[p]
		if r == nil {
			break
		}
		chain = append(chain, r.own...)
		if r.state == nil {
			break
		}
		p = r.state.Parent
	}
	return append(chain, e.stackTransforms...)
}

// resultSkip is the Result value 3.260's protocol named SKIP.
const resultSkip pulumirpc.Result = 2

// registration is one RegisterResource call as the engine works on it:
// what it was asked, then what the transforms made of it.
type registration struct {
	req       *pulumirpc.RegisterResourceRequest
	urn       string
	remoteKey string // a remote component's, and its provider's registration of it
	parent    *ResourceState
	// inputs are the request's until the transforms run, then theirs.
	inputs *structpb.Struct
	// own are the resource's own transforms: the request's, or those the
	// program gave the remote registration this one constructs.
	own []*pulumirpc.Callback
	// deps are the property dependencies, dependsOn the dependencies; opts
	// are the options after the transforms.
	deps       map[string][]string
	dependsOn  []string
	opts       *pulumirpc.TransformResourceOptions
	migrations []*pulumirpc.Callback
}

// registerResource serves ResourceMonitor.RegisterResource: the callbacks
// it carries, its transforms, then a step (or, for a remote component, the
// provider's Construct). Each concern is a method of its own below.
func (e *Engine) registerResource(
	ctx context.Context, req *pulumirpc.RegisterResourceRequest,
) (*pulumirpc.RegisterResourceResponse, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()

	if err := e.admitMigrations(req); err != nil {
		return nil, err
	}
	if req.GetType() == "" || req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "a resource needs a type and a name")
	}
	inputs, err := canonical(emptyIfNil(req.GetObject()))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	r := &registration{
		req: req, urn: e.URN(req.GetParent(), req.GetType(), req.GetName()),
		remoteKey: req.GetParent() + "::" + req.GetType() + "::" + req.GetName(),
		parent:    e.stateOf(req.GetParent()), inputs: inputs,
	}
	if err := e.ownTransforms(r); err != nil {
		return nil, err
	}
	if !req.GetRemote() {
		if err := e.reserve(r.urn); err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.resources[r.urn].own = r.own
		e.mu.Unlock()
	}
	if err := e.transform(ctx, r); err != nil {
		if !req.GetRemote() {
			e.release(r.urn)
		}
		return nil, err
	}
	e.takeMigrations(r)
	if req.GetRemote() {
		if len(r.own) > 0 {
			e.mu.Lock()
			e.remoteTransforms[r.remoteKey] = r.own
			e.mu.Unlock()
		}
		return e.construct(ctx, req, r.urn, r.inputs, r.opts)
	}
	return e.registrationStep(r)
}

// admitMigrations refuses the state migrations of a registration under an
// engine that does not run them, and dials their callback servers.
func (e *Engine) admitMigrations(req *pulumirpc.RegisterResourceRequest) error {
	if len(req.GetStateMigrations()) == 0 {
		return nil
	}
	if !e.cfg.runsMigrations() {
		return status.Error(codes.FailedPrecondition, "state migrations are not supported by this deployment")
	}
	for _, cb := range req.GetStateMigrations() {
		if err := e.register(cb); err != nil {
			return err
		}
	}
	return nil
}

// ownTransforms sets the registration's own transforms, dialling their
// servers.
func (e *Engine) ownTransforms(r *registration) error {
	if !e.cfg.supports("transforms") {
		return nil
	}
	// As in the engine, the provider's registration of a remote component
	// gets the transforms the program gave the remote registration, if it
	// gave any, in place of its own.
	if !r.req.GetRemote() {
		e.mu.Lock()
		if pending := e.remoteTransforms[r.remoteKey]; len(pending) > 0 {
			r.own = pending
			delete(e.remoteTransforms, r.remoteKey)
		}
		e.mu.Unlock()
	}
	if r.own != nil {
		return nil
	}
	for _, cb := range r.req.GetTransforms() {
		if err := e.register(cb); err != nil {
			return err
		}
		r.own = append(r.own, proto.Clone(cb).(*pulumirpc.Callback))
	}
	return nil
}

// requestDependencies returns the property dependencies as the engine
// reads them from a request: those of the request, or, when it sends none
// (and the resource is not remote), every dependency for every property;
// plus those of its output values.
func requestDependencies(req *pulumirpc.RegisterResourceRequest, inputs *structpb.Struct) map[string][]string {
	deps := map[string][]string{}
	for k, v := range req.GetPropertyDependencies() {
		deps[k] = cloneStrings(v.GetUrns())
	}
	if len(req.GetPropertyDependencies()) == 0 && !req.GetRemote() && len(req.GetDependencies()) > 0 {
		for k := range inputs.GetFields() {
			deps[k] = cloneStrings(req.GetDependencies())
		}
	}
	for k, urns := range dependenciesOf(req.GetObject()) {
		deps[k] = mergeStrings(deps[k], urns)
	}
	return deps
}

// transform runs the registration's transform chain and sets its inputs,
// options and dependencies to what the chain returned.
func (e *Engine) transform(ctx context.Context, r *registration) error {
	req := r.req
	useTransforms := e.cfg.supports("transforms")
	r.deps = requestDependencies(req, r.inputs)
	// As in the engine, only the resource's own transforms (those of the
	// request) make it track dependencies through the transforms.
	hasOwn := useTransforms && len(req.GetTransforms()) > 0
	start := r.inputs
	if hasOwn {
		start = withDependencies(r.inputs, r.deps)
	}
	in := &transformInput{
		typ: req.GetType(), name: req.GetName(), parent: req.GetParent(), urn: r.urn,
		custom: req.GetCustom(), props: upgrade(start), opts: e.transformOptions(req, r.parent),
	}
	var chain []*pulumirpc.Callback
	if useTransforms && !e.cfg.noCallbacks {
		chain = e.transformChain(r.own, req.GetParent())
	}
	if err := e.applyTransforms(ctx, in, chain); err != nil {
		return err
	}
	inputs, err := canonical(in.props)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	r.inputs, r.opts = inputs, in.opts
	mergeParentProviders(r.opts, req.GetCustom(), r.parent)
	r.dependsOn = cloneStrings(req.GetDependencies())
	if hasOwn {
		// After the transforms, the engine rebuilds the property
		// dependencies from the output values and adds them all to the
		// resource's dependencies.
		r.deps = dependenciesOf(in.props)
		r.dependsOn = cloneStrings(r.opts.GetDependsOn())
		for _, k := range slices.Sorted(maps.Keys(r.deps)) {
			r.dependsOn = mergeStrings(r.dependsOn, r.deps[k])
		}
	}
	return nil
}

// takeMigrations sets the state migrations the registration runs. As in
// the engine, the migrations a program gives a remote component run when
// its provider registers it, after the provider's own.
func (e *Engine) takeMigrations(r *registration) {
	r.migrations = r.req.GetStateMigrations()
	e.mu.Lock()
	defer e.mu.Unlock()
	if pending := e.remoteMigrations[r.remoteKey]; !r.req.GetRemote() && len(pending) > 0 {
		r.migrations = append(slices.Clone(r.migrations), pending...)
		delete(e.remoteMigrations, r.remoteKey)
	} else if r.req.GetRemote() && len(r.migrations) > 0 {
		e.remoteMigrations[r.remoteKey] = r.migrations
	}
}

// registrationStep runs the registration's state migrations, then its step,
// unless the deployment or a dependency's failure rules it out, and
// answers the program. As in the engine, its provider is resolved first
// (the resource monitor does it, creating a default provider if need be),
// then the step generator takes the registration, after every one that
// reached it before: it runs the migrations, looks at the dependencies'
// failures, calls the provider's Check and Diff and decides the step. The
// step then runs here, while the generator goes on to later registrations.
func (e *Engine) registrationStep(r *registration) (*pulumirpc.RegisterResourceResponse, error) {
	req, urn := r.req, r.urn
	ns := e.newState(req, urn, r.inputs, r.opts, r.dependsOn, r.deps)
	if !e.beginStep() {
		e.rec.add(Event{Kind: KindStep, URN: urn, Detail: "not run: the deployment was cancelled after an error"})
		return nil, errUnanswered
	}
	defer e.endStepRun()
	if err := e.resolveProvider(ns, r.opts); err != nil {
		return nil, err
	}
	var skip string
	step, err := e.generate(func() (stepFunc, error) {
		if e.isCancelled() {
			// A failure while this registration waited ended the
			// deployment, and with it the step generation.
			e.rec.add(Event{Kind: KindStep, URN: urn, Detail: "not run: the deployment was cancelled after an error"})
			return nil, errUnanswered
		}
		// Migrations run before the dependencies' failures are looked at.
		err := e.replacedByMigration(urn)
		if err == nil {
			err = e.runMigrations(urn, ns.Aliases, r.migrations)
		}
		if err != nil {
			e.errorDiag(urn, err.Error())
			e.abortReported(urn, err)
			return nil, errUnanswered
		}
		if skip = e.skipReason(ns); skip != "" {
			e.rec.add(Event{Kind: KindStep, URN: urn, Detail: "not run: " + skip})
			return nil, nil
		}
		if e.cfg.destroy {
			return e.destroyStep(ns)
		}
		return e.decideStep(ns)
	})
	if errors.Is(err, errUnanswered) {
		return nil, err
	}
	if skip != "" {
		return e.skipped(req, urn)
	}
	var st *ResourceState
	if err == nil {
		st, err = step()
	}
	if err != nil {
		if e.isCancelled() {
			return nil, errUnanswered
		}
		if e.cfg.continueOnError && req.GetSupportsResultReporting() {
			return &pulumirpc.RegisterResourceResponse{Urn: urn, Result: pulumirpc.Result_FAIL}, nil
		}
		return nil, status.Error(codes.Internal, "resource registration failed")
	}
	// As in the engine, property dependencies come back only from a remote
	// Construct.
	return &pulumirpc.RegisterResourceResponse{
		Urn:    urn,
		Id:     st.ID,
		Object: forProgram(emptyIfNil(st.Outputs), req.GetAcceptSecrets(), req.GetAcceptResources()),
	}, nil
}

// skipped answers a registration whose step does not run because a
// dependency failed.
func (e *Engine) skipped(req *pulumirpc.RegisterResourceRequest, urn string) (*pulumirpc.RegisterResourceResponse, error) {
	if e.cfg.continueOnError && req.GetSupportsResultReporting() {
		if e.cfg.engine == engine3_260 {
			// 3.260's protocol had a third result, SKIP, since removed.
			return &pulumirpc.RegisterResourceResponse{Urn: urn, Result: resultSkip}, nil
		}
		// 3.274 answers a skipped registration as a success whose
		// outputs are unknown, so dependents see unknowns.
		return &pulumirpc.RegisterResourceResponse{Urn: urn, Result: pulumirpc.Result_SUCCESS, Unknown: true}, nil
	}
	// The engine's answer to a program that cannot read a result.
	return nil, status.Error(codes.Internal, "resource registration failed")
}

// resolveProvider sets the provider of a custom resource: the one the
// transforms left (the providers map was already folded into it before
// they ran), or the default provider of its package, created now if need
// be.
func (e *Engine) resolveProvider(ns *ResourceState, opts *pulumirpc.TransformResourceOptions) error {
	if !ns.Custom {
		return nil
	}
	if !isProviderType(ns.Type) {
		ref := opts.GetProvider()
		if ref == "" {
			var err error
			if ref, err = e.defaultProvider(packageOf(ns.Type), opts.GetVersion()); err != nil {
				if e.isCancelled() {
					return errUnanswered
				}
				return status.Error(codes.Unknown, err.Error())
			}
		}
		ns.Provider = ref
	}
	e.mu.Lock()
	if r := e.resources[ns.URN]; r != nil {
		r.provider = ns.Provider
	}
	e.mu.Unlock()
	return nil
}

// newState builds the goal state of a registration from its options after
// the transforms.
func (e *Engine) newState(req *pulumirpc.RegisterResourceRequest, urn string, inputs *structpb.Struct,
	opts *pulumirpc.TransformResourceOptions, dependsOn []string, deps map[string][]string,
) *ResourceState {
	ns := &ResourceState{
		URN:                     urn,
		Type:                    req.GetType(),
		Name:                    req.GetName(),
		Custom:                  req.GetCustom(),
		Parent:                  req.GetParent(),
		Inputs:                  inputs,
		DependsOn:               dependsOn,
		Protect:                 opts.GetProtect(),
		RetainOnDelete:          opts.GetRetainOnDelete(),
		DeletedWith:             opts.GetDeletedWith(),
		ReplaceWith:             cloneStrings(opts.GetReplaceWith()),
		IgnoreChanges:           cloneStrings(opts.GetIgnoreChanges()),
		ReplaceOnChanges:        cloneStrings(opts.GetReplaceOnChanges()),
		HideDiff:                cloneStrings(opts.GetHideDiff()),
		AdditionalSecretOutputs: cloneStrings(opts.GetAdditionalSecretOutputs()),
		DeleteBeforeReplace:     opts.GetDeleteBeforeReplace(),
		ImportID:                opts.GetImport(),
		ReplacementTrigger:      cloneValue(opts.GetReplacementTrigger()),
		Aliases:                 e.aliasURNs(opts.GetAliases(), req),
	}
	if len(deps) > 0 {
		ns.PropertyDependencies = deps
	}
	if !ns.Custom && len(opts.GetProviders()) > 0 {
		ns.Providers = maps.Clone(opts.GetProviders())
	}
	if t := opts.GetCustomTimeouts(); t != nil {
		ns.CustomTimeouts = proto.Clone(t).(*pulumirpc.RegisterResourceRequest_CustomTimeouts)
	}
	if h := opts.GetHooks(); h != nil && e.cfg.supports("resourceHooks") {
		ns.Hooks = proto.Clone(h).(*pulumirpc.RegisterResourceRequest_ResourceHooksBinding)
		if !e.cfg.supports("errorHooks") {
			ns.Hooks.OnError = nil
		}
	}
	return ns
}

// aliasURNs resolves aliases to URNs.
func (e *Engine) aliasURNs(aliases []*pulumirpc.Alias, req *pulumirpc.RegisterResourceRequest) []string {
	var out []string
	for _, a := range aliases {
		switch x := a.GetAlias().(type) {
		case *pulumirpc.Alias_Urn:
			out = append(out, x.Urn)
		case *pulumirpc.Alias_Spec_:
			s := x.Spec
			name, typ := or(s.GetName(), req.GetName()), or(s.GetType(), req.GetType())
			stack, project := or(s.GetStack(), e.cfg.stack), or(s.GetProject(), e.cfg.project)
			parent := req.GetParent()
			switch p := s.GetParent().(type) {
			case *pulumirpc.Alias_Spec_ParentUrn:
				parent = p.ParentUrn
			case *pulumirpc.Alias_Spec_NoParent:
				if p.NoParent {
					parent = ""
				}
			}
			out = append(out, newURN(stack, project, QualifiedType(parent), typ, name))
		}
	}
	return out
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// skipReason says why a registration's step must not run, or "".
func (e *Engine) skipReason(ns *ResourceState) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	deps := append([]string{ns.Parent, ns.DeletedWith}, ns.DependsOn...)
	for _, urns := range ns.PropertyDependencies {
		deps = append(deps, urns...)
	}
	for _, d := range deps {
		if d != "" && e.failed[d] {
			return fmt.Sprintf("it depends on %s, which failed", d)
		}
	}
	return ""
}

// construct serves a remote component registration: the provider builds it
// by registering with this engine.
func (e *Engine) construct(ctx context.Context, req *pulumirpc.RegisterResourceRequest, urn string,
	inputs *structpb.Struct, opts *pulumirpc.TransformResourceOptions,
) (*pulumirpc.RegisterResourceResponse, error) {
	mon, err := e.self()
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	// Constructing needs the component's provider: without one, the
	// default provider of its package, which then stays in the state.
	// (Only that step counts as running: Construct itself waits for the
	// component's children, whose registrations are steps of their own.)
	ref := opts.GetProvider()
	if ref == "" {
		if !e.beginStep() {
			return nil, errUnanswered
		}
		ref, err = e.defaultProvider(packageOf(req.GetType()), opts.GetVersion())
		e.endStepRun()
		if err != nil {
			if e.isCancelled() {
				return nil, errUnanswered
			}
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	resp, err := e.prov.construct(ctx, &ConstructRequest{
		Type: req.GetType(), Name: req.GetName(), Parent: req.GetParent(),
		Inputs: cloneStruct(inputs), Options: proto.Clone(opts).(*pulumirpc.TransformResourceOptions),
		Hooks: opts.GetHooks(), Provider: ref, Monitor: mon,
	})
	ev := Event{Kind: kindProviderConstruct, URN: urn, Detail: "ok"}
	if err != nil {
		// As in the engine: the failure is reported without a URN (the
		// provider gave none), the deployment is aborted, and the program
		// is told the monitor shut down.
		ev.Err = err.Error()
		e.rec.add(ev)
		if e.isCancelled() {
			// The deployment failed first (a child's step, say): the
			// engine has no more to report.
			return nil, errUnanswered
		}
		msg := err.Error()
		if st, ok := status.FromError(err); ok {
			msg = st.Message()
		}
		e.errorDiag("", fmt.Sprintf("%s resource '%s' has a problem: %s", req.GetType(), req.GetName(), msg))
		e.abortReported(urn, err)
		return nil, status.Error(codes.Unknown, "resource monitor shut down")
	}
	e.rec.add(ev)
	if resp == nil {
		resp = &ConstructResponse{URN: urn}
	}
	st, err := canonical(emptyIfNil(resp.State))
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	// Every output gets its dependencies: those the provider gave, plus
	// those of the output values it returned.
	outDeps := dependenciesOf(resp.State)
	propDeps := map[string]*pulumirpc.RegisterResourceResponse_PropertyDependencies{}
	for k := range st.GetFields() {
		propDeps[k] = &pulumirpc.RegisterResourceResponse_PropertyDependencies{
			Urns: mergeStrings(resp.PropertyDependencies[k], outDeps[k]),
		}
	}
	for k, urns := range resp.PropertyDependencies {
		if propDeps[k] == nil {
			propDeps[k] = &pulumirpc.RegisterResourceResponse_PropertyDependencies{Urns: cloneStrings(urns)}
		}
	}
	return &pulumirpc.RegisterResourceResponse{
		Urn:                  resp.URN,
		Object:               forProgram(st, req.GetAcceptSecrets(), req.GetAcceptResources()),
		PropertyDependencies: propDeps,
	}, nil
}

// registerResourceOutputs serves ResourceMonitor.RegisterResourceOutputs.
// A component's after hooks run here, while the RPC is pending. As in the
// engine, whose event loop serves it between two registrations, it holds
// the step generator.
func (e *Engine) registerResourceOutputs(_ context.Context, req *pulumirpc.RegisterResourceOutputsRequest) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.leave()
	outs, err := canonical(emptyIfNil(req.GetOutputs()))
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if !e.beginStep() {
		return errUnanswered
	}
	defer e.endStepRun()
	e.gen.Lock()
	defer e.gen.Unlock()
	e.mu.Lock()
	r := e.resources[req.GetUrn()]
	if r == nil || r.state == nil {
		e.mu.Unlock()
		return status.Errorf(codes.NotFound, "unknown resource %s", req.GetUrn())
	}
	ns := r.state.Clone()
	if ns.Custom {
		if ns.Outputs == nil {
			ns.Outputs = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		}
		maps.Copy(ns.Outputs.Fields, outs.Fields)
	} else {
		ns.Outputs = outs
	}
	r.state = ns
	after := r.after
	r.after = nil
	e.mu.Unlock()
	if after != nil {
		if err := after.run(ns); err != nil {
			e.afterFailed(after.step, ns.URN, err)
		}
	}
	return nil
}

// readResource serves ResourceMonitor.ReadResource: the resource is
// recorded as external, with no transforms and no hooks.
func (e *Engine) readResource(_ context.Context, req *pulumirpc.ReadResourceRequest) (*pulumirpc.ReadResourceResponse, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	urn := e.URN(req.GetParent(), req.GetType(), req.GetName())
	props, err := canonical(emptyIfNil(req.GetProperties()))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ref := req.GetProvider()
	if ref == "" {
		if ref, err = e.defaultProvider(packageOf(req.GetType()), req.GetVersion()); err != nil {
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	if !e.beginStep() {
		return nil, errUnanswered
	}
	defer e.endStepRun()
	// The read step is decided by the step generator, as a registration's
	// is; it calls no provider, so it runs there too.
	e.gen.Lock()
	defer e.gen.Unlock()
	if err := e.reserve(urn); err != nil {
		return nil, err
	}
	e.startStep(opRead, urn)
	ns := &ResourceState{
		URN: urn, Type: req.GetType(), Name: req.GetName(), Custom: true, External: true,
		Parent: req.GetParent(), ID: req.GetId(), Inputs: props, Outputs: cloneStruct(props),
		Provider: ref, DependsOn: cloneStrings(req.GetDependencies()),
	}
	e.commit(ns)
	return &pulumirpc.ReadResourceResponse{
		Urn:        urn,
		Properties: forProgram(ns.Outputs, req.GetAcceptSecrets(), req.GetAcceptResources()),
	}, nil
}
