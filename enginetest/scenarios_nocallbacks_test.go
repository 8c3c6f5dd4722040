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

// Under NoCallbacks the engine answers every registration but calls none of
// the callbacks: a transform does not change the inputs, a failing hook
// fails no step, and the registrations are still events.
func TestNoCallbacksAnswersAndCallsNothing(t *testing.T) {
	t.Parallel()
	for _, noCallbacks := range []bool{false, true} {
		t.Run(map[bool]string{false: "calls", true: "no-calls"}[noCallbacks], func(t *testing.T) {
			t.Parallel()
			var opts []Option
			if noCallbacks {
				opts = append(opts, NoCallbacks())
			}
			e := startEngine(t, opts...)
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var called atomic.Int32
			p.stackTransform(cbs.transform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				called.Add(1)
				return &pulumirpc.TransformResponse{Properties: mustStruct(t, map[string]any{"size": "large"})}, nil
			}))
			p.resourceHook("fail", cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				called.Add(1)
				return &pulumirpc.ResourceHookResponse{Error: "no"}, nil
			}), false, false)
			hooks := withHooks(&binding{AfterCreate: []string{"fail"}})
			resp := p.custom("thing", map[string]any{"size": "small"}, hooks)
			evs := p.e.Events(KindCallback, KindHook)
			if noCallbacks {
				_ = p.finish()
				if n := called.Load(); n != 0 {
					t.Errorf("the program's callbacks were called %d times", n)
				}
				if got := field(resp.GetObject(), "size").GetStringValue(); got != "small" {
					t.Errorf("size = %q, want the input, small", got)
				}
				for _, ev := range evs {
					if ev.Kind == KindCallback || ev.Detail != "not called (NoCallbacks)" {
						t.Errorf("event %v, want none but hooks not called", ev)
					}
				}
			} else if called.Load() == 0 {
				t.Errorf("without NoCallbacks no callback was called:\n%s", e.Trace())
			}
			regs := e.Events("RegisterStackTransform", "RegisterResourceHook")
			if len(regs) != 2 {
				t.Errorf("registration events: %v, want the stack transform's and the hook's", regs)
			}
		})
	}
}

// WithFeatures advertises exactly the features given, answers
// SupportsFeature by them and, without STATE_MIGRATIONS, refuses
// migrations.
func TestWithFeaturesIsExact(t *testing.T) {
	t.Parallel()
	hooks := pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS
	secrets := pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_SECRETS
	e := startEngine(t, WithFeatures(secrets, hooks))
	p := newProgram(t, e)
	info, err := p.mon.GetDeploymentInfo(p.ctx(), &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(info.GetSupportedFeatures())
	slices.Sort(got)
	want := []pulumirpc.ResourceMonitorFeature{secrets, hooks}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("features %v, want %v", got, want)
	}
	for id, on := range map[string]bool{"resourceHooks": true, "secrets": true, "transforms": false} {
		r, err := p.mon.SupportsFeature(p.ctx(), &pulumirpc.SupportsFeatureRequest{Id: id})
		if err != nil || r.GetHasSupport() != on {
			t.Errorf("SupportsFeature(%s) = %t, %v; want %t", id, r.GetHasSupport(), err, on)
		}
	}
	_, err = p.mon.RegisterStackTransform(p.ctx(), newCallbackServer(t).transform(nil))
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("RegisterStackTransform without the feature: %v, want Unimplemented", err)
	}
	_, err = p.register(res{typ: thingType, name: "m", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.StateMigrations = []*pulumirpc.Callback{{Target: "127.0.0.1:1", Token: "t"}}
	}})
	wantErrContains(t, err, "state migrations are not supported")
}
