package migrations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	sdkproviders "github.com/pulumi/pulumi/sdk/v3/go/common/providers"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// ruleError is a broken rule: its name and what broke it.
type ruleError struct {
	rule string
	msg  string
}

func (e *ruleError) Error() string { return e.rule + ": " + e.msg }

// named names u in a rule's message: "the resource" for the one the
// migration is for (the prior state's first), which the error names already.
func named(u resource.URN, original []apitype.ResourceV3) string {
	if u == original[0].URN {
		return "the resource"
	}
	return "resource " + string(u)
}

func broken(rule, format string, args ...any) error {
	return &ruleError{rule: rule, msg: fmt.Sprintf(format, args...)}
}

// validate checks a migration's result for the registration urn against
// the old state it was given, by every rule of the engine (Pulumi 3.274.1)
// that depends on nothing but the two: the new state is checkpoint state,
// every resource is accounted for, custom resources keep their identity and
// lifecycle flags, protection and retention are inherited, provider states
// are untouched, and the result is one subtree under the registering
// resource. The rules that depend on the rest of the deployment (targets,
// pending operations, other registrations) are left to the engine.
func validate(urn resource.URN, oldState []byte, res *Result) error {
	if len(res.NewState) == 0 {
		if len(res.Successors) > 0 {
			return broken("successors-without-state", "returned successors without returning a new state")
		}
		return nil
	}
	final, err := decodeCheckpoint(res.NewState)
	if err != nil {
		return broken("not-checkpoint-state", "the new state is not a JSON array of checkpoint resources: %v", err)
	}
	var original []apitype.ResourceV3
	if err := json.Unmarshal(oldState, &original); err != nil || len(original) == 0 {
		// The engine's own state does not parse: leave the judgement to it.
		return nil
	}
	successors := make(map[resource.URN]resource.URN, len(res.Successors))
	for k, v := range res.Successors {
		successors[resource.URN(k)] = resource.URN(v)
	}
	if err := validateAccounting(original, final, successors); err != nil {
		return err
	}
	if reflect.DeepEqual(original, final) {
		return nil // nothing changed: the engine keeps the state as it was
	}
	if err := validateProviderStates(original, final); err != nil {
		return err
	}
	if err := validateIdentity(original, final, successors); err != nil {
		return err
	}
	return validateSubtree(urn, original[0], final, successors)
}

// decodeCheckpoint decodes a state as the engine does: strictly, so that a
// field the checkpoint format does not have is an error.
func decodeCheckpoint(state []byte) ([]apitype.ResourceV3, error) {
	dec := json.NewDecoder(bytes.NewReader(state))
	dec.DisallowUnknownFields()
	var out []apitype.ResourceV3
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON array")
	}
	return out, nil
}

// validateAccounting: every resource handed to the migration is returned
// under its URN or names a returned successor, and a resource kept under
// its URN keeps its kind and ID.
func validateAccounting(original, final []apitype.ResourceV3, successors map[resource.URN]resource.URN) error {
	olds := make(map[resource.URN]apitype.ResourceV3, len(original))
	for _, r := range original {
		olds[r.URN] = r
	}
	news := make(map[resource.URN]apitype.ResourceV3, len(final))
	for _, r := range final {
		switch {
		case !r.URN.IsValid():
			return broken("invalid-urn", "returned a resource with invalid URN %q", r.URN)
		case len(r.Aliases) != 0:
			return broken("aliases", "returned resource %s with aliases; state migration callbacks must express renames "+
				"with successor mappings instead", r.URN)
		}
		if _, dup := news[r.URN]; dup {
			return broken("duplicate", "returned duplicate resource %s", r.URN)
		}
		if r.Type != r.URN.Type() {
			return broken("type-mismatch", "returned resource %s with type %s, which does not match its URN type %s",
				r.URN, r.Type, r.URN.Type())
		}
		news[r.URN] = r
	}
	for _, source := range sortedKeys(successors) {
		target := successors[source]
		if source == "" || target == "" {
			return broken("empty-successor", "returned an empty successor mapping %q -> %q", source, target)
		}
		if _, ok := olds[source]; !ok {
			return broken("successor-not-in-prior-state",
				"returned successor for resource %s, which is not part of the prior state", source)
		}
		if _, ok := news[source]; ok {
			return broken("returned-and-succeeded", "resource %s is both returned and assigned successor %s", source, target)
		}
		if _, ok := news[target]; !ok {
			return broken("successor-not-returned", "successor %s for resource %s is not present in the returned state",
				target, source)
		}
	}
	for _, old := range original {
		kept, retained := news[old.URN]
		if !retained {
			if _, ok := successors[old.URN]; !ok {
				return broken("unaccounted", "did not account for resource %s: it must either be returned in the new "+
					"state or have a successor", old.URN)
			}
			continue
		}
		if old.Custom != kept.Custom {
			return broken("custom-changed", "%s changed between custom resource and component under the same URN; keep "+
				"what it is, or return a successor: the new resource under a URN of its own, in Successors", named(old.URN, original))
		}
		if old.Custom && old.ID != kept.ID {
			return broken("id-changed", "%s changed its ID from %q to %q under the same URN; keep the ID (a migration cannot "+
				"change which cloud resource it is), or return a successor: it under a new URN, in Successors", named(old.URN, original), old.ID, kept.ID)
		}
	}
	return nil
}

// validateProviderStates: provider states go through unchanged.
func validateProviderStates(original, final []apitype.ResourceV3) error {
	before := map[resource.URN]apitype.ResourceV3{}
	for _, r := range original {
		if sdkproviders.IsProviderType(r.Type) {
			before[r.URN] = r
		}
	}
	after := map[resource.URN]apitype.ResourceV3{}
	for _, r := range final {
		if sdkproviders.IsProviderType(r.Type) {
			after[r.URN] = r
		}
	}
	for _, u := range sortedKeys(before) {
		r, ok := after[u]
		if !ok {
			return broken("provider-state-removed", "removes or renames provider state %s; provider states must be "+
				"returned unchanged", u)
		}
		if !reflect.DeepEqual(before[u], r) {
			return broken("provider-state-changed", "changes provider state %s; provider states must be returned unchanged", u)
		}
	}
	for _, u := range sortedKeys(after) {
		if _, ok := before[u]; !ok {
			return broken("provider-state-introduced", "introduces provider state %s; provider states cannot be created "+
				"by a state migration", u)
		}
	}
	return nil
}

// validateIdentity: a custom resource's successor keeps its physical ID,
// provider, extension, ownership and lifecycle flags; every resource's
// Protect and RetainOnDelete are what its predecessors give it; no custom
// resource appears without a predecessor (a migration cannot import).
func validateIdentity(original, final []apitype.ResourceV3, successors map[resource.URN]resource.URN) error {
	finals := make(map[resource.URN]apitype.ResourceV3, len(final))
	for _, r := range final {
		finals[r.URN] = r
	}
	type inherited struct {
		custom, protect, retain, pending, taint bool
	}
	heirs := map[resource.URN]inherited{}
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
			return broken("custom-to-component", "maps managed custom resource %s to component successor %s; "+
				"migrations must preserve managed resource identity", old.URN, to)
		case old.ID != target.ID:
			return broken("physical-id", "changes the physical ID of managed custom resource %s from %q to %q on "+
				"successor %s; migrations must preserve managed resource identity", old.URN, old.ID, target.ID, to)
		case old.Provider != target.Provider:
			return broken("provider-reference", "changes the provider reference of managed custom resource %s from %q "+
				"to %q on successor %s; migrations must preserve managed resource provider identity",
				old.URN, old.Provider, target.Provider, to)
		case old.ExtensionRef != target.ExtensionRef:
			return broken("extension-reference", "changes the extension reference of managed custom resource %s from "+
				"%q to %q on successor %s; migrations must preserve managed resource extension identity",
				old.URN, old.ExtensionRef, target.ExtensionRef, to)
		case old.External != target.External:
			return broken("external", "changes ownership of custom resource %s from external=%t to external=%t on "+
				"successor %s; migrations must preserve managed resource ownership", old.URN, old.External, target.External, to)
		case old.PendingReplacement != target.PendingReplacement:
			return broken("pending-replacement", "changes PendingReplacement for custom resource %s from %t to %t on "+
				"successor %s; migrations must preserve provider lifecycle state",
				old.URN, old.PendingReplacement, target.PendingReplacement, to)
		case old.Taint != target.Taint:
			return broken("taint", "changes Taint for custom resource %s from %t to %t on successor %s; migrations "+
				"must preserve provider lifecycle state", old.URN, old.Taint, target.Taint, to)
		}
		h.pending = h.pending || old.PendingReplacement
		h.taint = h.taint || old.Taint
		heirs[to] = h
	}
	for _, r := range final {
		h, has := heirs[r.URN]
		if r.Custom && !has && r.ID != "" {
			// A custom resource with no predecessor takes the flags of
			// the prior resource with the same physical identity.
			for _, old := range original {
				if !old.Custom || old.ID != r.ID || old.Provider != r.Provider || old.ExtensionRef != r.ExtensionRef {
					continue
				}
				switch {
				case old.External != r.External:
					return broken("external", "changes ownership of custom resource %s from external=%t to external=%t on "+
						"inferred successor %s; migrations must preserve managed resource ownership", old.URN, old.External, r.External, r.URN)
				case old.PendingReplacement != r.PendingReplacement:
					return broken("pending-replacement", "changes PendingReplacement for custom resource %s from %t to %t "+
						"on inferred successor %s; migrations must preserve provider lifecycle state",
						old.URN, old.PendingReplacement, r.PendingReplacement, r.URN)
				case old.Taint != r.Taint:
					return broken("taint", "changes Taint for custom resource %s from %t to %t on inferred successor %s; "+
						"migrations must preserve provider lifecycle state", old.URN, old.Taint, r.Taint, r.URN)
				}
				h.custom = true
				h.protect = h.protect || old.Protect
				h.retain = h.retain || old.RetainOnDelete
				h.pending, h.taint = old.PendingReplacement, old.Taint
			}
		}
		switch {
		case r.PendingReplacement && (!r.Custom || !h.pending):
			return broken("pending-replacement", "returns resource %s with PendingReplacement set without a "+
				"pending-replacement custom predecessor", r.URN)
		case r.Taint && (!r.Custom || !h.taint):
			return broken("taint", "returns resource %s with Taint set without a tainted custom predecessor", r.URN)
		case r.Custom && !h.custom:
			return broken("import", "introduces custom resource %s with ID %q without a managed custom predecessor; "+
				"migrations cannot import resources", r.URN, r.ID)
		case r.Protect != h.protect:
			return broken("protect", "changes Protect for resource %s from inherited value %t to %t; migrations must "+
				"preserve resource protection", r.URN, h.protect, r.Protect)
		case r.RetainOnDelete != h.retain:
			return broken("retain-on-delete", "changes RetainOnDelete for resource %s from inherited value %t to %t; "+
				"migrations must preserve resource retention", r.URN, h.retain, r.RetainOnDelete)
		}
	}
	return nil
}

// validateSubtree: the result is one subtree, rooted at the registering
// resource (under its URN or its prior one), in the same stack and project,
// with no pending deletes, views or custom resources without an ID, each
// URN's type qualified by its parent's.
func validateSubtree(urn resource.URN, priorRoot apitype.ResourceV3, final []apitype.ResourceV3,
	successors map[resource.URN]resource.URN,
) error {
	// As the engine does, parents that name a removed resource are read
	// as its successor.
	final = slices.Clone(final)
	byURN := make(map[resource.URN]apitype.ResourceV3, len(final))
	for i, r := range final {
		if s, ok := successors[r.Parent]; ok {
			final[i].Parent = s
		}
		byURN[r.URN] = final[i]
	}
	root, roots := urn, 0
	if _, ok := byURN[urn]; ok {
		roots++
	}
	if priorRoot.URN != urn {
		if _, ok := byURN[priorRoot.URN]; ok {
			roots++
			root = priorRoot.URN
		}
	}
	if roots == 0 {
		return broken("root-missing", "the migration result must include the state for %s (the resource being "+
			"registered) under its new URN or its prior URN %s", urn, priorRoot.URN)
	}
	if roots != 1 {
		return broken("two-roots", "the migration result includes both the new root %s and its prior root %s; it "+
			"must include exactly one logical root", urn, priorRoot.URN)
	}
	for _, r := range final {
		switch {
		case r.URN.Stack() != urn.Stack() || r.URN.Project() != urn.Project():
			return broken("other-stack", "returned resource %s belongs to stack %q and project %q; migration results "+
				"must remain in registration stack %q and project %q", r.URN, r.URN.Stack(), r.URN.Project(),
				urn.Stack(), urn.Project())
		case r.Delete:
			return broken("pending-delete", "returned resource %s is marked for pending deletion; migrations may not "+
				"return pending-delete resources", r.URN)
		case r.ViewOf != "":
			return broken("view", "returned resource %s is a view; state migrations do not support views", r.URN)
		case r.Custom && r.ID == "":
			return broken("no-id", "returned custom resource %s has no ID", r.URN)
		case r.Parent != "" && !r.Parent.IsValid():
			return broken("invalid-parent", "returned resource %s has invalid parent URN %q", r.URN, r.Parent)
		}
		want := r.Type
		if r.Parent != "" && r.Parent.QualifiedType() != resource.RootStackType {
			want = r.Parent.QualifiedType() + resource.URNTypeDelimiter + r.Type
		}
		if r.URN.QualifiedType() != want {
			return broken("qualified-type", "resource %s has parent %s but qualified type %s; expected %s",
				r.URN, r.Parent, r.URN.QualifiedType(), want)
		}
		if r.URN == root {
			if r.Parent != priorRoot.Parent {
				return broken("root-parent", "the parent of %s may not be changed by a migration (got %q, expected %q)",
					r.URN, r.Parent, priorRoot.Parent)
			}
			continue
		}
		seen := 0
		for parent := r.Parent; parent != root; {
			if seen++; seen > len(final) {
				return broken("parent-cycle", "resource %s has a cyclic parent chain", r.URN)
			}
			next, ok := byURN[parent]
			if !ok {
				return broken("outside-subtree", "resource %s is parented to %s which is not part of the migration "+
					"result", r.URN, parent)
			}
			parent = next.Parent
		}
	}
	return nil
}

func sortedKeys[V any](m map[resource.URN]V) []resource.URN {
	return slices.Sorted(maps.Keys(m))
}
