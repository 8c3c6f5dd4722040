package enginetest

import (
	"fmt"
	"slices"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// claimOld finds the prior state of a registration, by URN or alias.
func (e *Engine) claimOld(ns *ResourceState) *ResourceState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if old := e.prior[ns.URN]; old != nil {
		e.claimed[ns.URN] = ns.URN
		return old
	}
	for _, a := range ns.Aliases {
		if old := e.prior[a]; old != nil && e.claimed[a] == "" {
			e.claimed[a] = ns.URN
			return old
		}
	}
	return nil
}

// runRegistrationStep decides the step for a registration in the step
// generator, then runs it. An error means no step succeeded and nothing
// was committed.
func (e *Engine) runRegistrationStep(ns *ResourceState) (*ResourceState, error) {
	step, err := e.generate(func() (stepFunc, error) { return e.decideStep(ns) })
	if err != nil {
		return nil, err
	}
	return step()
}

// decideStep is the step generator's work on a registration: the prior
// state, the provider's Check and Diff, and the step they call for, which
// it returns to be run. The caller holds e.gen.
func (e *Engine) decideStep(ns *ResourceState) (stepFunc, error) {
	old := e.claimOld(ns)
	if old != nil {
		applyIgnoreChanges(ns, old)
	}
	if ns.Custom && !isProviderType(ns.Type) && ns.ImportID == "" {
		if err := e.check(ns, old); err != nil {
			return nil, err
		}
	}
	if old == nil {
		if ns.ImportID != "" {
			return func() (*ResourceState, error) { return e.importStep(ns) }, nil
		}
		return func() (*ResourceState, error) { return e.createStep(ns, opCreate, "") }, nil
	}
	op, dbr, err := e.diff(ns, old)
	if err != nil {
		// In the engine, Diff is part of generating the step: its error
		// makes no step and ends the deployment, even with ContinueOnError.
		e.errorDiag(ns.URN, err.Error())
		e.abortReported(ns.URN, err)
		return nil, err
	}
	switch op {
	case opSame:
		return func() (*ResourceState, error) {
			e.startStep(opSame, ns.URN)
			ns.ID, ns.Outputs = old.ID, cloneStruct(old.Outputs)
			e.commit(ns)
			return ns, nil
		}, nil
	case opUpdate:
		return func() (*ResourceState, error) { return e.updateStep(ns, old) }, nil
	default:
		return func() (*ResourceState, error) { return e.replaceStep(ns, old, dbr) }, nil
	}
}

// replaceStep replaces a resource: delete then create when dbr is set,
// else create now and delete the old one at the end.
func (e *Engine) replaceStep(ns, old *ResourceState, dbr bool) (*ResourceState, error) {
	if dbr {
		if err := e.deleteStep(old, opDeleteReplaced); err != nil {
			return nil, err
		}
		return e.createStep(ns, opReplace, old.ID)
	}
	st, err := e.createStep(ns, opReplace, old.ID)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.replaced = append(e.replaced, old)
	e.mu.Unlock()
	return st, nil
}

// applyIgnoreChanges keeps the old values of the inputs the resource
// ignores changes to.
func applyIgnoreChanges(ns, old *ResourceState) {
	for _, k := range ns.IgnoreChanges {
		if v, ok := old.Inputs.GetFields()[k]; ok {
			ns.Inputs.Fields[k] = cloneValue(v)
		} else {
			delete(ns.Inputs.Fields, k)
		}
	}
}

// check runs the provider's Check and replaces the inputs
// with the checked ones. Failures are reported one by one, then fail the
// resource as invalid. Either way the deployment ends, even with
// ContinueOnError: in the engine, Check is part of generating the step.
func (e *Engine) check(ns, old *ResourceState) error {
	req := &CheckRequest{URN: ns.URN, Type: ns.Type, Name: ns.Name, NewInputs: cloneStruct(ns.Inputs)}
	if old != nil {
		req.OldInputs = cloneStruct(old.Inputs)
	}
	resp, err := e.prov.check(e.base, req)
	ev := Event{Kind: kindProviderCheck, URN: ns.URN, Detail: "ok"}
	if err == nil && resp != nil && resp.Inputs != nil {
		var inputs *structpb.Struct
		if inputs, err = canonical(resp.Inputs); err == nil {
			ns.Inputs = inputs
		}
	}
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		e.errorDiag(ns.URN, err.Error())
		e.abortReported(ns.URN, err)
		return err
	}
	if resp == nil || len(resp.Failures) == 0 {
		e.rec.add(ev)
		return nil
	}
	ev.Err = fmt.Sprintf("%d check failures", len(resp.Failures))
	e.rec.add(ev)
	for _, f := range resp.Failures {
		if f.GetProperty() != "" {
			e.errorDiag(ns.URN, fmt.Sprintf("%s resource '%s': property %s value %s has a problem: %s",
				ns.Type, ns.Name, f.GetProperty(), propertyText(ns.Inputs.GetFields()[f.GetProperty()]), f.GetReason()))
		} else {
			e.errorDiag(ns.URN, fmt.Sprintf("%s resource '%s' has a problem: %s", ns.Type, ns.Name, f.GetReason()))
		}
	}
	err = fmt.Errorf("resource %s is invalid", ns.URN)
	e.abortReported(ns.URN, err)
	return err
}

// diff decides between same, update and replace.
func (e *Engine) diff(ns, old *ResourceState) (string, bool, error) {
	trigger := ns.ReplacementTrigger != nil && old.ReplacementTrigger != nil &&
		!proto.Equal(ns.ReplacementTrigger, old.ReplacementTrigger)
	if !ns.Custom || isProviderType(ns.Type) {
		switch {
		case trigger:
			return opReplace, ns.DeleteBeforeReplace, nil
		case len(changedKeys(old.Inputs, ns.Inputs)) > 0:
			return opUpdate, false, nil
		default:
			return opSame, false, nil
		}
	}
	resp, err := e.prov.diff(e.base, &DiffRequest{
		URN: ns.URN, Type: ns.Type, Name: ns.Name, ID: old.ID,
		OldInputs: cloneStruct(old.Inputs), OldOutputs: cloneStruct(old.Outputs),
		NewInputs: cloneStruct(ns.Inputs), IgnoreChanges: cloneStrings(ns.IgnoreChanges),
	})
	ev := Event{Kind: kindProviderDiff, URN: ns.URN}
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return "", false, err
	}
	if resp == nil {
		resp = &DiffResponse{}
	}
	replace := trigger || len(resp.Replace) > 0
	for _, k := range resp.Changed {
		if slices.Contains(ns.ReplaceOnChanges, k) || slices.Contains(ns.ReplaceOnChanges, "*") {
			replace = true
		}
	}
	switch {
	case replace:
		ev.Detail = "replace"
	case len(resp.Changed) > 0:
		ev.Detail = "update " + strings.Join(resp.Changed, ",")
	default:
		ev.Detail = "no changes"
	}
	e.rec.add(ev)
	switch {
	case replace:
		return opReplace, ns.DeleteBeforeReplace || resp.DeleteBeforeReplace, nil
	case len(resp.Changed) > 0:
		return opUpdate, false, nil
	default:
		return opSame, false, nil
	}
}

// stepFailed records a failed step that committed nothing.
func (e *Engine) stepFailed(i int, urn string, err error) (*ResourceState, error) {
	e.endStep(i, err)
	e.fail(urn, err)
	return nil, err
}

// afterFailed records an after hook failure: the step's state stays
// committed but the deployment fails.
func (e *Engine) afterFailed(i int, urn string, err error) {
	e.endStep(i, err)
	e.fail(urn, err)
}

func onError(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) []string {
	return b.GetOnError()
}

func (e *Engine) importStep(ns *ResourceState) (*ResourceState, error) {
	e.startStep(opImport, ns.URN)
	ns.ID = ns.ImportID
	ns.Outputs = cloneStruct(ns.Inputs)
	e.commit(ns)
	return ns, nil
}

// createStep creates a resource (op is opCreate, or opReplace of the
// resource with ID oldID).
func (e *Engine) createStep(ns *ResourceState, op string, oldID string) (*ResourceState, error) {
	i := e.startStep(op, ns.URN)
	binding := ns.Hooks
	before := &pulumirpc.ResourceHookRequest{
		Urn: ns.URN, Name: ns.Name, Type: ns.Type,
		NewInputs: cloneStruct(ns.Inputs), NewOptions: e.hookOptions(ns),
	}
	if err := e.runHooks(beforeCreate, binding, before); err != nil {
		return e.stepFailed(i, ns.URN, err)
	}
	switch {
	case ns.Custom && isProviderType(ns.Type):
		ns.ID = providerID(ns.URN, e.cfg.dryRun)
		ns.Outputs = cloneStruct(ns.Inputs)
	case ns.Custom:
		base := &pulumirpc.ErrorHookRequest{
			Urn: ns.URN, Name: ns.Name, Type: ns.Type,
			NewInputs: cloneStruct(ns.Inputs), NewOptions: e.hookOptions(ns),
		}
		var resp *CreateResponse
		err := e.withRetries("create", onError(binding), base, func(attempt int) error {
			r, err := e.prov.create(e.base, &CreateRequest{
				URN: ns.URN, Type: ns.Type, Name: ns.Name, Inputs: cloneStruct(ns.Inputs),
				Preview: e.cfg.dryRun, Attempt: attempt, replaces: oldID,
			})
			ev := Event{Kind: kindProviderCreate, URN: ns.URN, Detail: fmt.Sprintf("attempt %d", attempt)}
			if err != nil {
				ev.Err = err.Error()
			} else if r != nil {
				ev.Detail += " id=" + r.ID
			}
			e.rec.add(ev)
			if err == nil && r == nil {
				r = &CreateResponse{}
			}
			resp = r
			return err
		})
		if err != nil {
			return e.stepFailed(i, ns.URN, err)
		}
		outs, err := canonical(emptyIfNil(resp.Outputs))
		if err != nil {
			return e.stepFailed(i, ns.URN, err)
		}
		ns.ID, ns.Outputs = resp.ID, secretOutputs(outs, ns.AdditionalSecretOutputs)
	default:
		ns.Outputs = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	e.commit(ns)
	after := func(cur *ResourceState) error {
		return e.runHooks(afterCreate, binding, &pulumirpc.ResourceHookRequest{
			Urn: cur.URN, Id: cur.ID, Name: cur.Name, Type: cur.Type,
			NewInputs: cloneStruct(cur.Inputs), NewOutputs: cloneStruct(cur.Outputs),
			NewOptions: e.hookOptions(cur),
		})
	}
	e.finishCommitted(i, ns, after)
	return ns, nil
}

// finishCommitted runs a committed step's after hooks: now for a custom
// resource, at RegisterResourceOutputs for a component.
func (e *Engine) finishCommitted(i int, ns *ResourceState, after func(*ResourceState) error) {
	if ns.Custom {
		if err := after(ns); err != nil {
			e.afterFailed(i, ns.URN, err)
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.resources[ns.URN]; r != nil {
		r.after = &pendingAfter{step: i, run: after}
	}
}

// updateStep updates a resource in place.
func (e *Engine) updateStep(ns, old *ResourceState) (*ResourceState, error) {
	i := e.startStep(opUpdate, ns.URN)
	binding := ns.Hooks
	oldOpts := e.hookOptions(old)
	before := &pulumirpc.ResourceHookRequest{
		Urn: ns.URN, Id: old.ID, Name: ns.Name, Type: ns.Type,
		NewInputs: cloneStruct(ns.Inputs), OldInputs: cloneStruct(old.Inputs), OldOutputs: cloneStruct(old.Outputs),
		OldOptions: oldOpts, NewOptions: e.hookOptions(ns),
	}
	if err := e.runHooks(beforeUpdate, binding, before); err != nil {
		return e.stepFailed(i, ns.URN, err)
	}
	ns.ID = old.ID
	switch {
	case ns.Custom && isProviderType(ns.Type):
		ns.Outputs = cloneStruct(ns.Inputs)
	case ns.Custom:
		base := &pulumirpc.ErrorHookRequest{
			Urn: ns.URN, Id: old.ID, Name: ns.Name, Type: ns.Type,
			NewInputs: cloneStruct(ns.Inputs), OldInputs: cloneStruct(old.Inputs), OldOutputs: cloneStruct(old.Outputs),
			OldOptions: oldOpts, NewOptions: e.hookOptions(ns),
		}
		var resp *UpdateResponse
		err := e.withRetries("update", onError(binding), base, func(attempt int) error {
			r, err := e.prov.update(e.base, &UpdateRequest{
				URN: ns.URN, Type: ns.Type, Name: ns.Name, ID: old.ID,
				OldInputs: cloneStruct(old.Inputs), OldOutputs: cloneStruct(old.Outputs),
				NewInputs: cloneStruct(ns.Inputs), Preview: e.cfg.dryRun, Attempt: attempt,
			})
			ev := Event{Kind: kindProviderUpdate, URN: ns.URN, Detail: fmt.Sprintf("attempt %d", attempt)}
			if err != nil {
				ev.Err = err.Error()
			}
			e.rec.add(ev)
			if err == nil && r == nil {
				r = &UpdateResponse{}
			}
			resp = r
			return err
		})
		if err != nil {
			return e.stepFailed(i, ns.URN, err)
		}
		outs, err := canonical(emptyIfNil(resp.Outputs))
		if err != nil {
			return e.stepFailed(i, ns.URN, err)
		}
		ns.Outputs = secretOutputs(outs, ns.AdditionalSecretOutputs)
	default:
		ns.Outputs = cloneStruct(emptyIfNil(old.Outputs))
	}
	e.commit(ns)
	after := func(cur *ResourceState) error {
		return e.runHooks(afterUpdate, binding, &pulumirpc.ResourceHookRequest{
			Urn: cur.URN, Id: cur.ID, Name: cur.Name, Type: cur.Type,
			NewInputs: cloneStruct(cur.Inputs), OldInputs: cloneStruct(old.Inputs),
			NewOutputs: cloneStruct(cur.Outputs), OldOutputs: cloneStruct(old.Outputs),
			OldOptions: oldOpts, NewOptions: e.hookOptions(cur),
		})
	}
	e.finishCommitted(i, ns, after)
	return ns, nil
}
