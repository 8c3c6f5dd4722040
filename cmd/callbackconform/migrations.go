package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The prior states the kit serves a migration.
const (
	migrationPlain   = iota // the registering resource alone, no change asked
	migrationChange         // the resource and a child, versionKey at 1 on both
	migrationChanged        // what migrationChange must become
)

// providerRefMigrated is the provider reference of the migrated resources.
const providerRefMigrated = "urn:pulumi:conform::kit::pulumi:providers:conform::default::5f0c8a52-8a7e-4e0a-9d59-3c6a3b0e7a11"

// childURN is the URN of the child the kit puts under the registering
// resource in the prior state.
func (c *checker) childURN() string {
	typ := c.cb.URN
	if i := strings.LastIndex(typ, "::"); i >= 0 {
		typ = typ[:i]
	}
	return typ + "$conform:index:Child::migrated-child"
}

// rootResource is the registering resource's prior state, with outputs.
func (c *checker) rootResource(outputs map[string]any, every bool) map[string]any {
	r := map[string]any{
		"urn": c.cb.URN, "custom": true, "id": "migrated-id", "type": c.cb.Type,
		"inputs": outputs, "outputs": outputs, "provider": providerRefMigrated,
	}
	if c.cb.Parent != "" {
		r["parent"] = c.cb.Parent
	}
	if every {
		r["dependencies"] = []string{urnDep}
		r["propertyDependencies"] = map[string][]string{"conformKeep": {urnDep}}
		r["additionalSecretOutputs"] = []string{"secretOut"}
		r["customTimeouts"] = map[string]any{"create": 60, "update": 120}
		r["created"] = "2026-01-02T03:04:05Z"
		r["modified"] = "2026-01-02T03:04:06Z"
		r["ignoreChanges"] = []string{"tags"}
		r["replaceOnChanges"] = []string{"name"}
		r["hideDiff"] = []string{"policy"}
		r["sourcePosition"] = "project:///index.ts#1,2"
		r["resourceHooks"] = map[string][]string{"before_create": {"conform-hook"}}
	}
	return r
}

// migrationState returns the prior state of one of the kinds above, as
// JSON text (the value shapes are written as JSON text, so that 2^53+1 and
// -0 are in it exactly).
func (c *checker) migrationState(which int) []byte {
	version := "1"
	if which == migrationChanged {
		version = "2"
	}
	if which == migrationPlain {
		return c.stateWith(nil, false)
	}
	root := c.rootResource(map[string]any{"conformKeep": "kept as sent"}, true)
	root["outputs"] = map[string]any{"conformKeep": "kept as sent", "~shapes": true}
	child := map[string]any{"urn": c.childURN(), "custom": true, "id": "child-id", "type": "conform:index:Child",
		"parent": c.cb.URN, "provider": providerRefMigrated, "outputs": map[string]any{versionKey: json.Number(version)}}
	b, err := json.Marshal([]any{root, child})
	if err != nil {
		panic(err)
	}
	// Splice the shapes and the version into the root's outputs.
	s := strings.Replace(string(b), `"~shapes":true`, shapeJSON+`,"`+versionKey+`":`+version, 1)
	return []byte(s)
}

// stateWith returns the plain prior state whose root's outputs are props
// (nil: none), with a child when every is set.
func (c *checker) stateWith(props *structpb.Struct, every bool) []byte {
	outputs := map[string]any{}
	if props != nil {
		b, err := protojson.Marshal(props)
		if err != nil {
			panic(err)
		}
		if err := json.Unmarshal(b, &outputs); err != nil {
			panic(err)
		}
	}
	state := []any{c.rootResource(outputs, every)}
	if every {
		state = append(state, map[string]any{"urn": c.childURN(), "custom": true, "id": "child-id", "type": "conform:index:Child",
			"parent": c.cb.URN, "provider": providerRefMigrated, "outputs": map[string]any{"size": 3}})
	}
	b, err := json.Marshal(state)
	if err != nil {
		panic(err)
	}
	return b
}

// migrationRequest builds the identity request: a migration given state it
// has nothing to change in must answer with no new state.
func (c *checker) migrationRequest(props *structpb.Struct, every bool) proto.Message {
	return &pulumirpc.StateMigrationRequest{Urn: c.cb.URN, OldState: c.stateWith(props, every)}
}

// judgeMigration checks the identity answer: no new state, no successors.
func judgeMigration(_ proto.Message, b []byte) []string {
	var got pulumirpc.StateMigrationResponse
	if err := proto.Unmarshal(b, &got); err != nil {
		return []string{"the StateMigrationResponse does not decode: " + err.Error()}
	}
	var out []string
	if len(got.NewState) > 0 {
		out = append(out, fmt.Sprintf("a new state came back (%d bytes) although the function returned none (no change)", len(got.NewState)))
	}
	if len(got.Successors) > 0 {
		out = append(out, fmt.Sprintf("successors came back (%v) although the function returned none", got.Successors))
	}
	return out
}

// bigMigration encodes the envelope of a migration request whose state's
// outputs hold one string of n bytes.
func (c *checker) bigMigration(n int) []byte {
	const marker = "BIG-PLACEHOLDER"
	state := c.stateWith(&structpb.Struct{Fields: map[string]*structpb.Value{"big": structpb.NewStringValue(marker)}}, false)
	// The state holds the marker twice (inputs and outputs): fill both.
	head, tail, _ := strings.Cut(string(state), marker)
	mid, tail, _ := strings.Cut(tail, marker)
	fill := fillBytes(n / 2)
	stateLen := len(head) + len(mid) + len(tail) + 2*len(fill)
	reqLen := protowire.SizeTag(1) + protowire.SizeBytes(len(c.cb.URN)) + protowire.SizeTag(2) + protowire.SizeBytes(stateLen)
	b := make([]byte, 0, reqLen+len(c.cb.Token)+32)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, c.cb.Token)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(reqLen))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, c.cb.URN)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(stateLen))
	b = append(b, head...)
	b = append(b, fill...)
	b = append(b, mid...)
	b = append(b, fill...)
	b = append(b, tail...)
	return b
}

func fillBytes(n int) []byte {
	fill := make([]byte, n)
	done := copy(fill, "conformance-kit-")
	for done < len(fill) {
		done += copy(fill[done:], fill[:done])
	}
	return fill
}

// localRule is a rule of the engine's validation of a migration's result
// that a server can check from the old state and the result alone.
type localRule struct {
	id string
	// result builds the bad result from the old state (root, child).
	result func(c *checker, root, child map[string]any) (state []any, successors map[string]string)
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// localRules are the results the kit asks a migration to return, each
// breaking one rule, which a server that checks results refuses to send.
var localRules = []localRule{
	{"not-checkpoint-state", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		r := clone(root)
		r["notACheckpointField"] = true
		return []any{r, child}, nil
	}},
	{"invalid-urn", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["urn"] = "not-a-urn"
		return []any{root, ch}, nil
	}},
	{"type-mismatch", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["type"] = "conform:index:Other"
		return []any{root, ch}, nil
	}},
	{"duplicate", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		return []any{root, child, child}, nil
	}},
	{"unaccounted", func(_ *checker, root, _ map[string]any) ([]any, map[string]string) {
		return []any{root}, nil
	}},
	{"id-changed", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["id"] = "another-id"
		return []any{root, ch}, nil
	}},
	{"custom-changed", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["custom"] = false
		delete(ch, "id")
		delete(ch, "provider")
		return []any{root, ch}, nil
	}},
	{"successor-not-in-prior-state", func(c *checker, root, child map[string]any) ([]any, map[string]string) {
		return []any{root, child}, map[string]string{strings.Replace(c.childURN(), "migrated-child", "ghost", 1): c.cb.URN}
	}},
	{"import", func(c *checker, root, child map[string]any) ([]any, map[string]string) {
		extra := clone(child)
		extra["urn"] = strings.Replace(c.childURN(), "migrated-child", "imported", 1)
		extra["id"] = "imported-id"
		return []any{root, child, extra}, nil
	}},
	{"protect", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["protect"] = true
		return []any{root, ch}, nil
	}},
	{"aliases", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["aliases"] = []string{urnOther}
		return []any{root, ch}, nil
	}},
	{"pending-delete", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["delete"] = true
		return []any{root, ch}, nil
	}},
	{"provider-reference", func(_ *checker, root, child map[string]any) ([]any, map[string]string) {
		ch := clone(child)
		ch["provider"] = strings.Replace(providerRefMigrated, "5f0c8a52", "00000000", 1)
		return []any{root, ch}, nil
	}},
}

// localRuleRequest builds the request that asks the migration to return
// the result breaking rule.
func (c *checker) localRuleRequest(rule localRule) (proto.Message, error) {
	root := c.rootResource(map[string]any{"conformKeep": "kept as sent"}, false)
	child := map[string]any{"urn": c.childURN(), "custom": true, "id": "child-id", "type": "conform:index:Child",
		"parent": c.cb.URN, "provider": providerRefMigrated, "outputs": map[string]any{"size": 3}}
	state, successors := rule.result(c, root, child)
	ret, err := json.Marshal(state)
	if err != nil {
		return nil, err
	}
	outputs := map[string]any{returnKey: string(ret)}
	if successors != nil {
		outputs[successorsKey] = successors
	}
	oldRoot := c.rootResource(outputs, false)
	old, err := json.Marshal([]any{oldRoot, child})
	if err != nil {
		return nil, err
	}
	return &pulumirpc.StateMigrationRequest{Urn: c.cb.URN, OldState: old}, nil
}

// checkLocalRules asks the migration for each bad result and expects the
// server to refuse to send it.
func checkLocalRules(ctx context.Context, c *checker) result {
	var sentOn, refused []string
	named := 0
	for _, rule := range localRules {
		req, err := c.localRuleRequest(rule)
		if err != nil {
			return failed("kit: %v", err)
		}
		_, err = c.callRaw(ctx, req, mustMarshal(req))
		switch code := codeOf(err); {
		case err == nil:
			sentOn = append(sentOn, rule.id)
		case code == codes.Unavailable || code == codes.NotFound || code == codes.DeadlineExceeded:
			return skippedResult("the migration never ran: %s", describe(err))
		default:
			c.logf("  %s: refused: %s", rule.id, describe(err))
			if strings.Contains(statusMessage(err), rule.id) {
				named++
			}
			refused = append(refused, rule.id)
		}
	}
	ev := fmt.Sprintf("%d of %d bad results refused before sending, %d naming the rule", len(refused), len(localRules), named)
	if len(sentOn) > 0 {
		return failed("%s; sent on: %s", ev, strings.Join(sentOn, ", "))
	}
	return passed("%s (%s)", ev, strings.Join(refused, ", "))
}

// checkMigrationFailure asks the migration to fail: the call must fail
// with the function's message.
func checkMigrationFailure(ctx context.Context, c *checker) (string, error) {
	const msg = "conform: this migration fails"
	req := &pulumirpc.StateMigrationRequest{Urn: c.cb.URN,
		OldState: mustJSON([]any{c.rootResource(map[string]any{failKey: msg}, false)})}
	_, err := c.callRaw(ctx, req, mustMarshal(req))
	switch {
	case err == nil:
		return "", fmt.Errorf("the function failed with %q, but the call succeeded", msg)
	case !strings.Contains(statusMessage(err), msg):
		return "", fmt.Errorf("the function failed with %q, the call with %s", msg, describe(err))
	}
	return describe(err), nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
