package transforms_test

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
)

// spoil changes everything of a resource it can reach, then fails as
// fail says: by panicking, or by blocking until the test ends, whatever
// its context says.
func spoil(t *testing.T, fail string) transforms.Func {
	return func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		a.Name, a.Type = "renamed", "other:index:Thing"
		a.Properties()["seen"] = resource.NewProperty("spoiled")
		delete(a.Properties(), "acl")
		a.Options.Protect = new(true)
		a.Options.DependsOn = append(a.Options.DependsOn, "urn:pulumi:dev::shop::x:y:Z::w")
		a.Options.Hooks = nil
		if fail == "panic" {
			panic("spoiled")
		}
		<-t.Context().Done()
		return a.Result(), nil
	}
}

// echo sends back all of the resource as it sees it.
func echo(_ context.Context, a *transforms.Args) (*transforms.Result, error) { return a.Result(), nil }

// A binding that fails open and panics or overruns changes nothing: the
// bindings after it see the resource exactly as they would have without it,
// every option and property included, whether the properties were still as
// the engine sent them or a binding before it had changed them, and the
// deployment gets a warning naming it.
func TestAttachFailOpen(t *testing.T) {
	t.Parallel()
	full := request(fullOptions())
	full.Parent = teamURN
	for _, before := range []string{"unread", "changed"} {
		// bindings attaches the bindings that run before the failing one.
		bindings := func(t *testing.T, mon *monitor.Monitor) {
			if before == "changed" {
				require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), label("before")))
			}
		}
		fake, mon, _ := attachEngine(t)
		bindings(t, mon)
		require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), echo))
		var want pulumirpc.TransformResponse
		require.NoError(t, wiretest.Call(t, theTransform(t, fake), full, &want))
		if before == "changed" {
			require.Equal(t, "before", seen(&want))
		}

		for _, fail := range []string{"panic", "overrun"} {
			t.Run(before+"/"+fail, func(t *testing.T) {
				t.Parallel()
				fake, mon, rep := attachEngine(t)
				bindings(t, mon)
				opts := []callbacks.RegisterOption{callbacks.Name("flaky"), callbacks.FailOpen()}
				if fail == "overrun" {
					opts = append(opts, callbacks.Timeout(50*time.Millisecond))
				}
				require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), spoil(t, fail), opts...))
				require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), echo))
				var got pulumirpc.TransformResponse
				require.NoError(t, wiretest.Call(t, theTransform(t, fake), full, &got))
				assert.True(t, proto.Equal(&want, &got), "the failed binding changed the resource:\nwant %v\ngot  %v", &want, &got)

				msgs := rep.all()
				require.Len(t, msgs, 1, "one warning")
				assert.Contains(t, msgs[0], "urn:pulumi:dev::shop::teams:index:Team$aws:s3/bucket:Bucket::b: ", "under the resource")
				assert.Contains(t, msgs[0], `the binding "flaky" attached at github.com/langhost/callbacks/transforms/attachopts_test.go:`)
				assert.Contains(t, msgs[0], "it fails open, so it changed nothing")
				if fail == "panic" {
					assert.Contains(t, msgs[0], "panicked: spoiled")
				} else {
					assert.Contains(t, msgs[0], "did not answer within 50ms")
				}
			})
		}
	}
}

// A binding's own timeout fails the resource's registration when it
// overruns, even if it ignores its context, and its panic is the call's
// panic, whether or not it runs on a goroutine of its own. The panicking
// binding's timeout is long: a short one could pass, on a busy machine,
// before the panic is recovered and reported, and the call would then end
// as an overrun.
func TestAttachTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fail    string
		timeout time.Duration
		code    codes.Code
		msg     string
	}{
		{"overrun", 50 * time.Millisecond, codes.DeadlineExceeded, `the binding "slow" attached at github.com/langhost/callbacks/transforms/attachopts_test.go:`},
		{"panic", time.Minute, codes.Internal, "spoiled"},
	}
	for _, tt := range tests {
		t.Run(tt.fail, func(t *testing.T) {
			t.Parallel()
			fake, mon, _ := attachEngine(t)
			require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), spoil(t, tt.fail),
				callbacks.Name("slow"), callbacks.Timeout(tt.timeout)))
			var resp pulumirpc.TransformResponse
			err := wiretest.Call(t, theTransform(t, fake), request(fullOptions()), &resp)
			require.Error(t, err)
			assert.Equal(t, tt.code, status.Code(err), "%v", err)
			assert.Contains(t, err.Error(), tt.msg)
			if tt.fail == "overrun" {
				assert.Contains(t, err.Error(), "did not answer within 50ms")
			}
		})
	}
}

// A binding's timeout is a deadline on its context: one that heeds it ends
// as the function chooses.
func TestAttachTimeoutIsOnTheContext(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil),
		func(ctx context.Context, a *transforms.Args) (*transforms.Result, error) {
			deadline, ok := ctx.Deadline()
			if !ok || time.Until(deadline) > time.Minute {
				return nil, status.Errorf(codes.FailedPrecondition, "no deadline of the binding's own: %v %v", deadline, ok)
			}
			return label("heeded")(ctx, a)
		}, callbacks.Timeout(time.Minute)))
	resp := engineCall(t, theTransform(t, fake), petType, "p", teamURN, nil)
	assert.Equal(t, "heeded", seen(resp))
}

// Options that cannot apply to one binding, or have invalid values, are
// refused before anything is registered.
func TestAttachRefusesOptions(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	for _, opt := range []callbacks.RegisterOption{callbacks.AcceptsByteStrings(false), callbacks.Timeout(-time.Second)} {
		err := transforms.Attach(t.Context(), mon, transforms.Matching(nil), echo, opt)
		require.ErrorIs(t, err, callbacks.ErrInvalidOption)
		assert.Equal(t, codes.InvalidArgument, status.Code(err))
	}
	assert.Zero(t, fake.Count("RegisterStackTransform"), "nothing registered")
}

// A binding that must copy the resource (it fails open) after another made
// it into something that does not encode fails the call as a broken result
// would, and does not run.
func TestAttachCopyOfABrokenResult(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil),
		func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.WithProperties(func(p resource.PropertyMap) { p["length"] = resource.PropertyValue{V: 3} }), nil
		}))
	ran := false
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil),
		func(context.Context, *transforms.Args) (*transforms.Result, error) { ran = true; return nil, nil },
		callbacks.FailOpen()))
	var resp pulumirpc.TransformResponse
	err := wiretest.Call(t, theTransform(t, fake), request(fullOptions()), &resp)
	require.Error(t, err)
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Contains(t, err.Error(), "copying the resource for the binding attached at")
	assert.Contains(t, err.Error(), "length")
	assert.False(t, ran)
}

// A binding with a timeout that ends its goroutine with runtime.Goexit
// (t.FailNow in a test) fails the call as such at once, as a registered
// function does: it is no overrun. The timeout is long, so that only the
// Goexit can end the call.
func TestAttachGoexitIsNoTimeout(t *testing.T) {
	t.Parallel()
	fake, mon, _ := attachEngine(t)
	require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil),
		func(context.Context, *transforms.Args) (*transforms.Result, error) {
			runtime.Goexit()
			return nil, nil
		}, callbacks.Name("quits"), callbacks.Timeout(time.Minute)))
	var resp pulumirpc.TransformResponse
	err := wiretest.Call(t, theTransform(t, fake), request(fullOptions()), &resp)
	require.Error(t, err)
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Contains(t, err.Error(), `the binding "quits" attached at`)
	assert.Contains(t, err.Error(), "exited its goroutine (runtime.Goexit) without answering")
	assert.NotContains(t, err.Error(), "did not answer within")
}

// The stack logged for a binding's panic goes on from the user's line that
// panicked, whatever the binding's options: not from a recovery and panic
// again in this package.
func TestAttachPanicStackIsTheUsers(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]callbacks.RegisterOption{
		"plain": nil, "timeout": {callbacks.Timeout(time.Hour)}, "fail open": {callbacks.FailOpen()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var logged syncLog
			fake := &monitortest.Fake{
				DeploymentInfo: func(context.Context) (*pulumirpc.DeploymentInfo, error) {
					return &pulumirpc.DeploymentInfo{Project: "shop", Stack: "dev", SupportedFeatures: []pulumirpc.ResourceMonitorFeature{monitor.Transforms}}, nil
				},
				RegisterStackTransform: func(context.Context, *pulumirpc.Callback) error { return nil },
			}
			mon := monitortest.Serve(t, fake, callbacks.WithReporter(&reports{}),
				callbacks.WithLogger(slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			require.NoError(t, transforms.Attach(t.Context(), mon, transforms.Matching(nil), spoil(t, "panic"), opts...))
			var resp pulumirpc.TransformResponse
			_ = wiretest.Call(t, theTransform(t, fake), request(fullOptions()), &resp)
			stack := logged.String()
			at := strings.Index(stack, "panic(")
			require.NotEqual(t, -1, at, "no stack logged:\n%s", stack)
			// The first frame after the panic is the function that panicked.
			frame := strings.SplitN(stack[at:], `\n`, 5)
			require.Len(t, frame, 5, stack)
			assert.Contains(t, frame[3], "transforms/attachopts_test.go:", "the stack does not go on from the user's line:\n%s", strings.Join(frame, "\n"))
		})
	}
}

// syncLog is a log buffer written by the goroutines of calls.
type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
