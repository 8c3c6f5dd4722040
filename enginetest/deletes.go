package enginetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// deleteStep deletes a resource of the prior state, with the hooks its old
// binding names, resolved in this deployment's registry.
func (e *Engine) deleteStep(old *ResourceState, op string) error {
	i := e.startStep(op, old.URN)
	var binding *pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	if e.cfg.supports("resourceHooks") {
		binding = old.Hooks
	}
	req := &pulumirpc.ResourceHookRequest{
		Urn: old.URN, Id: old.ID, Name: old.Name, Type: old.Type,
		OldInputs: cloneStruct(old.Inputs), OldOutputs: cloneStruct(old.Outputs),
		OldOptions: e.hookOptions(old),
	}
	if err := e.runHooks(beforeDelete, binding, req); err != nil {
		_, err = e.stepFailed(i, old.URN, err)
		return err
	}
	if old.Protect {
		err := fmt.Errorf("unable to delete resource %q\nas it is currently marked for protection. "+
			"To unprotect the resource, remove the `protect` flag from the resource in your Pulumi program and run `pulumi up`",
			old.URN)
		// The engine goes on past a protected resource, to report them all.
		e.endStep(i, err)
		e.failStep(old.URN, err, true)
		return err
	}
	if old.Custom && !isProviderType(old.Type) && !old.RetainOnDelete && !e.deletedWithTarget(old) && !e.cfg.dryRun {
		base := &pulumirpc.ErrorHookRequest{
			Urn: old.URN, Id: old.ID, Name: old.Name, Type: old.Type,
			OldInputs: cloneStruct(old.Inputs), OldOutputs: cloneStruct(old.Outputs),
			OldOptions: e.hookOptions(old),
		}
		var names []string
		if e.cfg.supports("errorHooks") {
			names = onError(binding)
		}
		err := e.withRetries("delete", names, base, func(attempt int) error {
			err := e.prov.delete(e.base, &DeleteRequest{
				URN: old.URN, Type: old.Type, Name: old.Name, ID: old.ID,
				Inputs: cloneStruct(old.Inputs), Outputs: cloneStruct(old.Outputs), Attempt: attempt,
			})
			ev := Event{Kind: kindProviderDelete, URN: old.URN, Detail: fmt.Sprintf("attempt %d", attempt)}
			if err != nil {
				ev.Err = err.Error()
			}
			e.rec.add(ev)
			return err
		})
		if err != nil {
			_, err = e.stepFailed(i, old.URN, err)
			return err
		}
	}
	e.mu.Lock()
	e.deleted[old] = true
	e.mu.Unlock()
	if err := e.runHooks(afterDelete, binding, req); err != nil {
		e.afterFailed(i, old.URN, err)
	}
	return nil
}

// deletedWithTarget reports whether the resource old is deleted with is
// itself being deleted, in which case the provider is not called.
func (e *Engine) deletedWithTarget(old *ResourceState) bool {
	if old.DeletedWith == "" {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deleting[old.DeletedWith]
}

// runDeletes deletes, once the program is done, the prior resources it did
// not register and the resources it replaced; in a destroy, every resource
// in the state. Dependents go first: a resource is deleted before its
// parent, the resources it depends on, the one it is deleted with and its
// provider; otherwise the order is the reverse of the state's.
func (e *Engine) runDeletes() {
	e.mu.Lock()
	if e.cancelled {
		e.mu.Unlock()
		return
	}
	var list []*ResourceState
	if e.cfg.destroy {
		for _, urn := range e.order {
			if r := e.resources[urn]; r != nil && r.state != nil {
				list = append(list, r.state)
			}
		}
	}
	if e.cfg.prior != nil {
		for _, old := range e.cfg.prior.Resources {
			if e.deleted[old] {
				continue
			}
			if e.isReplacedLocked(old) || (old.PendingDelete && e.cfg.destroy) ||
				(!old.PendingDelete && e.claimed[old.URN] == "") {
				list = append(list, old)
			}
		}
	}
	for _, old := range e.replaced {
		if !slices.Contains(list, old) && !e.deleted[old] {
			list = append(list, old)
		}
	}
	e.deleting = map[string]bool{}
	for _, old := range list {
		if !e.isReplacedLocked(old) && !old.PendingDelete {
			e.deleting[old.URN] = true
		}
	}
	e.mu.Unlock()

	for _, old := range deleteOrder(list) {
		if e.isCancelled() {
			return
		}
		op := opDelete
		e.mu.Lock()
		if e.isReplacedLocked(old) || old.PendingDelete {
			op = opDeleteReplaced
		}
		e.mu.Unlock()
		_ = e.deleteStep(old, op)
	}
}

// deleteOrder orders deletes: in reverse state order, except that no
// resource goes before one that depends on it.
func deleteOrder(list []*ResourceState) []*ResourceState {
	rest := slices.Clone(list)
	slices.Reverse(rest)
	out := make([]*ResourceState, 0, len(rest))
	for len(rest) > 0 {
		pick := 0 // on a cycle, the first one
		for i, r := range rest {
			if !dependedOn(r, rest) {
				pick = i
				break
			}
		}
		out = append(out, rest[pick])
		rest = slices.Delete(rest, pick, pick+1)
	}
	return out
}

// dependedOn reports whether any other resource of list depends on r.
func dependedOn(r *ResourceState, list []*ResourceState) bool {
	for _, o := range list {
		if o != r && slices.Contains(dependenciesOfState(o), r.URN) {
			return true
		}
	}
	return false
}

// dependenciesOfState lists the URNs a resource depends on: its parent,
// dependsOn, property dependencies, deletedWith and provider.
func dependenciesOfState(r *ResourceState) []string {
	deps := append([]string{r.Parent, r.DeletedWith}, r.DependsOn...)
	for _, urns := range r.PropertyDependencies {
		deps = append(deps, urns...)
	}
	if r.Provider != "" {
		deps = append(deps, providerURN(r.Provider))
	}
	return deps
}

// providerURN returns the URN part of a provider reference.
func providerURN(ref string) string {
	if i := strings.LastIndex(ref, "::"); i >= 0 {
		return ref[:i]
	}
	return ref
}

// startPlainDestroy starts a destroy that does not run the program. As in
// the engine, it refuses to start if a resource has delete hooks, since
// only the program can serve them.
func (e *Engine) startPlainDestroy() {
	var refused bool
	if e.cfg.prior != nil {
		for _, r := range e.cfg.prior.Resources {
			names := append(cloneStrings(r.Hooks.GetBeforeDelete()), r.Hooks.GetAfterDelete()...)
			if len(names) == 0 {
				continue
			}
			refused = true
			e.errorDiag(r.URN, "Resource has delete hooks registered, but the program is not running. Hooks: "+
				strings.Join(names, ", "))
		}
	}
	e.mu.Lock()
	e.signalled = true
	if refused {
		//lint:ignore ST1005 the engine's exact wording.
		e.errs = append(e.errs, errors.New("You must run with the `--run-program` flag to use delete hooks during destroy."))
		e.cancelled = true
		e.refused = true
	}
	e.mu.Unlock()
	e.startEnd()
}

// destroyStep decides the step of a registration in a destroy run with the
// program: custom resources are not created or updated (one in the state
// keeps it, a new one is skipped), the others are registered as in an
// update. Every resource in the state is deleted at the end. The caller
// holds e.gen.
func (e *Engine) destroyStep(ns *ResourceState) (stepFunc, error) {
	if !ns.Custom || isProviderType(ns.Type) {
		return e.decideStep(ns)
	}
	old := e.claimOld(ns)
	if old == nil {
		return func() (*ResourceState, error) {
			e.rec.add(Event{Kind: KindStep, URN: ns.URN, Detail: "skipped create: destroying"})
			ns.Outputs = cloneStruct(ns.Inputs)
			return ns, nil
		}, nil
	}
	return func() (*ResourceState, error) {
		e.startStep(opSame, ns.URN)
		ns.Inputs = cloneStruct(old.Inputs)
		ns.ID, ns.Outputs = old.ID, cloneStruct(old.Outputs)
		e.commit(ns)
		return ns, nil
	}, nil
}
