package program_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// childEnv names the variable that makes the test binary a program: "sdk"
// runs a failing body with pulumi.Run, "program" with program.Run.
const childEnv = "PROGRAM_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "sdk":
		pulumi.Run(func(*pulumi.Context) error { return errors.New("boom") })
		os.Exit(0)
	case "program":
		program.Run(func(*pulumi.Context, *monitor.Monitor) error { return errors.New("boom") })
		os.Exit(0)
	}
	goleak.VerifyTestMain(m,
		// glog starts its flush daemon when the SDK is linked.
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		// The SDK never stops its own callbacks server.
		goleak.IgnoreAnyFunction("github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil.serveWithOptions.func1"),
		goleak.IgnoreAnyFunction("github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil.serveWithOptions.func2"),
	)
}

// failAsChild runs the test binary as a failing program of the given kind
// against a fresh engine and returns its exit status and the diagnostics
// the engine received.
func failAsChild(t *testing.T, kind string) (int, []enginetest.Diagnostic) {
	t.Helper()
	eng := enginetest.New(t, enginetest.WithProject("child"), enginetest.WithStack("dev"))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), eng.Env()...), childEnv+"="+kind)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the %s program did not fail: %s", kind, out)
	res, err := eng.Finish(t.Context())
	require.NoError(t, err)
	return exit.ExitCode(), res.Diagnostics
}

// Run fails the way pulumi.Run fails: the same message reaches the engine,
// and the process exits with the status that says it was reported.
func TestRunReportsAFailureAsPulumiRunDoes(t *testing.T) {
	sdkCode, sdkDiags := failAsChild(t, "sdk")
	code, diags := failAsChild(t, "program")

	assert.Equal(t, 32, sdkCode, "pulumi.Run's exit status")
	assert.Equal(t, sdkCode, code, "program.Run's exit status")
	var sdkErrors, ours []string
	for _, d := range sdkDiags {
		if d.Severity == enginetest.SeverityError {
			sdkErrors = append(sdkErrors, d.String())
		}
	}
	for _, d := range diags {
		if d.Severity == enginetest.SeverityError {
			ours = append(ours, d.String())
		}
	}
	require.Len(t, sdkErrors, 1, "pulumi.Run's diagnostics: %v", sdkDiags)
	assert.Contains(t, sdkErrors[0], "an unhandled error occurred: program failed: \n")
	assert.Contains(t, sdkErrors[0], "boom")
	assert.Equal(t, sdkErrors, ours)
}

// RunErr returns the body's error, and the server it started is gone.
func TestRunErrReturnsTheBodysError(t *testing.T) {
	eng := enginetest.New(t)
	boom := errors.New("boom")
	res := eng.Run(t, func() error {
		return program.RunErr(func(ctx *pulumi.Context, mon *monitor.Monitor) error {
			require.NotNil(t, mon)
			return boom
		})
	})
	assert.ErrorIs(t, res.ProgramErr, boom)
	for _, d := range res.Diagnostics {
		assert.NotContains(t, d.Message, "an unhandled error occurred", "RunErr reports nothing itself")
	}
}

// A body that succeeds gets its resources deployed, and RunErr returns only
// once the engine is done.
func TestRunErrDeploys(t *testing.T) {
	eng := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"))
	res := eng.Run(t, func() error {
		return program.RunErr(func(ctx *pulumi.Context, _ *monitor.Monitor) error {
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", pulumi.Map{"n": pulumi.Int(1)}, &r)
		})
	})
	require.NoError(t, res.ProgramErr)
	require.NoError(t, res.Err)
	assert.NotNil(t, res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing")), "%v", res.State.URNs())
}

// Outside `pulumi`, RunErr fails as pulumi.RunErr does, in its words, and
// starts nothing.
func TestRunErrOutsidePulumi(t *testing.T) {
	for _, v := range []string{"PULUMI_PROJECT", "PULUMI_STACK", "PULUMI_MONITOR", "PULUMI_ENGINE", "PULUMI_PLUGINS"} {
		t.Setenv(v, "")
	}
	called := false
	body := func(*pulumi.Context, *monitor.Monitor) error { called = true; return nil }
	sdkErr := pulumi.RunErr(func(*pulumi.Context) error { return nil })
	err := program.RunErr(body)
	require.Error(t, err)
	assert.Equal(t, sdkErr.Error(), err.Error())
	assert.False(t, called)

	t.Setenv("PULUMI_PROJECT", "p")
	t.Setenv("PULUMI_STACK", "s")
	err = program.RunErr(body)
	assert.EqualError(t, err, "missing resource monitor RPC address")
}

// Options that cannot work are refused before anything starts.
func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []program.Option
		want string
	}{
		{"zero shutdown timeout", []program.Option{program.ShutdownTimeout(0)}, "ShutdownTimeout(0s): must be positive"},
		{"negative shutdown timeout", []program.Option{program.ShutdownTimeout(-time.Second)}, "must be positive"},
		{"mocks", []program.Option{program.RunOptions(pulumi.WithMocks("p", "s", mocks{}))}, "WithMocks is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := enginetest.New(t)
			called := false
			res := eng.Run(t, func() error {
				return program.RunErr(func(*pulumi.Context, *monitor.Monitor) error { called = true; return nil }, tc.opts...)
			})
			require.Error(t, res.ProgramErr)
			assert.Contains(t, res.ProgramErr.Error(), tc.want)
			assert.False(t, called)
		})
	}
	err := program.RunErr(nil)
	assert.EqualError(t, err, "program: nil body")
}

// mocks is a pulumi.MockResourceMonitor that is never called.
type mocks struct{}

func (mocks) NewResource(pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	return "", nil, nil
}

func (mocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) { return nil, nil }

// withFarewell is a body that registers an after-delete hook, binds it to
// every custom resource, and declares the resources named in keep.
func withFarewell(calls *atomic.Int32, keep ...string) program.Func {
	return func(ctx *pulumi.Context, mon *monitor.Monitor) error {
		farewell, err := hooks.Register(ctx.Context(), mon, "farewell", func(context.Context, *hooks.Args) error {
			calls.Add(1)
			return nil
		})
		if err != nil {
			return err
		}
		_, err = hooks.Attach(ctx.Context(), mon, func(a *transforms.Args) bool { return a.Custom },
			&hooks.Binding{AfterDelete: []hooks.Ref{farewell}})
		if err != nil {
			return err
		}
		for _, name := range keep {
			var r pulumi.CustomResourceState
			if err := ctx.RegisterResource("test:index:Thing", name, nil, &r); err != nil {
				return err
			}
		}
		return nil
	}
}

// The engine runs delete hooks after the program has signalled that it is
// done; RunErr keeps the server serving until then, so the hook of a
// resource the program dropped runs, and succeeds.
func TestRunErrServesDeleteHooksAfterTheProgram(t *testing.T) {
	var calls atomic.Int32
	first := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"))
	res := first.Run(t, func() error { return program.RunErr(withFarewell(&calls, "kept", "dropped")) })
	require.NoError(t, res.ProgramErr)
	require.NoError(t, res.Err)
	require.Zero(t, calls.Load())

	second := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"), enginetest.WithState(res.State))
	res = second.Run(t, func() error { return program.RunErr(withFarewell(&calls, "kept")) })
	require.NoError(t, res.ProgramErr, second.Trace())
	require.NoError(t, res.Err, second.Trace())

	dropped := second.URN(second.StackURN(), "test:index:Thing", "dropped")
	assert.Nil(t, res.State.Get(dropped))
	signal, hook := 0, 0
	for _, ev := range second.Record() {
		switch {
		case ev.Kind == enginetest.KindSignalAndWaitForShutdown && signal == 0:
			signal = ev.Seq
		case ev.Kind == enginetest.KindHook:
			assert.Equal(t, dropped, ev.URN)
			assert.Equal(t, "after_delete", ev.Point)
			assert.Empty(t, ev.Err, "the hook failed: %s", ev)
			hook = ev.Seq
		}
	}
	assert.NotZero(t, hook, "the delete hook was not called:\n%s", second.Trace())
	assert.Greater(t, hook, signal, "the delete hook ran before the program's signal")
	assert.Equal(t, int32(1), calls.Load())
}
