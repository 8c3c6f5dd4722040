package migrations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/monitor"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// Args is what a migration is told: the URN of the registering resource and
// its prior state.
type Args struct {
	URN resource.URN
	// OldState is a JSON array of resources in the checkpoint format
	// (apitype.ResourceV3): the registering resource, then every resource
	// transitively parented to it. It is exactly what the engine sent.
	// Secret values are plaintext inside their secret envelopes.
	OldState json.RawMessage
}

// Resources decodes OldState into one map per resource. Numbers are
// json.Number values, so integers and decimals keep their exact text.
func (a *Args) Resources() ([]map[string]any, error) {
	return decodeResources(a.OldState)
}

// Result is what a migration returns. A nil *Result leaves the state
// unchanged.
type Result struct {
	// NewState replaces the old state: a JSON array of checkpoint resources.
	// Nil (or empty) leaves the state unchanged. Every resource of the old
	// state must either still be in it or have a successor.
	NewState json.RawMessage
	// Successors maps the URN of each resource removed from the old state to
	// the URN of the resource in NewState that takes its place. Several old
	// resources may share one successor.
	Successors map[string]string
}

// Replace returns a result whose new state is resources, encoded as JSON,
// with the given successors.
func Replace(resources []map[string]any, successors map[string]string) (*Result, error) {
	if resources == nil {
		resources = []map[string]any{}
	}
	state, err := json.Marshal(resources)
	if err != nil {
		return nil, fmt.Errorf("migrations: encoding the new state: %w", err)
	}
	return &Result{NewState: state, Successors: maps.Clone(successors)}, nil
}

// Func is a state migration. Returning an error fails the resource's
// registration with the error's message.
type Func func(ctx context.Context, args *Args) (*Result, error)

// newFunc builds the callbacks.Func the engine calls for fn. dryRun is what
// the engine said when fn was registered: the request does not say it. A
// result that
// breaks the protocol's rules (see [Result]) fails the call with a
// [*callbacks.Error] wrapping [callbacks.ErrInvalidResult] (Internal) that
// names the rule, rather than reaching the engine.
func newFunc(fn Func, dryRun bool) callbacks.Func {
	decode := func(ctx context.Context, payload []byte, owned bool, info *callbacks.CallInfo) (*Args, error) {
		info.DryRun = dryRun
		return decodeRequest(ctx, payload, owned, info)
	}
	return callbacks.NewFunc(callbacks.KindStateMigration, decode, fn, encode)
}

// decodeRequest decodes a state migration request into Args. The state is
// passed on as it came.
func decodeRequest(_ context.Context, payload []byte, _ bool, info *callbacks.CallInfo) (*Args, error) {
	req := &pulumirpc.StateMigrationRequest{}
	if err := proto.Unmarshal(payload, req); err != nil {
		return nil, fmt.Errorf("not a pulumirpc.StateMigrationRequest: %w", err)
	}
	info.URN = req.GetUrn()
	return &Args{URN: resource.URN(req.GetUrn()), OldState: json.RawMessage(req.GetOldState())}, nil
}

// encode checks res against the old state of args and encodes it. A nil
// result is the empty response: state unchanged.
func encode(_ context.Context, args *Args, res *Result) ([]byte, error) {
	if res == nil {
		return nil, nil
	}
	if err := check(args.OldState, res); err != nil {
		return nil, fmt.Errorf("%w: the migration for %s returned an invalid result: %w", callbacks.ErrInvalidResult, args.URN, err)
	}
	return proto.Marshal(&pulumirpc.StateMigrationResponse{NewState: res.NewState, Successors: res.Successors})
}

// Callback registers fn with mon's server and returns the Callback to append
// to RegisterResourceRequest.state_migrations. It does not talk to the
// engine but to ask, once per deployment, whether it is a preview; ask it
// first with mon.Require(ctx, monitor.StateMigrations), because engines
// without the STATE_MIGRATIONS feature refuse such registrations. Every
// error is a [*callbacks.Error].
func Callback(ctx context.Context, mon *monitor.Monitor, fn Func, opts ...callbacks.RegisterOption) (*pulumirpc.Callback, error) {
	const what = "migrations: registering a state migration"
	if err := registration.Check(mon, fn == nil); err != nil {
		return nil, registration.Failed(callbacks.KindStateMigration, what, err)
	}
	info, err := mon.DeploymentInfo(ctx)
	if err != nil {
		return nil, registration.Failed(callbacks.KindStateMigration, what, err)
	}
	cb, err := mon.Server().Register(ctx, newFunc(fn, info.GetDryRun()), opts...)
	if err != nil {
		return nil, registration.Failed(callbacks.KindStateMigration, what, err)
	}
	return cb, nil
}

func decodeResources(state []byte) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(state))
	dec.UseNumber()
	var out []map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("migrations: decoding the state: %w", err)
	}
	if dec.More() {
		return nil, errors.New("migrations: decoding the state: data after the JSON array")
	}
	return out, nil
}

// check enforces the protocol's rules on a result: the new state is an array
// of resources with URNs; every old resource is kept or has a successor; a
// successor's key is a removed old resource and its value a new resource.
func check(oldState []byte, res *Result) error {
	if len(res.NewState) == 0 {
		if len(res.Successors) > 0 {
			return errors.New("successors were given but the state is unchanged (NewState is empty)")
		}
		return nil
	}
	_, newURNs, err := urnsOf(res.NewState)
	if err != nil {
		return fmt.Errorf("NewState: %w", err)
	}
	oldOrder, oldURNs, err := urnsOf(oldState)
	if err != nil {
		// The engine's own state does not parse: leave the judgement to it.
		oldOrder, oldURNs = nil, nil
	}
	var problems []string
	for _, u := range oldOrder {
		_, kept := newURNs[u]
		_, succeeded := res.Successors[u]
		switch {
		case !kept && !succeeded:
			problems = append(problems, fmt.Sprintf("%s was removed without a successor", u))
		case kept && succeeded:
			problems = append(problems, fmt.Sprintf("%s is still in the new state but has a successor", u))
		}
	}
	for _, old := range slices.Sorted(maps.Keys(res.Successors)) {
		if oldURNs != nil {
			if _, ok := oldURNs[old]; !ok {
				problems = append(problems, fmt.Sprintf("successor key %s is not in the old state", old))
			}
		}
		if succ := res.Successors[old]; succ == "" {
			problems = append(problems, fmt.Sprintf("successor of %s is empty", old))
		} else if _, ok := newURNs[succ]; !ok {
			problems = append(problems, fmt.Sprintf("successor %s of %s is not in the new state", succ, old))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// urnsOf returns the URNs of the resources in a state, in state order, and
// as a set.
func urnsOf(state []byte) ([]string, map[string]struct{}, error) {
	resources, err := decodeResources(state)
	if err != nil {
		return nil, nil, err
	}
	order := make([]string, 0, len(resources))
	set := make(map[string]struct{}, len(resources))
	for i, r := range resources {
		u, ok := r["urn"].(string)
		if !ok || u == "" {
			return nil, nil, fmt.Errorf("resource %d has no urn", i)
		}
		order = append(order, u)
		set[u] = struct{}{}
	}
	return order, set, nil
}
