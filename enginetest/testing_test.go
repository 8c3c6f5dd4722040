package enginetest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// A program run with Run finds the engine in its environment, and the
// environment is as it was afterwards.
func TestRunSetsTheEnvironmentForTheProgram(t *testing.T) {
	t.Setenv("PULUMI_MONITOR", "before")
	os.Unsetenv("PULUMI_MONITOR")
	t.Setenv("PULUMI_PROJECT", "outer")

	eng := New(t, WithProject("inner"), WithStack("dev"))
	var seen string
	res := eng.Run(t, func() error {
		seen = os.Getenv("PULUMI_PROJECT")
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", nil, &r)
		})
	})
	if res.ProgramErr != nil || res.Err != nil {
		t.Fatalf("program error %v, deployment error %v", res.ProgramErr, res.Err)
	}
	if seen != "inner" {
		t.Errorf("the program saw PULUMI_PROJECT=%q, want %q", seen, "inner")
	}
	if res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing")) == nil {
		t.Error("the resource is not in the state")
	}
	if got := os.Getenv("PULUMI_PROJECT"); got != "outer" {
		t.Errorf("after Run PULUMI_PROJECT=%q, want %q", got, "outer")
	}
	if v, set := os.LookupEnv("PULUMI_MONITOR"); set {
		t.Errorf("after Run PULUMI_MONITOR=%q, but it was unset before", v)
	}
}

// A failed program never signals; Run ends the deployment itself and
// returns the program's error with the result.
func TestRunAfterAFailedProgram(t *testing.T) {
	eng := New(t)
	boom := errors.New("boom")
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			var r pulumi.CustomResourceState
			if err := ctx.RegisterResource("test:index:Thing", "thing", nil, &r); err != nil {
				return err
			}
			return boom
		})
	})
	if !errors.Is(res.ProgramErr, boom) {
		t.Errorf("ProgramErr = %v, want %v", res.ProgramErr, boom)
	}
	if res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing")) == nil {
		t.Error("the resource registered before the failure is not in the state")
	}
}

func TestRunFuncErrors(t *testing.T) {
	eng := New(t)
	_, err := eng.RunFunc(t.Context(), nil)
	if want := "enginetest: RunFunc: nil program"; err == nil || err.Error() != want {
		t.Errorf("RunFunc(nil) = %v, want %q", err, want)
	}

	// A program that ends while the deployment still has work to do (the
	// delete of a resource it no longer declares, held until the test
	// ends), with a context that has ended: the wait gives up with the
	// context's error, joined with nothing.
	first := newProgram(t, startEngine(t))
	first.custom("gone", nil)
	prior := first.finish().State
	release := make(chan struct{})
	eng2 := New(t, WithoutShutdownSignal(), WithState(prior),
		WithProvider(&FakeProvider{
			OnDelete: func(context.Context, *DeleteRequest) error { <-release; return nil },
		}))
	t.Cleanup(func() { close(release) }) // before New's cleanup closes the engine
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = eng2.RunFunc(ctx, func() error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("RunFunc with an ended context = %v, want %v", err, context.Canceled)
	}
}

// New closes the engine when the test ends.
func TestNewClosesTheEngine(t *testing.T) {
	var eng *Engine
	t.Run("inner", func(t *testing.T) { eng = New(t) })
	_, err := eng.Wait(context.Background())
	if err == nil {
		t.Error("Wait after the test ended succeeded: the engine should be closed")
	}
}
