package program

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
)

// migrationsSince is the first Pulumi release whose engine runs state
// migrations.
const migrationsSince = "3.274.1"

// Migrations attaches state migrations to a resource the Go SDK registers:
// it is the SDK's own pulumi.StateMigrations option, carrying functions of
// this module's migrations package, so the SDK registers the resource as
// always (its source position and stack trace included) and the engine
// calls the migrations, in order, over the resource's prior state before it
// decides the resource's step.
//
//	upgrade, err := program.Migrations(ctx, chain.Migrate)
//	if err != nil {
//		return err
//	}
//	ctx.RegisterResource(typ, name, args, &res, upgrade)
//
// Each call runs as every callback of this module runs — in the
// deployment's registry, with its deadlines, observer and panic handling
// (see callbacks.Registry.Invoke) — and its result is checked by the
// engine's rules before it is sent (see the migrations package). The SDK's
// callback server carries the call: OldState is the SDK's re-encoding of
// what the engine sent (every number kept), not its bytes.
//
// The engine must run state migrations (Pulumi 3.274.1 or later): on an
// older one, Migrations fails at once with an error that says so and wraps
// monitor.ErrMissingFeature, rather than the resource's registration
// failing later. A nil function is an error wrapping callbacks.ErrNilFunc.
// Deadlines for migrations are set on the deployment's server
// (callbacks.KindTimeout, given to [Monitor]).
func Migrations(ctx *pulumi.Context, fns ...migrations.Func) (pulumi.ResourceOption, error) {
	mon, err := Monitor(ctx)
	if err != nil {
		return nil, err
	}
	if err := mon.Require(ctx.Context(), monitor.StateMigrations); err != nil {
		if errors.Is(err, monitor.ErrMissingFeature) {
			return nil, fmt.Errorf("program.Migrations: state migrations need Pulumi %s or later: %w", migrationsSince, err)
		}
		return nil, err
	}
	info, err := runInfo(ctx)
	if err != nil {
		return nil, err
	}
	stopSDKServerAtEnd(ctx, mon, info.MonitorAddr)
	sdk := make([]pulumi.StateMigration, 0, len(fns))
	for _, fn := range fns {
		cb, err := migrations.Callback(ctx.Context(), mon, fn)
		if err != nil {
			return nil, err
		}
		sdk = append(sdk, viaRegistry(mon.Server().Registry(), cb.GetToken()))
	}
	return pulumi.StateMigrations(sdk), nil
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
		dec := json.NewDecoder(bytes.NewReader(resp.GetNewState()))
		dec.UseNumber()
		var next []map[string]any
		if err := dec.Decode(&next); err != nil {
			return nil, fmt.Errorf("program.Migrations: decoding the new state: %w", err)
		}
		return &pulumi.StateMigrationResult{NewState: next, Successors: resp.GetSuccessors()}, nil
	}
}

// sdkServers are the SDK's callback servers that carry migrations, by the
// deployment (monitor address) they serve.
var sdkServers = struct {
	sync.Mutex
	m map[string]map[uintptr]*pulumi.Context
}{m: map[string]map[uintptr]*pulumi.Context{}}

// stopSDKServerAtEnd arranges for the SDK's callback server of ctx, which
// carries its migrations, to stop when the deployment ends. The SDK starts
// that server on a context's first migration (or SDK transform or hook)
// and never stops it, so every deployment would leave a listening socket
// and two goroutines behind in a process that runs many (an Automation API
// service).
func stopSDKServerAtEnd(ctx *pulumi.Context, mon *monitor.Monitor, addr string) {
	state := reflect.ValueOf(ctx).Elem().FieldByName("state")
	if !state.IsValid() || state.Kind() != reflect.Pointer || state.IsNil() {
		return
	}
	key := state.Pointer()
	sdkServers.Lock()
	defer sdkServers.Unlock()
	first := sdkServers.m[addr] == nil
	if first {
		sdkServers.m[addr] = map[uintptr]*pulumi.Context{}
	}
	if _, ok := sdkServers.m[addr][key]; !ok {
		sdkServers.m[addr][key] = ctx
	}
	if !first {
		return
	}
	go func() {
		<-mon.Done()
		sdkServers.Lock()
		ctxs := sdkServers.m[addr]
		delete(sdkServers.m, addr)
		sdkServers.Unlock()
		for _, c := range ctxs {
			_ = stopSDKServer(c)
		}
	}()
}

// stopSDKServer stops the SDK's callback server of ctx, if it started one:
// it closes the channel the SDK gave the server to stop on (the unexported
// state.callbacks.stop), which makes the server stop gracefully, and reads
// the server's Done channel, on which it reports its end and which the SDK
// never reads. TestMigrationsGoThroughTheSDK pins this with its leak
// check: it fails when an SDK upgrade changes it.
func stopSDKServer(ctx *pulumi.Context) error {
	fail := func(what string) error {
		return fmt.Errorf("program: this version of the Go SDK keeps no %s; the module supports "+
			"github.com/pulumi/pulumi/sdk/v3 v3.274.1", what)
	}
	state := reflect.ValueOf(ctx).Elem().FieldByName("state").Elem()
	lock := state.FieldByName("callbacksLock")
	if !lock.IsValid() || lock.Type() != reflect.TypeFor[sync.Mutex]() {
		return fail("callbacksLock")
	}
	mu := (*sync.Mutex)(unsafe.Pointer(lock.UnsafeAddr()))
	mu.Lock()
	defer mu.Unlock()
	cbs := state.FieldByName("callbacks")
	if !cbs.IsValid() || cbs.Kind() != reflect.Pointer {
		return fail("callback server")
	}
	if cbs.IsNil() {
		return nil // the SDK never started one
	}
	srv := cbs.Elem()
	stop, handle := srv.FieldByName("stop"), srv.FieldByName("handle")
	if !stop.IsValid() || stop.Type() != reflect.TypeFor[chan bool]() ||
		!handle.IsValid() || handle.Type() != reflect.TypeFor[rpcutil.ServeHandle]() {
		return fail("callback server stop channel")
	}
	stopCh := *(*chan bool)(unsafe.Pointer(stop.UnsafeAddr()))
	done := (*rpcutil.ServeHandle)(unsafe.Pointer(handle.UnsafeAddr())).Done
	// Leave the SDK a server it cannot stop twice: it has no later use.
	reflect.NewAt(cbs.Type(), unsafe.Pointer(cbs.UnsafeAddr())).Elem().SetZero()
	close(stopCh)
	for range done {
	}
	return nil
}
