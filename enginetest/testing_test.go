package enginetest_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/enginetest"
)

// A program run with Run finds the engine in its environment, and the
// environment is as it was afterwards.
func TestRunSetsTheEnvironmentForTheProgram(t *testing.T) {
	t.Setenv("PULUMI_MONITOR", "before")
	os.Unsetenv("PULUMI_MONITOR")
	t.Setenv("PULUMI_PROJECT", "outer")

	eng := enginetest.New(t, enginetest.WithProject("inner"), enginetest.WithStack("dev"))
	var seen string
	res := eng.Run(t, func() error {
		seen = os.Getenv("PULUMI_PROJECT")
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", nil, &r)
		})
	})
	require.NoError(t, res.ProgramErr)
	require.NoError(t, res.Err)
	assert.Equal(t, "inner", seen)
	assert.NotNil(t, res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing")))
	assert.Equal(t, "outer", os.Getenv("PULUMI_PROJECT"))
	_, set := os.LookupEnv("PULUMI_MONITOR")
	assert.False(t, set, "PULUMI_MONITOR was unset before Run")
}

// A failed program never signals; Run ends the deployment itself and
// returns the program's error with the result.
func TestRunAfterAFailedProgram(t *testing.T) {
	eng := enginetest.New(t)
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
	assert.ErrorIs(t, res.ProgramErr, boom)
	assert.NotNil(t, res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing")))
}

func TestRunFuncErrors(t *testing.T) {
	eng := enginetest.New(t)
	_, err := eng.RunFunc(t.Context(), nil)
	assert.EqualError(t, err, "enginetest: RunFunc: nil program")

	// A program that never signals, with a context that has ended: the
	// wait gives up with the context's error, joined with nothing.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	eng2 := enginetest.New(t, enginetest.WithoutShutdownSignal())
	_, err = eng2.RunFunc(ctx, func() error { return nil })
	assert.ErrorIs(t, err, context.Canceled)
}

// New closes the engine when the test ends.
func TestNewClosesTheEngine(t *testing.T) {
	var eng *enginetest.Engine
	t.Run("inner", func(t *testing.T) { eng = enginetest.New(t) })
	_, err := eng.Wait(context.Background())
	assert.Error(t, err, "the engine should be closed")
}
