package migrations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/monitor"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
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
	// transitively parented to it. Served by this module's server, it is
	// the engine's bytes; under program.Migrations, the Go SDK's
	// re-encoding of them (every number kept). Secret values are plaintext
	// inside their secret envelopes.
	OldState json.RawMessage
}

// Resources decodes OldState into one map per resource. Numbers are
// json.Number values, so integers and decimals keep their exact text.
func (a *Args) Resources() ([]map[string]any, error) { return decodeState[map[string]any](a.OldState) }

// Checkpoint decodes OldState into the Go SDK's own checkpoint type, the
// engine's: typed fields (URN, ID, Custom, Parent, Protect...) and
// property maps whose numbers are json.Number values. Give the resources
// back with [ReplaceCheckpoint].
func (a *Args) Checkpoint() ([]apitype.ResourceV3, error) {
	return decodeState[apitype.ResourceV3](a.OldState)
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
	return replace(resources, successors)
}

// ReplaceCheckpoint is [Replace] for resources of the checkpoint type, as
// [Args.Checkpoint] gives them.
func ReplaceCheckpoint(resources []apitype.ResourceV3, successors map[string]string) (*Result, error) {
	return replace(resources, successors)
}

func replace[T any](resources []T, successors map[string]string) (*Result, error) {
	if resources == nil {
		resources = []T{}
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
// the engine said when fn was registered: the request does not say it. The
// old state is passed on as it came. A result that breaks the protocol's
// rules (see [Result]) fails the call with a [*callbacks.Error] wrapping
// [callbacks.ErrInvalidResult] (Internal) that names the rule, rather than
// reaching the engine.
func newFunc(fn Func, dryRun bool) callbacks.Func {
	decode := func(_ context.Context, payload []byte, _ bool, info *callbacks.CallInfo) (*Args, error) {
		info.DryRun = dryRun
		req := &pulumirpc.StateMigrationRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, fmt.Errorf("not a pulumirpc.StateMigrationRequest: %w", err)
		}
		urn := resource.URN(req.GetUrn())
		if info.URN = string(urn); urn.IsValid() {
			info.Type, info.ResourceName = string(urn.Type()), urn.Name()
		}
		return &Args{URN: urn, OldState: json.RawMessage(req.GetOldState())}, nil
	}
	return callbacks.NewFunc(callbacks.KindStateMigration, decode, fn, encode)
}

// encode checks res against the old state of args and encodes it. A nil
// result is the empty response: state unchanged.
func encode(_ context.Context, args *Args, res *Result) ([]byte, error) {
	if res == nil {
		return nil, nil
	}
	if err := validate(args.URN, args.OldState, res); err != nil {
		return nil, fmt.Errorf("%w: the result breaks the rule %w", callbacks.ErrInvalidResult, err)
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

func decodeState[T any](state []byte) ([]T, error) {
	dec := json.NewDecoder(bytes.NewReader(state))
	dec.UseNumber()
	var out []T
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("migrations: decoding the state: %w", err)
	}
	if dec.More() {
		return nil, errors.New("migrations: decoding the state: data after the JSON array")
	}
	return out, nil
}
