package program

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/pulumi/pulumi/sdk/v3/go/common/promise"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"google.golang.org/grpc"
)

// sdkVerified names the SDK versions whose unexported state this file, the
// module's only access to it, is verified for: a context's run information
// and engine connection (Monitor), a hook's registration record (Hooks),
// the SDK's callback server (Migrations stops it). Each access checks the
// field's name and type first, else fails naming the field and versions.
const sdkVerified = "github.com/pulumi/pulumi/sdk/v3 v3.274.1 and v3.276.0"

// sdkField returns the field name of the struct v, if it has type want.
func sdkField(v reflect.Value, name string, want reflect.Type) (reflect.Value, error) {
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName(name); f.IsValid() && f.Type() == want {
			return f, nil
		}
	}
	return reflect.Value{}, fmt.Errorf("program: the Go SDK linked in keeps no %s %s in %s, as %s do; "+
		"this version of github.com/langhost/callbacks does not support it", name, want, v.Type(), sdkVerified)
}

// sdkState returns the state (a struct) a *pulumi.Context shares with its copies.
func sdkState(ctx *pulumi.Context) (reflect.Value, error) {
	state := reflect.ValueOf(ctx).Elem().FieldByName("state")
	if !state.IsValid() || state.Kind() != reflect.Pointer || state.IsNil() {
		return reflect.Value{}, fmt.Errorf("program: the Go SDK linked in keeps no state in *pulumi.Context, as %s do", sdkVerified)
	}
	return state.Elem(), nil
}

// runInfo reads ctx's run information (state.info) and, without an engine
// address, the target of the connection to the engine (state.engineConn)
// a component provider's Construct has instead.
func runInfo(ctx *pulumi.Context) (pulumi.RunInfo, error) {
	state, err := sdkState(ctx)
	if err != nil {
		return pulumi.RunInfo{}, err
	}
	return readRunInfo(state)
}

func readRunInfo(state reflect.Value) (pulumi.RunInfo, error) {
	info, err := sdkField(state, "info", reflect.TypeFor[pulumi.RunInfo]())
	if err != nil {
		return pulumi.RunInfo{}, err
	}
	all := (*pulumi.RunInfo)(unsafe.Pointer(info.UnsafeAddr()))
	ri := pulumi.RunInfo{Project: all.Project, Stack: all.Stack, MonitorAddr: all.MonitorAddr, EngineAddr: all.EngineAddr, DryRun: all.DryRun}
	if ri.EngineAddr == "" {
		conn, err := sdkField(state, "engineConn", reflect.TypeFor[*grpc.ClientConn]())
		if err != nil {
			return pulumi.RunInfo{}, err
		}
		if c := (*grpc.ClientConn)(conn.UnsafePointer()); c != nil {
			ri.EngineAddr = c.Target()
		}
	}
	return ri, nil
}

// registered is the SDK's record of a hook registration that has completed.
var registered = func() *promise.Promise[struct{}] {
	var c promise.CompletionSource[struct{}]
	c.Fulfill(struct{}{})
	return c.Promise()
}()

// markRegistered sets the field in which a pulumi.ResourceHook or
// pulumi.ErrorHook (the struct hook) records its registration.
func markRegistered(hook reflect.Value) error {
	f, err := sdkField(hook, "registered", reflect.TypeOf(registered))
	if err != nil {
		return err
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(registered))
	return nil
}

// stopSDKServer stops the SDK's callback server of a context's state, if
// any, under the SDK's callbacksLock: it closes the channel the server
// stops on (callbacks.stop), drains its unread Done channel
// (callbacks.handle.Done), and leaves the SDK no server to stop twice.
func stopSDKServer(state reflect.Value) error {
	lock, err := sdkField(state, "callbacksLock", reflect.TypeFor[sync.Mutex]())
	if err != nil {
		return err
	}
	mu := (*sync.Mutex)(unsafe.Pointer(lock.UnsafeAddr()))
	mu.Lock()
	defer mu.Unlock()
	cbs := state.FieldByName("callbacks")
	if !cbs.IsValid() || cbs.Kind() != reflect.Pointer || cbs.Type().Elem().Kind() != reflect.Struct {
		return fmt.Errorf("program: the Go SDK linked in keeps no callback server in %s, as %s do", state.Type(), sdkVerified)
	}
	if cbs.IsNil() {
		return nil // the SDK never started one
	}
	stop, err := sdkField(cbs.Elem(), "stop", reflect.TypeFor[chan bool]())
	if err != nil {
		return err
	}
	handle, err := sdkField(cbs.Elem(), "handle", reflect.TypeFor[rpcutil.ServeHandle]())
	if err != nil {
		return err
	}
	close(*(*chan bool)(unsafe.Pointer(stop.UnsafeAddr())))
	for range (*rpcutil.ServeHandle)(unsafe.Pointer(handle.UnsafeAddr())).Done {
	}
	reflect.NewAt(cbs.Type(), unsafe.Pointer(cbs.UnsafeAddr())).Elem().SetZero()
	return nil
}
