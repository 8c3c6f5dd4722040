package enginetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// callbackStateMigration is the Event.Callback of a state migration call.
const callbackStateMigration = "state-migration"

// checkpointResource is a resource in the checkpoint format the engine
// hands state migrations (apitype.ResourceV3), every field of it, so that
// a result is decoded as strictly as the engine decodes it.
type checkpointResource struct {
	URN                     string              `json:"urn"`
	Custom                  bool                `json:"custom"`
	Delete                  bool                `json:"delete,omitempty"`
	ID                      string              `json:"id,omitempty"`
	Type                    string              `json:"type"`
	Inputs                  map[string]any      `json:"inputs,omitempty"`
	Outputs                 map[string]any      `json:"outputs,omitempty"`
	Parent                  string              `json:"parent,omitempty"`
	Protect                 bool                `json:"protect,omitempty"`
	Taint                   bool                `json:"taint,omitempty"`
	External                bool                `json:"external,omitempty"`
	Dependencies            []string            `json:"dependencies,omitempty"`
	InitErrors              []string            `json:"initErrors,omitempty"`
	Provider                string              `json:"provider,omitempty"`
	PropertyDependencies    map[string][]string `json:"propertyDependencies,omitempty"`
	PendingReplacement      bool                `json:"pendingReplacement,omitempty"`
	AdditionalSecretOutputs []string            `json:"additionalSecretOutputs,omitempty"`
	Aliases                 []string            `json:"aliases,omitempty"`
	CustomTimeouts          *struct {
		Create float64 `json:"create,omitempty"`
		Update float64 `json:"update,omitempty"`
		Delete float64 `json:"delete,omitempty"`
		Read   float64 `json:"read,omitempty"`
	} `json:"customTimeouts,omitempty"`
	ImportID            string              `json:"importID,omitempty"`
	RetainOnDelete      bool                `json:"retainOnDelete,omitempty"`
	DeletedWith         string              `json:"deletedWith,omitempty"`
	ReplaceWith         []string            `json:"replaceWith,omitempty"`
	Created             *string             `json:"created,omitempty"`
	Modified            *string             `json:"modified,omitempty"`
	SourcePosition      string              `json:"sourcePosition,omitempty"`
	StackTrace          []stackFrame        `json:"stackTrace,omitempty"`
	IgnoreChanges       []string            `json:"ignoreChanges,omitempty"`
	HideDiff            []string            `json:"hideDiff,omitempty"`
	ReplaceOnChanges    []string            `json:"replaceOnChanges,omitempty"`
	ReplacementTrigger  any                 `json:"replacementTrigger,omitempty"`
	RefreshBeforeUpdate bool                `json:"refreshBeforeUpdate,omitempty"`
	ViewOf              string              `json:"viewOf,omitempty"`
	ResourceHooks       map[string][]string `json:"resourceHooks,omitempty"`
	ExtensionRef        string              `json:"extensionRef,omitempty"`
	SnippetID           string              `json:"snippetID,omitempty"`
}

type stackFrame struct {
	SourcePosition string `json:"sourcePosition,omitempty"`
}

// migrated records, for each URN a state migration of this deployment
// replaced, the registration whose migration did it and the successor.
type migratedURN struct {
	root, successor string
}

// runMigrations runs the state migrations of a registration as the engine
// (3.274.1) does: in an update or its preview (not in a destroy), only if
// the resource has prior state (by URN, then by alias), over the resource
// and every prior resource transitively parented to it, one migration
// after the other, each given the state the previous one returned. The
// result is validated by the engine's rules and, if it changes the state,
// replaces the subtree in the prior state before the registration's step is
// decided, with the message "State migration planned/applied (state
// entries: N before, M after)." under the resource. An error fails the
// registration as an error in generating steps does.
func (e *Engine) runMigrations(urn string, aliases []string, migrations []*pulumirpc.Callback) error {
	if len(migrations) == 0 || e.cfg.destroy || e.cfg.noCallbacks {
		return nil
	}
	// The caller holds the step generator (e.gen), so no other
	// registration's migrations run, nor does any step start.
	e.mu.Lock()
	root := e.prior[urn]
	if root == nil {
		for _, a := range aliases {
			if root = e.prior[a]; root != nil {
				break
			}
		}
	}
	e.mu.Unlock()
	if root == nil {
		return nil
	}
	// As in the engine (state_migration.go), before it runs a migration
	// waits for the steps already started to end, and it keeps new ones
	// from starting until it is done.
	e.barrierWaits.Add(1)
	e.execBarrier.Lock()
	e.barrierWaits.Add(-1)
	defer e.execBarrier.Unlock()

	e.mu.Lock()
	subtree := []*ResourceState{root}
	var pendingDeletes []string
	in := map[string]bool{root.URN: true}
	for _, r := range e.cfg.prior.Resources {
		if r == root || !in[r.Parent] {
			continue
		}
		if r.PendingDelete {
			pendingDeletes = append(pendingDeletes, r.URN)
			continue
		}
		in[r.URN] = true
		subtree = append(subtree, r)
	}
	if claimant := e.claimed[urn]; claimant != "" && claimant != urn {
		e.mu.Unlock()
		return fmt.Errorf("state migration for %s: the registration URN was already claimed as an alias by %s "+
			"earlier in this deployment", urn, claimant)
	}
	for _, s := range subtree {
		if claimant := e.claimed[s.URN]; claimant != "" && claimant != s.URN {
			e.mu.Unlock()
			return fmt.Errorf("state migration for %s: the prior state of %s was already claimed by %s earlier "+
				"in this deployment (via an alias); it cannot also be migrated as part of %s in the same "+
				"operation", urn, s.URN, claimant, urn)
		}
		if s == root && s.URN == urn {
			continue
		}
		if _, ok := e.resources[s.URN]; ok {
			e.mu.Unlock()
			return fmt.Errorf("state migration for %s: the prior state of %s was already registered earlier in "+
				"this deployment; it cannot also be migrated as part of %s", urn, s.URN, urn)
		}
	}
	original := make([]checkpointResource, len(subtree))
	for i, s := range subtree {
		original[i] = toCheckpoint(s)
	}
	e.mu.Unlock()

	final, successors, err := e.callMigrations(urn, migrations, original)
	if err != nil || final == nil {
		return err
	}
	if err := validateIdentity(urn, original, final, successors); err != nil {
		return err
	}
	if len(pendingDeletes) > 0 {
		return fmt.Errorf("state migration for %s: the prior state contains resources that are pending deletion "+
			"from a previous update: %s; resolve the pending deletion (for example by completing an update in "+
			"which this migration makes no changes) before migrating %s",
			urn, strings.Join(pendingDeletes, ", "), urn)
	}
	result := make([]*ResourceState, len(final))
	// ResourceState has no view or extension, so the rules read the
	// checkpoint's.
	views, extensions := map[string]bool{}, map[string]string{}
	for i, c := range final {
		if c.ViewOf != "" {
			views[c.URN] = true
		}
		if c.ExtensionRef != "" {
			extensions[c.URN] = c.ExtensionRef
		}
		r, err := fromCheckpoint(c, predecessor(c.URN, subtree, successors))
		if err != nil {
			return fmt.Errorf("state migration for %s: deserializing returned state of %s: %w", urn, c.URN, err)
		}
		result[i] = r
	}
	for _, r := range result {
		if err := rewriteResultReferences(urn, r, successors); err != nil {
			return fmt.Errorf("state migration for %s: %w", urn, err)
		}
	}
	if err := e.validateResult(urn, root, subtree, result, views, extensions); err != nil {
		return err
	}
	// What the rest of the deployment follows are the successors of the
	// prior subtree's resources, not of those a migration of the chain
	// made and a later one replaced.
	originalSuccessors := map[string]string{}
	for _, s := range subtree {
		if to, ok := successors[s.URN]; ok {
			originalSuccessors[s.URN] = to
		}
	}
	if err := e.commitMigration(urn, subtree, result, originalSuccessors); err != nil {
		return err
	}
	verb := "applied"
	if e.cfg.dryRun {
		verb = "planned"
	}
	e.rec.diag(Diagnostic{Severity: severityInfo, URN: urn,
		Message: fmt.Sprintf("State migration %s (state entries: %d before, %d after).", verb, len(subtree), len(result))})
	return nil
}

// callMigrations calls each migration in turn and checks each result's
// accounting. It returns a nil state if nothing changed.
func (e *Engine) callMigrations(urn string, migrations []*pulumirpc.Callback, original []checkpointResource,
) ([]checkpointResource, map[string]string, error) {
	currentJSON, err := json.Marshal(original)
	if err != nil { // the engine's too; a checkpoint holds no number JSON cannot (AsInterface spells NaN)
		return nil, nil, fmt.Errorf("state migration for %s: marshaling prior state: %w", urn, err)
	}
	originalJSON := currentJSON
	current := original
	all := map[string]string{}
	changed := false
	n := len(migrations)
	for i, cb := range migrations {
		newJSON, successors, err := e.callMigration(urn, cb, currentJSON)
		if err != nil {
			return nil, nil, fmt.Errorf("state migration %d of %d for %s: %w", i+1, n, urn, err)
		}
		if newJSON == nil {
			if len(successors) > 0 {
				return nil, nil, fmt.Errorf("state migration %d of %d for %s: returned successors without "+
					"returning a new state", i+1, n, urn)
			}
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(newJSON))
		dec.DisallowUnknownFields()
		var next []checkpointResource
		if err := dec.Decode(&next); err != nil {
			return nil, nil, fmt.Errorf("state migration %d of %d for %s: unmarshaling returned state: %w", i+1, n, urn, err)
		}
		if err := validateAccounting(urn, current, next, successors); err != nil {
			return nil, nil, err
		}
		for _, old := range slices.Sorted(maps.Keys(successors)) {
			// The engine checks this, but no result reaches it: a URN
			// that has a successor can only be given again if an
			// earlier migration returned it anew, and the check of that
			// migration's successors below refuses that.
			if prev, ok := all[old]; ok && prev != successors[old] {
				return nil, nil, fmt.Errorf("state migration %d of %d for %s: resource %s has conflicting successors %s and %s",
					i+1, n, urn, old, prev, successors[old])
			}
			all[old] = successors[old]
		}
		if i+1 < n {
			// The next migration gets the subtree's root first, and
			// references that follow the successors so far, which the
			// engine checks and applies to this result as to a final one.
			nextRoot := current[0].URN
			if len(all) > 0 {
				resolved, err := finalSuccessors(next, all)
				if err != nil {
					return nil, nil, fmt.Errorf("state migration %d of %d for %s: %w", i+1, n, urn, err)
				}
				if s, ok := resolved[nextRoot]; ok {
					nextRoot = s
				}
				for j := range next {
					if _, err := fromCheckpoint(next[j], nil); err != nil {
						return nil, nil, fmt.Errorf("state migration %d of %d for %s: deserializing returned state of %s: %w",
							i+1, n, urn, next[j].URN, err)
					}
				}
				for j := range next {
					if err := rewriteCheckpointReferences(urn, &next[j], resolved); err != nil {
						return nil, nil, fmt.Errorf("state migration %d of %d for %s: %w", i+1, n, urn, err)
					}
				}
			}
			// The engine checks this too, but the successors checked
			// above always lead the root to a resource of the result.
			idx := slices.IndexFunc(next, func(c checkpointResource) bool { return c.URN == nextRoot })
			if idx < 0 {
				return nil, nil, fmt.Errorf("state migration %d of %d for %s: missing subtree root %s", i+1, n, urn, nextRoot)
			}
			r := next[idx]
			copy(next[1:idx+1], next[:idx])
			next[0] = r
			if newJSON, err = json.Marshal(next); err != nil { // the engine's too; what was read as JSON is written back
				return nil, nil, fmt.Errorf("state migration for %s: marshaling intermediate state: %w", urn, err)
			}
		}
		current, currentJSON, changed = next, newJSON, true
	}
	if !changed {
		return nil, nil, nil
	}
	var normalized []checkpointResource
	if err := json.Unmarshal(originalJSON, &normalized); err != nil { // the engine's too; it reads what it wrote
		return nil, nil, fmt.Errorf("state migration for %s: normalizing prior state: %w", urn, err)
	}
	if reflect.DeepEqual(normalized, current) {
		return nil, nil, nil
	}
	if err := validateProviderStates(urn, normalized, current); err != nil {
		return nil, nil, err
	}
	successors, err := finalSuccessors(current, all)
	if err != nil {
		return nil, nil, fmt.Errorf("state migration for %s: %w", urn, err)
	}
	return current, successors, nil
}

// callMigration calls one migration over gRPC, as the engine does, and
// records it.
func (e *Engine) callMigration(urn string, cb *pulumirpc.Callback, oldState []byte) ([]byte, map[string]string, error) {
	req := &pulumirpc.StateMigrationRequest{Urn: urn, OldState: oldState}
	ev := Event{Kind: KindCallback, Callback: callbackStateMigration, URN: urn, Target: cb.GetTarget(),
		Token: cb.GetToken(), Request: req}
	raw, err := e.invokeCallback(e.generating, cb, req)
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return nil, nil, err
	}
	var resp pulumirpc.StateMigrationResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		err = fmt.Errorf("unmarshaling state migration response: %w", err)
		ev.Err = err.Error()
		e.rec.add(ev)
		return nil, nil, err
	}
	ev.Response = &resp
	ev.Detail = "ok (no change)"
	if resp.NewState != nil {
		ev.Detail = "ok (new state)"
	}
	e.rec.add(ev)
	return resp.NewState, resp.GetSuccessors(), nil
}

// finalSuccessors is the engine's check of the successors of a chain of
// migrations against the state the chain returned: it resolves each to the
// end of its chain, which must be in the state, as the resource it leaves
// must not.
func finalSuccessors(final []checkpointResource, all map[string]string) (map[string]string, error) {
	resolved := make(map[string]string, len(all))
	for _, old := range slices.Sorted(maps.Keys(all)) {
		to, err := resolveSuccessor(old, all)
		if err != nil {
			return nil, err
		}
		resolved[old] = to
	}
	finals := map[string]bool{}
	for _, c := range final {
		finals[c.URN] = true
	}
	for _, old := range slices.Sorted(maps.Keys(resolved)) {
		to := resolved[old]
		if finals[old] {
			return nil, fmt.Errorf("resource %s is present in the final state and also has successor %s", old, to)
		}
		// The engine checks this, but no result reaches it: each
		// migration's successors are in what it returned, and one that a
		// later migration drops has a successor of its own.
		if !finals[to] {
			return nil, fmt.Errorf("successor %s for resource %s is not present in the final state", to, old)
		}
	}
	return resolved, nil
}

func resolveSuccessor(urn string, successors map[string]string) (string, error) {
	seen := map[string]bool{}
	for {
		if seen[urn] {
			return "", fmt.Errorf("successor mappings contain a cycle at %s", urn)
		}
		seen[urn] = true
		next, ok := successors[urn]
		if !ok {
			return urn, nil
		}
		urn = next
	}
}

// validateAccounting is the engine's check of one migration's result:
// every resource it was given is returned or names a returned successor.
func validateAccounting(urn string, olds, news []checkpointResource, successors map[string]string) error {
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("state migration for %s: "+format, append([]any{urn}, args...)...)
	}
	oldByURN := map[string]checkpointResource{}
	for _, r := range olds {
		if !validURN(r.URN) {
			return errorf("received a resource with invalid URN %q", r.URN)
		}
		if _, dup := oldByURN[r.URN]; dup {
			return errorf("received duplicate resource %s", r.URN)
		}
		oldByURN[r.URN] = r
	}
	newByURN := map[string]checkpointResource{}
	for _, r := range news {
		if !validURN(r.URN) {
			return errorf("returned a resource with invalid URN %q", r.URN)
		}
		if len(r.Aliases) != 0 {
			return errorf("returned resource %s with aliases; state migration callbacks must express renames with "+
				"successor mappings instead", r.URN)
		}
		if _, dup := newByURN[r.URN]; dup {
			return errorf("returned duplicate resource %s", r.URN)
		}
		if t := urnType(r.URN); r.Type != t {
			return errorf("returned resource %s with type %s, which does not match its URN type %s", r.URN, r.Type, t)
		}
		newByURN[r.URN] = r
	}
	for _, source := range slices.Sorted(maps.Keys(successors)) {
		target := successors[source]
		if source == "" || target == "" {
			return errorf("returned an empty successor mapping %q -> %q", source, target)
		}
		if _, ok := oldByURN[source]; !ok {
			return errorf("returned successor for resource %s, which is not part of the prior state", source)
		}
		if _, ok := newByURN[source]; ok {
			return errorf("resource %s is both returned and assigned successor %s", source, target)
		}
		if _, ok := newByURN[target]; !ok {
			return errorf("successor %s for resource %s is not present in the returned state", target, source)
		}
	}
	for _, old := range olds {
		n, kept := newByURN[old.URN]
		if !kept {
			if _, ok := successors[old.URN]; !ok {
				return errorf("did not account for resource %s: it must either be returned in the new state or "+
					"have a successor", old.URN)
			}
			continue
		}
		if old.Custom != n.Custom {
			return errorf("resource %s changed between custom and component state without changing URN", old.URN)
		}
		if old.Custom && old.ID != n.ID {
			return errorf("resource %s changed ID from %q to %q without changing URN", old.URN, old.ID, n.ID)
		}
	}
	return nil
}

// validateProviderStates is the engine's rule that provider states pass
// through a migration unchanged.
func validateProviderStates(urn string, original, final []checkpointResource) error {
	before, after := map[string]checkpointResource{}, map[string]checkpointResource{}
	for _, r := range original {
		if isProviderType(r.Type) {
			before[r.URN] = r
		}
	}
	for _, r := range final {
		if isProviderType(r.Type) {
			after[r.URN] = r
		}
	}
	for _, u := range slices.Sorted(maps.Keys(before)) {
		r, ok := after[u]
		if !ok {
			return fmt.Errorf("state migration for %s removes or renames provider state %s; "+
				"provider states must be returned unchanged", urn, u)
		}
		if !reflect.DeepEqual(before[u], r) {
			return fmt.Errorf("state migration for %s changes provider state %s; "+
				"provider states must be returned unchanged", urn, u)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[u]; !ok {
			return fmt.Errorf("state migration for %s introduces provider state %s; "+
				"provider states cannot be created by a state migration", urn, u)
		}
	}
	return nil
}

// validateIdentity is the engine's rule that a migration preserves the
// physical identity, ownership and safety flags of what it was given.
func validateIdentity(urn string, original, final []checkpointResource, successors map[string]string) error {
	finals := map[string]checkpointResource{}
	for _, r := range final {
		finals[r.URN] = r
	}
	type inherited struct{ custom, protect, retain, pending, taint bool }
	heirs := map[string]inherited{}
	for _, old := range original {
		to := old.URN
		target, ok := finals[to]
		if !ok {
			if to, ok = successors[old.URN]; !ok {
				continue
			}
			if target, ok = finals[to]; !ok {
				continue
			}
		}
		h := heirs[to]
		h.protect = h.protect || old.Protect
		h.retain = h.retain || old.RetainOnDelete
		if !old.Custom {
			heirs[to] = h
			continue
		}
		h.custom = true
		switch {
		case !target.Custom:
			return fmt.Errorf("state migration for %s maps managed custom resource %s to component successor %s; "+
				"migrations must preserve managed resource identity", urn, old.URN, to)
		case old.ID != target.ID:
			return fmt.Errorf("state migration for %s changes the physical ID of managed custom resource %s "+
				"from %q to %q on successor %s; migrations must preserve managed resource identity",
				urn, old.URN, old.ID, target.ID, to)
		case old.Provider != target.Provider:
			return fmt.Errorf("state migration for %s changes the provider reference of managed custom resource %s "+
				"from %q to %q on successor %s; migrations must preserve managed resource provider identity",
				urn, old.URN, old.Provider, target.Provider, to)
		case old.ExtensionRef != target.ExtensionRef:
			return fmt.Errorf("state migration for %s changes the extension reference of managed custom resource %s "+
				"from %q to %q on successor %s; migrations must preserve managed resource extension identity",
				urn, old.URN, old.ExtensionRef, target.ExtensionRef, to)
		case old.External != target.External:
			return fmt.Errorf("state migration for %s changes ownership of custom resource %s "+
				"from external=%t to external=%t on successor %s; migrations must preserve managed resource ownership",
				urn, old.URN, old.External, target.External, to)
		case old.PendingReplacement != target.PendingReplacement:
			return fmt.Errorf("state migration for %s changes PendingReplacement for custom resource %s "+
				"from %t to %t on successor %s; migrations must preserve provider lifecycle state",
				urn, old.URN, old.PendingReplacement, target.PendingReplacement, to)
		case old.Taint != target.Taint:
			return fmt.Errorf("state migration for %s changes Taint for custom resource %s "+
				"from %t to %t on successor %s; migrations must preserve provider lifecycle state",
				urn, old.URN, old.Taint, target.Taint, to)
		}
		h.pending = h.pending || old.PendingReplacement
		h.taint = h.taint || old.Taint
		heirs[to] = h
	}
	for _, r := range final {
		h, has := heirs[r.URN]
		if r.Custom && !has && r.ID != "" {
			for _, old := range original {
				if !old.Custom || old.ID != r.ID || old.Provider != r.Provider || old.ExtensionRef != r.ExtensionRef {
					continue
				}
				switch {
				case old.External != r.External:
					return fmt.Errorf("state migration for %s changes ownership of custom resource %s "+
						"from external=%t to external=%t on inferred successor %s; migrations must preserve managed resource ownership",
						urn, old.URN, old.External, r.External, r.URN)
				case old.PendingReplacement != r.PendingReplacement:
					return fmt.Errorf("state migration for %s changes PendingReplacement for custom resource %s "+
						"from %t to %t on inferred successor %s; migrations must preserve provider lifecycle state",
						urn, old.URN, old.PendingReplacement, r.PendingReplacement, r.URN)
				case old.Taint != r.Taint:
					return fmt.Errorf("state migration for %s changes Taint for custom resource %s "+
						"from %t to %t on inferred successor %s; migrations must preserve provider lifecycle state",
						urn, old.URN, old.Taint, r.Taint, r.URN)
				}
				h.custom = true
				h.protect = h.protect || old.Protect
				h.retain = h.retain || old.RetainOnDelete
				h.pending, h.taint = old.PendingReplacement, old.Taint
			}
		}
		switch {
		case r.PendingReplacement && (!r.Custom || !h.pending):
			return fmt.Errorf("state migration for %s returns resource %s with PendingReplacement set "+
				"without a pending-replacement custom predecessor", urn, r.URN)
		case r.Taint && (!r.Custom || !h.taint):
			return fmt.Errorf("state migration for %s returns resource %s with Taint set "+
				"without a tainted custom predecessor", urn, r.URN)
		case r.Custom && !h.custom:
			return fmt.Errorf("state migration for %s introduces custom resource %s with ID %q without a "+
				"managed custom predecessor; migrations cannot import resources", urn, r.URN, r.ID)
		case r.Protect != h.protect:
			return fmt.Errorf("state migration for %s changes Protect for resource %s from inherited value %t to %t; "+
				"migrations must preserve resource protection", urn, r.URN, h.protect, r.Protect)
		case r.RetainOnDelete != h.retain:
			return fmt.Errorf("state migration for %s changes RetainOnDelete for resource %s from inherited value %t "+
				"to %t; migrations must preserve resource retention", urn, r.URN, h.retain, r.RetainOnDelete)
		}
	}
	return nil
}

// validateResult is the engine's check that the result is one subtree
// under the registering resource; views holds the URNs of the results that
// are views, extensions the extension each result names.
func (e *Engine) validateResult(urn string, priorRoot *ResourceState, prior, result []*ResourceState,
	views map[string]bool, extensions map[string]string) error {
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("state migration for %s: "+format, append([]any{urn}, args...)...)
	}
	priorURNs := map[string]bool{}
	for _, s := range prior {
		priorURNs[s.URN] = true
	}
	byURN := map[string]*ResourceState{}
	for _, s := range result {
		byURN[s.URN] = s
	}
	root, roots := urn, 0
	if byURN[urn] != nil {
		roots++
	}
	if priorRoot.URN != urn && byURN[priorRoot.URN] != nil {
		roots++
		root = priorRoot.URN
	}
	if roots == 0 {
		return errorf("the migration result must include the state for %s (the resource being registered) "+
			"under its new URN or its prior URN %s", urn, priorRoot.URN)
	}
	if roots != 1 {
		return errorf("the migration result includes both the new root %s and its prior root %s; "+
			"it must include exactly one logical root", urn, priorRoot.URN)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	resolvable := func(target string) bool {
		if byURN[target] != nil {
			return true
		}
		if priorURNs[target] {
			return false
		}
		return e.prior[target] != nil
	}
	stack, project := urnStackProject(urn)
	for _, s := range result {
		if !validURN(s.URN) { // the engine's too, but each migration's result was refused first
			return errorf("returned resource has invalid URN %q", s.URN)
		}
		if st, pr := urnStackProject(s.URN); st != stack || pr != project {
			return errorf("returned resource %s belongs to stack %q and project %q; migration results must remain "+
				"in registration stack %q and project %q", s.URN, st, pr, stack, project)
		}
		if s.URN != urn {
			if claimant := e.claimed[s.URN]; claimant != "" && claimant != s.URN {
				return errorf("returned resource %s was already claimed as an alias by %s earlier in this deployment",
					s.URN, claimant)
			}
			if _, ok := e.resources[s.URN]; ok {
				return errorf("returned resource %s was already registered earlier in this deployment", s.URN)
			}
		}
		if s.PendingDelete {
			return errorf("returned resource %s is marked for pending deletion; migrations may not return "+
				"pending-delete resources", s.URN)
		}
		if views[s.URN] {
			return errorf("returned resource %s is a view; state migrations do not support views", s.URN)
		}
		if s.Custom && s.ID == "" {
			return errorf("returned custom resource %s has no ID", s.URN)
		}
		if ref := extensions[s.URN]; ref != "" {
			// A deployment of the simulator has no extensions.
			return errorf("returned resource %s references unknown extension %s", s.URN, ref)
		}
		if s.Parent != "" && !validURN(s.Parent) {
			return errorf("returned resource %s has invalid parent URN %q", s.URN, s.Parent)
		}
		want := s.Type
		if s.Parent != "" && QualifiedType(s.Parent) != rootStackType {
			want = QualifiedType(s.Parent) + "$" + s.Type
		}
		if QualifiedType(s.URN) != want {
			return errorf("resource %s has parent %s but qualified type %s; expected %s",
				s.URN, s.Parent, QualifiedType(s.URN), want)
		}
		if s.URN == root {
			if s.Parent != priorRoot.Parent {
				return errorf("the parent of %s may not be changed by a migration (got %q, expected %q)",
					s.URN, s.Parent, priorRoot.Parent)
			}
		} else {
			seen := 0
			for parent := s.Parent; parent != root; {
				if seen++; seen > len(result) {
					return errorf("resource %s has a cyclic parent chain", s.URN)
				}
				next := byURN[parent]
				if next == nil {
					return errorf("resource %s is parented to %s which is not part of the migration result", s.URN, parent)
				}
				parent = next.Parent
			}
		}
		if s.Provider != "" {
			provURN, _, err := parseProviderReference(s.Provider)
			if err != nil {
				return errorf("resource %s has an invalid provider reference %q: %w", s.URN, s.Provider, err)
			}
			if !resolvable(provURN) {
				return errorf("resource %s refers to unknown provider %s", s.URN, s.Provider)
			}
		}
		// In the engine's order: dependencies, property dependencies,
		// deleted-with, replace-with.
		deps := cloneStrings(s.DependsOn)
		for _, k := range slices.Sorted(maps.Keys(s.PropertyDependencies)) {
			deps = append(deps, s.PropertyDependencies[k]...)
		}
		deps = append(deps, s.DeletedWith)
		deps = append(deps, s.ReplaceWith...)
		for _, d := range deps {
			if d != "" && !resolvable(d) {
				return errorf("resource %s refers to unknown resource %s", s.URN, d)
			}
		}
	}
	return nil
}

// commitMigration replaces the prior subtree with the result where the
// subtree's last resource was, points the references of the rest of the
// prior state at the successors, and remembers the replaced URNs. As the
// engine does, it first prepares every rewrite of the rest, and commits
// nothing if one is refused.
func (e *Engine) commitMigration(urn string, prior, result []*ResourceState, successors map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	inPrior := map[*ResourceState]bool{}
	for _, s := range prior {
		inPrior[s] = true
	}
	rewritten := map[*ResourceState]*ResourceState{}
	for _, r := range e.cfg.prior.Resources {
		if inPrior[r] {
			continue
		}
		fixed := &ResourceState{Parent: r.Parent, DependsOn: r.DependsOn, PropertyDependencies: maps.Clone(r.PropertyDependencies),
			DeletedWith: r.DeletedWith, ReplaceWith: r.ReplaceWith, Provider: r.Provider}
		changed, err := rewriteReferences(fixed, successors)
		if err != nil {
			return fmt.Errorf("state migration for %s: rewriting successor references: %w", urn, err)
		}
		if !changed {
			continue
		}
		if isProviderType(r.Type) {
			return fmt.Errorf("state migration for %s rewrites references in provider state %s retained from prior "+
				"state; provider states must remain unchanged", urn, r.URN)
		}
		rewritten[r] = fixed
	}
	last := prior[len(prior)-1]
	var next []*ResourceState
	for _, r := range e.cfg.prior.Resources {
		if inPrior[r] {
			if r == last {
				next = append(next, result...)
			}
			continue
		}
		if f := rewritten[r]; f != nil {
			r.Parent, r.DependsOn, r.PropertyDependencies = f.Parent, f.DependsOn, f.PropertyDependencies
			r.DeletedWith, r.ReplaceWith, r.Provider = f.DeletedWith, f.ReplaceWith, f.Provider
		}
		next = append(next, r)
	}
	e.cfg.prior.Resources = next
	for _, s := range prior {
		delete(e.prior, s.URN)
	}
	for _, r := range result {
		e.prior[r.URN] = r
	}
	for old, to := range successors {
		e.migrated[old] = migratedURN{root: urn, successor: to}
	}
	return nil
}

// replacedByMigration is the engine's refusal of a registration whose URN
// a state migration of this deployment replaced.
func (e *Engine) replacedByMigration(urn string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.migrated[urn]
	if !ok {
		return nil
	}
	successor := m.successor
	for seen := map[string]bool{}; !seen[successor]; {
		seen[successor] = true
		next, ok := e.migrated[successor]
		if !ok {
			break
		}
		successor = next.successor
	}
	return fmt.Errorf("resource %s cannot be registered or read because state migration for %s replaced it with %s "+
		"earlier in this deployment", urn, m.root, successor)
}

// predecessor returns the prior resource a returned resource comes from:
// the one with its URN, or one whose successor it is.
func predecessor(urn string, prior []*ResourceState, successors map[string]string) *ResourceState {
	for _, s := range prior {
		if s.URN == urn {
			return s
		}
	}
	for _, s := range prior {
		if successors[s.URN] == urn {
			return s
		}
	}
	return nil
}

// rewriteReferences points the structural references of r at successors,
// as the engine does, and reports whether any changed. The provider
// reference is rewritten last: if it cannot be parsed, the rest is
// rewritten and the error says so in the engine's words.
func rewriteReferences(r *ResourceState, successors map[string]string) (bool, error) {
	if len(successors) == 0 {
		return false, nil
	}
	fix := func(u string) string {
		if s, ok := successors[u]; ok {
			return s
		}
		return u
	}
	fixAll := func(us []string) []string {
		if len(us) == 0 {
			return us
		}
		var out []string
		for _, u := range us {
			if f := fix(u); !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
		return out
	}
	type refs struct {
		parent, deletedWith, provider string
		dependsOn, replaceWith        []string
		propertyDependencies          map[string][]string
	}
	before := refs{r.Parent, r.DeletedWith, r.Provider, r.DependsOn, r.ReplaceWith, maps.Clone(r.PropertyDependencies)}
	r.Parent = fix(r.Parent)
	r.DependsOn = fixAll(r.DependsOn)
	for k, v := range r.PropertyDependencies {
		r.PropertyDependencies[k] = fixAll(v)
	}
	r.DeletedWith = fix(r.DeletedWith)
	r.ReplaceWith = fixAll(r.ReplaceWith)
	var err error
	if r.Provider != "" {
		u, id, perr := parseProviderReference(r.Provider)
		if perr != nil {
			err = fmt.Errorf("parsing provider reference %q: %w", r.Provider, perr)
		} else {
			r.Provider = providerReference(fix(u), id)
		}
	}
	after := refs{r.Parent, r.DeletedWith, r.Provider, r.DependsOn, r.ReplaceWith, r.PropertyDependencies}
	return !reflect.DeepEqual(before, after), err
}

// rewriteResultReferences rewrites the references of a resource a
// migration returned, which the engine refuses to do to a provider's.
func rewriteResultReferences(urn string, r *ResourceState, successors map[string]string) error {
	changed, err := rewriteReferences(r, successors)
	if err != nil {
		return fmt.Errorf("rewriting successor references: %w", err)
	}
	if changed && isProviderType(r.Type) {
		return fmt.Errorf("state migration for %s rewrites references in provider state %s returned by the "+
			"migration; provider states must remain unchanged", urn, r.URN)
	}
	return nil
}

func rewriteCheckpointReferences(urn string, c *checkpointResource, successors map[string]string) error {
	r := &ResourceState{URN: c.URN, Type: c.Type, Parent: c.Parent, DependsOn: c.Dependencies,
		PropertyDependencies: c.PropertyDependencies, DeletedWith: c.DeletedWith, ReplaceWith: c.ReplaceWith,
		Provider: c.Provider}
	if err := rewriteResultReferences(urn, r, successors); err != nil {
		return err
	}
	c.Parent, c.Dependencies, c.PropertyDependencies = r.Parent, r.DependsOn, r.PropertyDependencies
	c.DeletedWith, c.ReplaceWith, c.Provider = r.DeletedWith, r.ReplaceWith, r.Provider
	return nil
}

// parseProviderReference splits a provider reference into the provider's
// URN and ID, refusing it in the engine's words if it is not one.
func parseProviderReference(ref string) (urn, id string, err error) {
	i := strings.LastIndex(ref, "::")
	if i < 0 {
		return "", "", fmt.Errorf("expected '::' in provider reference '%s'", ref)
	}
	urn, id = ref[:i], ref[i+2:]
	if !validURN(urn) {
		return "", "", fmt.Errorf("%s is not a valid URN", urn)
	}
	// The type's module is what comes before its second ':'. A type of
	// two parts has none in the engine, whose lookup of it fails an
	// assertion; here it is a module without a type name.
	module, name := "", urnType(urn)
	if parts := strings.SplitN(name, ":", 3); len(parts) == 3 {
		module, name = parts[0]+":"+parts[1], parts[2]
	} else if len(parts) == 2 {
		module, name = name, ""
	}
	if module != "pulumi:providers" {
		return "", "", fmt.Errorf("invalid module in type: expected 'pulumi:providers', got '%s'", module)
	}
	if name == "" {
		return "", "", errors.New("provider URNs must specify a type name")
	}
	return urn, id, nil
}

// validURN reports whether u has the shape of a URN.
func validURN(u string) bool {
	if !strings.HasPrefix(u, "urn:pulumi:") {
		return false
	}
	parts := strings.SplitN(strings.TrimPrefix(u, "urn:pulumi:"), "::", 4)
	return len(parts) == 4 && parts[2] != "" && parts[3] != ""
}

// urnType returns the type of a URN: the last part of its qualified type.
func urnType(u string) string {
	qt := QualifiedType(u)
	if i := strings.LastIndex(qt, "$"); i >= 0 {
		return qt[i+1:]
	}
	return qt
}

func urnStackProject(u string) (stack, project string) {
	parts := strings.SplitN(strings.TrimPrefix(u, "urn:pulumi:"), "::", 4)
	if len(parts) < 2 {
		return "", ""
	}
	return parts[0], parts[1]
}

// hookPoints are the checkpoint's names of the hook points.
var hookPoints = []struct {
	name string
	get  func(*pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string
}{
	{"BeforeCreate", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.BeforeCreate }},
	{"AfterCreate", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.AfterCreate }},
	{"BeforeUpdate", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.BeforeUpdate }},
	{"AfterUpdate", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.AfterUpdate }},
	{"BeforeDelete", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.BeforeDelete }},
	{"AfterDelete", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.AfterDelete }},
	{"OnError", func(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *[]string { return &b.OnError }},
}

// toCheckpoint serializes a resource as the engine does for a migration:
// secrets in plaintext inside their envelopes.
func toCheckpoint(r *ResourceState) checkpointResource {
	c := checkpointResource{
		URN: r.URN, Custom: r.Custom, Delete: r.PendingDelete, ID: r.ID, Type: r.Type,
		Inputs: checkpointMap(r.Inputs), Outputs: checkpointMap(r.Outputs), Parent: r.Parent,
		Protect: r.Protect, External: r.External, Dependencies: cloneStrings(r.DependsOn), Provider: r.Provider,
		AdditionalSecretOutputs: cloneStrings(r.AdditionalSecretOutputs), ImportID: r.ImportID,
		RetainOnDelete: r.RetainOnDelete, DeletedWith: r.DeletedWith, ReplaceWith: cloneStrings(r.ReplaceWith),
		IgnoreChanges: cloneStrings(r.IgnoreChanges), HideDiff: cloneStrings(r.HideDiff),
		ReplaceOnChanges: cloneStrings(r.ReplaceOnChanges),
	}
	if len(r.PropertyDependencies) > 0 {
		c.PropertyDependencies = map[string][]string{}
		for k, v := range r.PropertyDependencies {
			c.PropertyDependencies[k] = cloneStrings(v)
		}
	}
	if r.ReplacementTrigger != nil {
		c.ReplacementTrigger = checkpointValue(r.ReplacementTrigger)
	}
	if r.Hooks != nil {
		for _, p := range hookPoints {
			if names := *p.get(r.Hooks); len(names) > 0 {
				if c.ResourceHooks == nil {
					c.ResourceHooks = map[string][]string{}
				}
				c.ResourceHooks[p.name] = cloneStrings(names)
			}
		}
	}
	return c
}

// fromCheckpoint deserializes a resource a migration returned. What the
// checkpoint does not hold (a component's providers, registration
// options) comes from its predecessor, if it has one.
func fromCheckpoint(c checkpointResource, pred *ResourceState) (*ResourceState, error) {
	inputs, err := stateMap(c.Inputs)
	if err != nil {
		return nil, err
	}
	outputs, err := stateMap(c.Outputs)
	if err != nil {
		return nil, err
	}
	var trigger *structpb.Value
	if c.ReplacementTrigger != nil {
		if trigger, err = stateValue(c.ReplacementTrigger); err != nil {
			return nil, err
		}
	}
	// The engine also refuses a resource without a URN or a type here,
	// which the check of each migration's result has refused before.
	if !c.Custom && c.ID != "" {
		return nil, fmt.Errorf("resource '%s' has 'custom' false but non-empty ID", c.URN)
	}
	r := &ResourceState{ReplacementTrigger: trigger}
	if pred != nil {
		r.Providers = maps.Clone(pred.Providers)
		r.Aliases = cloneStrings(pred.Aliases)
		r.DeleteBeforeReplace = pred.DeleteBeforeReplace
		if pred.CustomTimeouts != nil {
			r.CustomTimeouts = proto.Clone(pred.CustomTimeouts).(*pulumirpc.RegisterResourceRequest_CustomTimeouts)
		}
	}
	r.URN, r.Type, r.Name, r.Custom, r.External = c.URN, c.Type, URNName(c.URN), c.Custom, c.External
	r.Parent, r.ID, r.Inputs, r.Outputs, r.Provider = c.Parent, c.ID, inputs, outputs, c.Provider
	r.DependsOn, r.Protect, r.RetainOnDelete = c.Dependencies, c.Protect, c.RetainOnDelete
	r.DeletedWith, r.ReplaceWith, r.IgnoreChanges = c.DeletedWith, c.ReplaceWith, c.IgnoreChanges
	r.ReplaceOnChanges, r.HideDiff, r.AdditionalSecretOutputs = c.ReplaceOnChanges, c.HideDiff, c.AdditionalSecretOutputs
	r.ImportID, r.PendingDelete = c.ImportID, c.Delete
	if len(c.PropertyDependencies) > 0 {
		r.PropertyDependencies = c.PropertyDependencies
	}
	if len(c.ResourceHooks) > 0 {
		r.Hooks = &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{}
		for _, p := range hookPoints {
			*p.get(r.Hooks) = cloneStrings(c.ResourceHooks[p.name])
		}
	}
	return r, nil
}

// checkpointMap turns stored properties into the checkpoint's JSON form.
func checkpointMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	out := make(map[string]any, len(s.GetFields()))
	for k, v := range s.GetFields() {
		out[k] = checkpointValue(v)
	}
	return out
}

func checkpointValue(v *structpb.Value) any {
	switch k := v.GetKind().(type) {
	case *structpb.Value_ListValue:
		out := make([]any, len(k.ListValue.GetValues()))
		for i, e := range k.ListValue.GetValues() {
			out[i] = checkpointValue(e)
		}
		return out
	case *structpb.Value_StructValue:
		if signature(v) == secretSig {
			plain, _ := json.Marshal(checkpointValue(k.StructValue.GetFields()["value"]))
			return map[string]any{sigKey: secretSig, "plaintext": string(plain)}
		}
		return checkpointMap(k.StructValue)
	default:
		return v.AsInterface()
	}
}

// stateMap turns checkpoint properties back into the stored form.
func stateMap(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(m))}
	for k, v := range m {
		sv, err := stateValue(v)
		if err != nil {
			return nil, err
		}
		out.Fields[k] = sv
	}
	return out, nil
}

func stateValue(v any) (*structpb.Value, error) {
	switch x := v.(type) {
	case []any:
		out := make([]*structpb.Value, len(x))
		for i, e := range x {
			sv, err := stateValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = sv
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out}), nil
	case map[string]any:
		if x[sigKey] == secretSig {
			// As the engine reads a migration's secrets: in plaintext, or
			// in a ciphertext it takes for the plaintext.
			cipher, cipherOK := x["ciphertext"].(string)
			plain, plainOK := x["plaintext"].(string)
			if cipherOK == plainOK || plain == "" && cipher == "" {
				return nil, errors.New("malformed secret value: exactly one of `ciphertext` or `plaintext` must be supplied")
			}
			if !plainOK {
				plain = cipher
			}
			var inner any
			if err := json.Unmarshal([]byte(plain), &inner); err != nil {
				return nil, err
			}
			iv, err := stateValue(inner)
			if err != nil {
				return nil, err
			}
			return makeSecret(iv), nil
		}
		s, err := stateMap(x)
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	default:
		return structpb.NewValue(v)
	}
}
