package monitortest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// A test of code that registers a stack transform: the fake plays a current
// engine that supports transforms, and the test checks what was registered.
// In a test, pass its *testing.T to Serve; exampleT stands in for it here.
func Example() {
	t := &exampleT{}
	defer t.finish()
	ctx := context.Background()

	fake := &monitortest.Fake{
		DeploymentInfo: monitortest.CurrentEngine(monitor.Transforms),
		RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error {
			return nil // accepted
		},
	}
	mon := monitortest.Serve(t, fake)

	srv, err := callbacks.Listen()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	cb, err := transforms.RegisterStack(ctx, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		return a.Result(), nil
	})
	if err != nil {
		panic(err)
	}

	for _, c := range fake.Calls() {
		fmt.Println(c.Method)
	}
	registered := monitortest.Requests[*pulumirpc.Callback](fake, "RegisterStackTransform")
	fmt.Println("the engine got the callback:", registered[0].GetToken() == cb.GetToken())
	err = mon.Require(ctx, monitor.ResourceHooks)
	fmt.Println("resource hooks missing:", errors.Is(err, monitor.ErrMissingFeature))
	// Output:
	// GetDeploymentInfo
	// RegisterStackTransform
	// the engine got the callback: true
	// resource hooks missing: true
}

// exampleT is the part of a *testing.T that Serve uses.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()          {}
func (t *exampleT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// finish runs the cleanups, last registered first, as a test's end does.
func (t *exampleT) finish() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
