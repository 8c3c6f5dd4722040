package program_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m,
		// glog starts its flush daemon when the SDK is linked.
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
	)
}

// tagged is a body that tags every custom resource through a stack
// transform and creates one.
func tagged(ctx *pulumi.Context) error {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return err
	}
	_, err = transforms.RegisterStack(ctx.Context(), mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		if !a.Custom {
			return nil, nil
		}
		return a.WithProperties(func(p resource.PropertyMap) { p["team"] = resource.NewProperty("infra") }), nil
	})
	if err != nil {
		return err
	}
	var r pulumi.CustomResourceState
	return ctx.RegisterResource("test:index:Thing", "thing", pulumi.Map{"n": pulumi.Int(1)}, &r)
}

// A program under pulumi.RunErr gets the deployment's monitor, and its
// callbacks are called.
func TestMonitorDeploys(t *testing.T) {
	eng := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"))
	res := eng.Run(t, func() error { return pulumi.RunErr(tagged) })
	require.NoError(t, res.ProgramErr)
	require.NoError(t, res.Err)
	thing := res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing"))
	require.NotNil(t, thing, "%v", res.State.URNs())
	assert.Equal(t, "infra", thing.Inputs.GetFields()["team"].GetStringValue())
}

// Every *pulumi.Context of one deployment gets the same Monitor, so a
// component library can ask for it itself; options configure the server on
// the first call only.
func TestMonitorIsOnePerDeployment(t *testing.T) {
	eng := enginetest.New(t)
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			first, err := program.Monitor(ctx, callbacks.KindTimeout(callbacks.KindResourceHook, time.Minute))
			if err != nil {
				return err
			}
			again, err := program.Monitor(ctx)
			if err != nil {
				return err
			}
			copied, err := program.Monitor(ctx.WithValue("k", "v"))
			if err != nil {
				return err
			}
			if again != first || copied != first {
				return errors.New("a second call made a second monitor")
			}
			_, err = program.Monitor(ctx, callbacks.KindTimeout(callbacks.KindResourceHook, time.Second))
			if !errors.Is(err, program.ErrStarted) || !errors.Is(err, callbacks.ErrInvalidOption) {
				return fmt.Errorf("options after the start were not refused with ErrStarted: %v", err)
			}
			return nil
		})
	})
	require.NoError(t, res.ProgramErr)
}

// An invalid option on the deployment's first call is an invalid option,
// not a server already started: code that retries without options on
// ErrStarted does not drop it in silence.
func TestMonitorInvalidOptionIsNotStarted(t *testing.T) {
	eng := enginetest.New(t)
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := program.Monitor(ctx, callbacks.KindTimeout(callbacks.KindResourceHook, 0))
			if !errors.Is(err, callbacks.ErrInvalidOption) || errors.Is(err, program.ErrStarted) {
				return fmt.Errorf("want an invalid option, not ErrStarted: %v", err)
			}
			_, err = program.Monitor(ctx)
			return err
		})
	})
	require.NoError(t, res.ProgramErr)
}

// A context with mocks has no engine to call callbacks back: Monitor says
// so instead of starting a server nobody calls.
func TestMonitorWithMocks(t *testing.T) {
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := program.Monitor(ctx)
		return err
	}, pulumi.WithMocks("p", "s", mocks{}))
	require.ErrorIs(t, err, program.ErrNoEngine)
	require.ErrorContains(t, err, "test with github.com/langhost/callbacks/enginetest", "the error must say how to test callbacks")
	_, err = program.Monitor(nil)
	require.Error(t, err)
}

// mocks is a pulumi.MockResourceMonitor that is never called.
type mocks struct{}

func (mocks) NewResource(pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	return "", nil, nil
}

func (mocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) { return nil, nil }

// withFarewell is a body that registers an after-delete hook and declares
// the resources named in keep, each bound to it. It hands out the monitor
// it got.
func withFarewell(calls *atomic.Int32, got **monitor.Monitor, keep ...string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		*got = mon
		farewell, err := hooks.Register(ctx.Context(), mon, "farewell", func(context.Context, *hooks.Args) error {
			calls.Add(1)
			return nil
		})
		if err != nil {
			return err
		}
		for _, name := range keep {
			var r pulumi.CustomResourceState
			err := ctx.RegisterResource("test:index:Thing", name, nil, &r,
				program.Hooks(&transforms.HooksBinding{AfterDelete: []transforms.HookRef{farewell}}))
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// deleteHookAfterTheProgram runs two deployments with run: the first
// creates two resources, the second drops one. The dropped resource's
// after-delete hook, which the engine runs after the program, must run and
// succeed; then, once the engine is gone, the deployment's server must shut
// itself down.
func deleteHookAfterTheProgram(t *testing.T, run func(eng *enginetest.Engine, body pulumi.RunFunc) *enginetest.Result) {
	var calls atomic.Int32
	var mon *monitor.Monitor
	first := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"))
	res := run(first, withFarewell(&calls, &mon, "kept", "dropped"))
	require.NoError(t, res.Err, first.Trace())
	require.Zero(t, calls.Load())

	second := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithStack("s"), enginetest.WithState(res.State))
	res = run(second, withFarewell(&calls, &mon, "kept"))
	require.NoError(t, res.Err, second.Trace())

	dropped := second.URN(second.StackURN(), "test:index:Thing", "dropped")
	assert.Nil(t, res.State.Get(dropped))
	hooked := 0
	for _, ev := range second.Events(enginetest.KindHook) {
		assert.Equal(t, dropped, ev.URN)
		assert.Equal(t, "after_delete", ev.Point)
		assert.Empty(t, ev.Err, "the hook failed: %s", ev)
		hooked++
	}
	assert.Equal(t, 1, hooked, "the delete hook was not called:\n%s", second.Trace())
	assert.Equal(t, int32(1), calls.Load())

	require.NoError(t, second.Close()) // the engine goes away
	select {
	case <-mon.Done():
	case <-t.Context().Done():
		t.Fatal("the monitor never saw the end of the deployment")
	}
	waitRefused(t, mon.Server().Target())
}

// waitRefused waits until nothing listens at addr any more.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	for {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		_ = conn.Close()
		select {
		case <-t.Context().Done():
			t.Fatalf("the callback server at %s still listens after the deployment", addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Under `pulumi up`, pulumi.Run signals the engine after the body and waits
// for it to run the remaining steps, delete hooks included.
func TestDeleteHooksAfterTheProgram(t *testing.T) {
	deleteHookAfterTheProgram(t, func(eng *enginetest.Engine, body pulumi.RunFunc) *enginetest.Result {
		res := eng.Run(t, func() error { return pulumi.RunErr(body) })
		require.NoError(t, res.ProgramErr)
		return res
	})
}

// An Automation API inline program runs inside pulumi.RunWithContext, with
// no environment and no signal to the engine: the engine runs the delete
// steps after the program has returned, and the server must still be there.
func TestDeleteHooksAfterAnInlineProgram(t *testing.T) {
	deleteHookAfterTheProgram(t, func(eng *enginetest.Engine, body pulumi.RunFunc) *enginetest.Result {
		ctx, err := pulumi.NewContext(t.Context(), pulumi.RunInfo{
			Project: eng.Project(), Stack: eng.Stack(),
			MonitorAddr: eng.MonitorAddr(), EngineAddr: eng.EngineAddr(),
		})
		require.NoError(t, err)
		require.NoError(t, pulumi.RunWithContext(ctx, body))
		require.NoError(t, ctx.Close())
		res, err := eng.Finish(t.Context()) // the language host's Run returns
		require.NoError(t, err)
		return res
	})
}

// Server options can come from the stack's configuration: the body reads it
// before its first Monitor call. Here the config bounds resource hooks to
// 50ms, and a hook that waits for its context ends with the deadline.
func TestServerOptionsFromStackConfig(t *testing.T) {
	eng := enginetest.New(t, enginetest.WithProject("p"), enginetest.WithConfig(map[string]string{"p:hookTimeout": "50ms"}))
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			v, _ := ctx.GetConfig("p:hookTimeout")
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			mon, err := program.Monitor(ctx, callbacks.KindTimeout(callbacks.KindResourceHook, d))
			if err != nil {
				return err
			}
			wait, err := hooks.Register(ctx.Context(), mon, "wait", func(ctx context.Context, _ *hooks.Args) error {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Minute): // no deadline came: the test fails below
					return nil
				}
			})
			if err != nil {
				return err
			}
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", nil, &r,
				program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{wait}}))
		})
	})
	require.Error(t, res.Err, "the hook's deadline from the config did not apply")
	assert.Contains(t, res.Err.Error(), "deadline", eng.Trace())
}
