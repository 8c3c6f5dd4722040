package program

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
)

// Migrations attaches a state migration to a resource the Go SDK
// registers: it is the SDK's own pulumi.StateMigrations option, carrying fn
// from this module's migrations package, so the SDK registers the resource
// as always (its source position and stack trace included) and the engine
// calls the migration over the resource's prior state before it decides
// the resource's step. Give a resource several of these options for several
// migrations, which the engine runs in the order given, or one
// migrations.Chain.
//
//	upgrade, err := program.Migrations(ctx, chain.Migrate, callbacks.Name("upgrade"))
//	if err != nil {
//		return err
//	}
//	ctx.RegisterResource(typ, name, args, &res, upgrade)
//
// opts are the options every Register takes (callbacks.Name, Timeout,
// FailOpen, AcceptsByteStrings). The call runs as every callback of this
// module runs: in the deployment's registry, with its deadlines, observer,
// panic handling and span (kind, name, resource URN, type and name,
// outcome), its result checked by the engine's rules (see package
// migrations). Only its route differs: the SDK's own callback server
// carries the engine's call to callbacks.Registry.Invoke, so OldState is
// the SDK's re-encoding of what the engine sent (every number kept), and
// the span is an internal one under the SDK's server span. The module
// stops that server when the deployment ends; the SDK never does.
//
// The engine must run state migrations (Pulumi 3.274.1 or later): on an
// older one, Migrations fails at once with an error that says so and wraps
// monitor.ErrMissingFeature, rather than the resource's registration
// failing later. A nil function is an error wrapping callbacks.ErrNilFunc.
func Migrations(ctx *pulumi.Context, fn migrations.Func, opts ...callbacks.RegisterOption) (pulumi.ResourceOption, error) {
	mon, err := Monitor(ctx)
	if err != nil {
		return nil, err
	}
	if err := mon.Require(ctx.Context(), monitor.StateMigrations); err != nil {
		if errors.Is(err, monitor.ErrMissingFeature) {
			return nil, fmt.Errorf("program.Migrations: state migrations need Pulumi 3.274.1 or later: %w", err)
		}
		return nil, err
	}
	if err := stopSDKServerAtEnd(ctx, mon); err != nil {
		return nil, err
	}
	cb, err := migrations.Callback(ctx.Context(), mon, fn, opts...)
	if err != nil {
		return nil, err
	}
	return pulumi.StateMigrations([]pulumi.StateMigration{viaRegistry(mon.Server().Registry(), cb.GetToken())}), nil
}

// viaRegistry is the SDK's form of the migration registered under token:
// it hands the SDK's call to the registry as the engine's request, and the
// registry's answer back to the SDK. The registry's errors keep their gRPC
// codes through the SDK's callback server.
func viaRegistry(reg *callbacks.Registry, token string) pulumi.StateMigration {
	return func(ctx context.Context, args *pulumi.StateMigrationArgs) (*pulumi.StateMigrationResult, error) {
		old, err := json.Marshal(args.OldState)
		if err != nil {
			return nil, fmt.Errorf("program.Migrations: encoding the old state: %w", err)
		}
		payload, err := proto.Marshal(&pulumirpc.StateMigrationRequest{Urn: string(args.URN), OldState: old})
		if err != nil {
			return nil, err
		}
		out, err := reg.Invoke(ctx, token, payload)
		if err != nil {
			return nil, err
		}
		var resp pulumirpc.StateMigrationResponse
		if err := proto.Unmarshal(out, &resp); err != nil {
			return nil, err
		}
		if len(resp.GetNewState()) == 0 {
			return nil, nil
		}
		next, err := (&migrations.Args{OldState: resp.GetNewState()}).Resources() // numbers kept exact
		if err != nil {
			return nil, fmt.Errorf("program.Migrations: decoding the new state: %w", err)
		}
		return &pulumi.StateMigrationResult{NewState: next, Successors: resp.GetSuccessors()}, nil
	}
}

// sdkServers are the states of the contexts whose SDK callback servers
// carry migrations, by the deployment they serve.
var sdkServers = struct {
	sync.Mutex
	m map[*monitor.Monitor]map[uintptr]reflect.Value
}{m: map[*monitor.Monitor]map[uintptr]reflect.Value{}}

// stopSDKServerAtEnd has the SDK's callback server of ctx, which carries
// its migrations, stop when the deployment ends. The SDK starts it on a
// context's first migration (or SDK transform or hook) and never stops it:
// every deployment would leave a listening socket and two goroutines
// behind in a process that runs many (an Automation API service).
func stopSDKServerAtEnd(ctx *pulumi.Context, mon *monitor.Monitor) error {
	state, err := sdkState(ctx)
	if err != nil {
		return err
	}
	sdkServers.Lock()
	defer sdkServers.Unlock()
	states := sdkServers.m[mon]
	if states == nil {
		states = map[uintptr]reflect.Value{}
		sdkServers.m[mon] = states
		go func() {
			<-mon.Done()
			sdkServers.Lock()
			delete(sdkServers.m, mon)
			sdkServers.Unlock()
			for _, st := range states {
				_ = stopSDKServer(st)
			}
		}()
	}
	states[state.Addr().Pointer()] = state
	return nil
}
