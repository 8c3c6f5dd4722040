package enginetest

import (
	"fmt"
	"slices"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// deleteStep deletes a resource of the prior state, with the hooks its old
// binding names, resolved in this deployment's registry.
func (e *Engine) deleteStep(old *ResourceState, op Op) error {
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
			err := e.prov.Delete(e.base, &DeleteRequest{
				URN: old.URN, Type: old.Type, Name: old.Name, ID: old.ID,
				Inputs: cloneStruct(old.Inputs), Outputs: cloneStruct(old.Outputs), Attempt: attempt,
			})
			ev := Event{Kind: KindProviderDelete, URN: old.URN, Detail: fmt.Sprintf("attempt %d", attempt)}
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
// not register and the resources it replaced, dependents first.
func (e *Engine) runDeletes() {
	e.mu.Lock()
	if e.cancelled {
		e.mu.Unlock()
		return
	}
	var list []*ResourceState
	if e.cfg.prior != nil {
		for _, old := range e.cfg.prior.Resources {
			if e.deleted[old] {
				continue
			}
			if e.isReplacedLocked(old) || (!old.PendingDelete && e.claimed[old.URN] == "") {
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
		if !e.isReplacedLocked(old) {
			e.deleting[old.URN] = true
		}
	}
	e.mu.Unlock()

	for i := len(list) - 1; i >= 0; i-- {
		if e.isCancelled() {
			return
		}
		op := OpDelete
		e.mu.Lock()
		if e.isReplacedLocked(list[i]) {
			op = OpDeleteReplaced
		}
		e.mu.Unlock()
		_ = e.deleteStep(list[i], op)
	}
}
