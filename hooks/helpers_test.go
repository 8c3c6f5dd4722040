package hooks_test

import (
	"context"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.uber.org/goleak"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
)

func TestMain(m *testing.M) {
	// The SDK's property marshalling links glog, whose flush daemon runs
	// for the life of the process.
	leakcheck.Main(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

// newServer starts a real callback server on loopback, closed with the test.
// allFeatures is what a current engine advertises, minus STATE_MIGRATIONS.
var allFeatures = []pulumirpc.ResourceMonitorFeature{
	monitor.Transforms, monitor.InvokeTransforms, monitor.ResourceHooks, monitor.ErrorHooks,
	monitor.SendsOptionsToHooks, pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_BYTE_STRING,
}

// fakeEngine is a current engine with the given features that accepts every
// resource hook, error hook and stack transform; tests change its fields.
func fakeEngine(features ...monitor.Feature) *monitortest.Fake {
	return &monitortest.Fake{
		DeploymentInfo:         monitortest.CurrentEngine(features...),
		RegisterResourceHook:   func(context.Context, *pulumirpc.RegisterResourceHookRequest) error { return nil },
		RegisterErrorHook:      func(context.Context, *pulumirpc.RegisterErrorHookRequest) error { return nil },
		RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
	}
}

// recorded returns the registrations f has received.
func recorded(f *monitortest.Fake) (hooks []*pulumirpc.RegisterResourceHookRequest, errHooks []*pulumirpc.RegisterErrorHookRequest, transforms []*pulumirpc.Callback) {
	return monitortest.Requests[*pulumirpc.RegisterResourceHookRequest](f, "RegisterResourceHook"),
		monitortest.Requests[*pulumirpc.RegisterErrorHookRequest](f, "RegisterErrorHook"),
		monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackTransform")
}

// nameHeldBy returns what holds name in mon's deployment's hook name space:
// the *hooks.Hook or *hooks.ErrorHook registered under it.
func nameHeldBy(mon *monitor.Monitor, name string) (any, bool) {
	return hooks.NameHeldBy(mon, name)
}
