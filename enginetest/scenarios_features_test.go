package enginetest

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

func TestScenario01_DeploymentInfoFeatures(t *testing.T) {
	t.Parallel()
	callbackFeatures := []pulumirpc.ResourceMonitorFeature{
		pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_TRANSFORMS,
		pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_INVOKE_TRANSFORMS,
		pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS,
		pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_ERROR_HOOKS,
		pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SENDS_OPTIONS_TO_HOOKS,
		pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_BYTE_STRING,
	}
	migrations := pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_STATE_MIGRATIONS
	hooks := pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS
	tests := []struct {
		name       string
		opts       []Option
		want       []pulumirpc.ResourceMonitorFeature
		notWant    []pulumirpc.ResourceMonitorFeature
		dryRun     bool
		hooksProbe bool
	}{
		{name: "default", want: append(slices.Clone(callbackFeatures), migrations), hooksProbe: true},
		{name: "preview", opts: []Option{DryRun(true)}, want: callbackFeatures, dryRun: true, hooksProbe: true},
		{
			name: "3.260", opts: []Option{EngineVersion(engine3_260)},
			want: callbackFeatures, notWant: []pulumirpc.ResourceMonitorFeature{migrations}, hooksProbe: true,
		},
		{
			name: "without-hooks", opts: []Option{WithoutFeatures("resourceHooks")},
			notWant: []pulumirpc.ResourceMonitorFeature{hooks},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := append([]Option{WithProject("proj"), WithStack("dev")}, tt.opts...)
			e := startEngine(t, opts...)
			p := newProgram(t, e)
			info, err := p.mon.GetDeploymentInfo(p.ctx(), &emptypb.Empty{})
			if err != nil {
				t.Fatalf("GetDeploymentInfo: %v", err)
			}
			for _, f := range tt.want {
				if !slices.Contains(info.GetSupportedFeatures(), f) {
					t.Errorf("feature %v missing from %v", f, info.GetSupportedFeatures())
				}
			}
			for _, f := range tt.notWant {
				if slices.Contains(info.GetSupportedFeatures(), f) {
					t.Errorf("feature %v advertised: %v", f, info.GetSupportedFeatures())
				}
			}
			if info.GetProject() != "proj" || info.GetStack() != "dev" || info.GetDryRun() != tt.dryRun {
				t.Errorf("got project=%q stack=%q dryRun=%t, want proj, dev, %t",
					info.GetProject(), info.GetStack(), info.GetDryRun(), tt.dryRun)
			}
			// The legacy probe agrees with the enum list.
			r, err := p.mon.SupportsFeature(p.ctx(), &pulumirpc.SupportsFeatureRequest{Id: "resourceHooks"})
			if err != nil {
				t.Fatalf("SupportsFeature: %v", err)
			}
			if r.GetHasSupport() != tt.hooksProbe {
				t.Errorf("SupportsFeature(resourceHooks) = %t, want %t", r.GetHasSupport(), tt.hooksProbe)
			}
		})
	}
}

func TestScenario02_OldEngine(t *testing.T) {
	t.Parallel()
	e := startEngine(t, OldEngine(), WithoutShutdownSignal())
	cbs := newCallbackServer(t)
	p := newProgram(t, e)

	_, err := p.mon.GetDeploymentInfo(p.ctx(), &emptypb.Empty{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetDeploymentInfo: got %v, want Unimplemented", err)
	}
	has := map[string]bool{}
	for _, id := range []string{"resourceHooks", "errorHooks", "transforms", "invokeTransforms", "secrets", "outputValues"} {
		r, err := p.mon.SupportsFeature(p.ctx(), &pulumirpc.SupportsFeatureRequest{Id: id})
		if err != nil {
			t.Fatalf("SupportsFeature(%s): %v", id, err)
		}
		has[id] = r.GetHasSupport()
	}
	for id, want := range map[string]bool{
		"resourceHooks": false, "errorHooks": false, "transforms": false, "invokeTransforms": false,
		"secrets": true, "outputValues": true,
	} {
		if has[id] != want {
			t.Errorf("SupportsFeature(%s) = %t, want %t", id, has[id], want)
		}
	}

	// A program that checks the features skips hooks; one that does not is
	// refused.
	var calls hookCalls
	hook := cbs.hook(calls.fn(nil, nil))
	if has["resourceHooks"] {
		t.Fatal("a program would register hooks against an old engine")
	}
	_, err = p.mon.RegisterResourceHook(p.ctx(), &pulumirpc.RegisterResourceHookRequest{Name: "h", Callback: hook})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("RegisterResourceHook: got %v, want Unimplemented", err)
	}
	_, err = p.mon.RegisterStackTransform(p.ctx(), hook)
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("RegisterStackTransform: got %v, want Unimplemented", err)
	}
	// Fields an old engine does not know are ignored.
	p.custom("a", map[string]any{"x": 1.0}, func(r *pulumirpc.RegisterResourceRequest) {
		r.Hooks = &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"h"}}
		r.Transforms = []*pulumirpc.Callback{hook}
	})
	if err := p.signal(); status.Code(err) != codes.Unimplemented {
		t.Fatalf("SignalAndWaitForShutdown: got %v, want Unimplemented", err)
	}
	res, err := e.Finish(t.Context())
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if res.Err != nil {
		t.Fatalf("deployment failed: %v", res.Err)
	}
	if n := len(calls.all()); n != 0 {
		t.Fatalf("hook called %d times by an old engine", n)
	}
	if got := res.State.Get(e.URN("", thingType, "a")); got == nil || got.Hooks != nil {
		t.Fatalf("state: got %v, want the resource without hooks", got)
	}
	if n := len(e.Events(KindCallback)); n != 0 {
		t.Fatalf("got %d transform calls, want none", n)
	}
}

func TestScenario03_SupportsFeatureUnknownID(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	tests := []struct {
		id   string
		want bool
	}{
		{"noSuchFeature", false},
		{"", false},
		{"TRANSFORMS", false},
		{"stateMigrations", false},
		{"transforms", true},
		{"sendsOptionsToHooks", true},
	}
	for _, tt := range tests {
		r, err := p.mon.SupportsFeature(p.ctx(), &pulumirpc.SupportsFeatureRequest{Id: tt.id})
		if err != nil {
			t.Fatalf("SupportsFeature(%q): %v", tt.id, err)
		}
		if r.GetHasSupport() != tt.want {
			t.Errorf("SupportsFeature(%q) = %t, want %t", tt.id, r.GetHasSupport(), tt.want)
		}
	}
}

func TestScenario36_StateMigrations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     []Option
		wantCode codes.Code
		wantMsg  string
	}{
		{
			name: "3.260", opts: []Option{EngineVersion(engine3_260)},
			wantCode: codes.FailedPrecondition, wantMsg: "state migrations are not supported by this deployment",
		},
		// 3.274.1 accepts them, and runs none for a resource with no prior
		// state.
		{name: "3.274.1", wantCode: codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, tt.opts...)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var called atomic.Bool
			mig := cbs.add(func(_ context.Context, _ []byte) ([]byte, error) {
				called.Store(true)
				return nil, nil
			})
			_, err := p.register(res{typ: thingType, name: "a", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
				r.StateMigrations = []*pulumirpc.Callback{mig}
			}})
			if status.Code(err) != tt.wantCode || errMessage(err) != tt.wantMsg {
				t.Fatalf("got %v, want code %v %q", err, tt.wantCode, tt.wantMsg)
			}
			p.finish()
			if called.Load() {
				t.Fatal("a state migration ran")
			}
		})
	}
}
