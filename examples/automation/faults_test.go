package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// hangBound turns a wait that would never end into a failure; it is never a
// verdict about speed.
const hangBound = 3 * time.Minute

// lockedBuffer is a log both a logger and the test use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// blocker is the hook of a deployment that a test breaks: it says when it
// has begun, then waits for its context (honour) or for release only.
type blocker struct {
	honour  bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBlocker(honour bool) *blocker {
	return &blocker{honour: honour, entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (b *blocker) block(ctx context.Context) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	if b.honour {
		select {
		case <-ctx.Done():
		case <-b.release:
		}
		return
	}
	<-b.release
}

func (b *blocker) free() { b.once.Do(func() { close(b.release) }) }

// blockingInline is an inline program whose pet has a before-create (and a
// before-delete) hook that blocks; its callback server logs to logs.
func blockingInline(b *blocker, logs *lockedBuffer) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		mon, err := program.Monitor(ctx, callbacks.WithLogger(logger))
		if err != nil {
			return err
		}
		block, err := hooks.Register(ctx.Context(), mon, "block", func(ctx context.Context, _ *hooks.Args) error {
			b.block(ctx)
			return nil
		})
		if err != nil {
			return err
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
			program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{block}, BeforeDelete: []transforms.HookRef{block}}))
	}
}

// sdkBlockingInline is blockingInline on the Go SDK's own callbacks, whose
// hooks get no context.
func sdkBlockingInline(b *blocker) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		block, err := ctx.RegisterResourceHook("block", func(*pulumi.ResourceHookArgs) error {
			b.block(context.Background())
			return nil
		}, nil)
		if err != nil {
			return err
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{BeforeCreate: []*pulumi.ResourceHook{block}}))
	}
}

// killCLI kills (SIGKILL) every `pulumi` process this process started.
func killCLI(t *testing.T) {
	t.Helper()
	n := 0
	for _, pid := range children(t, "pulumi") {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	require.Positive(t, n, "no pulumi process to kill")
}

// children returns the processes whose parent is this process and whose
// command is comm.
func children(t *testing.T, comm string) []int {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(s[closing+1:]) // state, ppid, ...
		if s[open+1:closing] == comm && len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// endOrphanProviders kills, when the test ends, the stand-in providers that
// a killed or interrupted CLI left running (until their five-minute health
// check of the engine would end them): the processes whose executable is
// the one this test binary built.
func endOrphanProviders(t *testing.T, provider string) {
	t.Cleanup(func() {
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			if exe, err := os.Readlink(filepath.Join("/proc", p.Name(), "exe")); err == nil && exe == provider {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// wait waits for ch within the hang bound.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangBound):
		t.Fatalf("gave up waiting after %v: %s", hangBound, what)
		panic("unreachable")
	}
}

// stillRunning is what the module logs about a function that outlives its
// deployment.
const stillRunning = "still running after its server stopped"

// A service's deployment dies while a hook blocks, three ways: its CLI is
// killed, its Up context is cancelled (auto interrupts the CLI), or the
// hook ignores its context and Up is cancelled. Each time the module is
// back to its baseline at once — no listener, and no goroutine but the
// user function that has not returned — that function is named once in
// the server's log (kind, name and resource), and the next deployment in
// the process gets its own callbacks. The Go SDK's callbacks, the same
// way, keep a listener per dead deployment.
func TestDeploymentThatDiesLeavesNothing(t *testing.T) {
	hermetic(t, false)
	endOrphanProviders(t, builds.Provider(t, "github.com/langhost/callbacks/integration/providers/random", "random")+"/pulumi-resource-random")
	deployMany(t, "warm", 1, func(stack string) pulumi.RunFunc { return inline(&tally{stack: stack}) })
	// A subtest runs on a goroutine of its own, beside its parent's.
	start := settle(t, measure(t))
	start.goroutines++

	ways := []struct {
		name   string
		honour bool
		kill   func(t *testing.T, cancel context.CancelFunc)
	}{
		{"CLI killed", true, func(t *testing.T, _ context.CancelFunc) { killCLI(t) }},
		{"Up cancelled", true, func(_ *testing.T, cancel context.CancelFunc) { cancel() }},
		{"hook ignores its context", false, func(_ *testing.T, cancel context.CancelFunc) { cancel() }},
	}
	for i, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			base := settle(t, start) // the previous deployment has ended
			b := newBlocker(way.honour)
			t.Cleanup(b.free)
			var logs lockedBuffer
			err := dieDuringHook(t, fmt.Sprintf("dies-%d", i), blockingInline(b, &logs), b, way.kill)
			require.Error(t, err, "the deployment must fail")

			want := base
			if !way.honour {
				want.goroutines++ // the function that never returns
			}
			u := settle(t, want)
			t.Logf("after the deployment died: %v (baseline %v); listening at %v", u, base, listening(t))
			assert.Equal(t, base.listeners, u.listeners, "listening sockets left behind")
			if !assert.LessOrEqual(t, u.goroutines, want.goroutines, "goroutines left behind") {
				var stacks strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
				t.Logf("goroutines:\n%s", &stacks)
			}
			if !way.honour {
				waitLogged(t, &logs, stillRunning)
				lines := logged(&logs, stillRunning)
				require.Len(t, lines, 1, "%s", &logs)
				for _, s := range []string{`resource hook \"block\"`, "urn:pulumi:dies-" + strconv.Itoa(i) + "::faults::" + petType + "::pet"} {
					assert.Contains(t, lines[0], s)
				}
				b.free()
				u = settle(t, base)
				assert.LessOrEqual(t, u.goroutines, base.goroutines, "the function's goroutine, once it returned")
			}

			// The next deployment in the process gets its own callbacks.
			next := &tally{}
			deployMany(t, fmt.Sprintf("after%d", i), 1, func(stack string) pulumi.RunFunc {
				next.stack = stack
				return inline(next)
			})
			assert.Equal(t, int32(1), next.hooks.Load(), "the next deployment's hook")
			assert.Equal(t, int32(1), next.transforms.Load(), "the next deployment's transform")
			assert.Zero(t, next.strays.Load())
		})
	}

	t.Run("Go SDK", func(t *testing.T) {
		before := measure(t)
		for i, way := range ways {
			b := newBlocker(way.honour)
			t.Cleanup(b.free)
			err := dieDuringHook(t, fmt.Sprintf("sdk-dies-%d", i), sdkBlockingInline(b), b, way.kill)
			require.Error(t, err)
			b.free()
		}
		after := measure(t)
		t.Logf("the Go SDK's callbacks: before %v; after %d deployments died %v", before, len(ways), after)
		assert.GreaterOrEqual(t, after.listeners-before.listeners, len(ways),
			"the Go SDK's callbacks no longer keep a listener per dead deployment: the measure may be blind")
	})
}

// dieDuringHook runs an inline deployment of prog on a new stack, waits for
// its hook to block, kills it, and returns Up's error.
func dieDuringHook(t *testing.T, stackName string, prog pulumi.RunFunc, b *blocker, kill func(*testing.T, context.CancelFunc)) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stack, err := auto.UpsertStackInlineSource(ctx, stackName, "faults", prog)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := stack.Up(ctx, optup.SuppressProgress())
		errc <- err
	}()
	select {
	case <-b.entered:
	case err := <-errc:
		t.Fatalf("the deployment ended before its hook blocked: %v", err)
	case <-time.After(hangBound):
		t.Fatalf("the hook did not block within %v", hangBound)
	}
	kill(t, cancel)
	return wait(t, errc, "Up to return after the deployment was killed")
}

// logged returns the lines of logs that contain s.
func logged(logs *lockedBuffer, s string) []string {
	var lines []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, s) {
			lines = append(lines, line)
		}
	}
	return lines
}

// waitLogged waits, within the hang bound, until logs has a line with s.
func waitLogged(t *testing.T, logs *lockedBuffer, s string) {
	t.Helper()
	limit := time.After(hangBound)
	for len(logged(logs, s)) == 0 {
		select {
		case <-limit:
			t.Fatalf("nothing logged %q within %v:\n%s", s, hangBound, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// An inline destroy (running the program, which delete hooks need)
// cancelled while the pet's before-delete hook blocks: the destroy fails,
// and the next destroy completes, running the hook again.
func TestInlineDestroyInterruptedWhileADeleteHookRuns(t *testing.T) {
	hermetic(t, false)
	endOrphanProviders(t, builds.Provider(t, "github.com/langhost/callbacks/integration/providers/random", "random")+"/pulumi-resource-random")
	ctx := t.Context()
	var deletes sync.Map // hook calls, by attempt
	var calls int32
	var mu sync.Mutex
	b := newBlocker(true)
	t.Cleanup(b.free)
	prog := func(pctx *pulumi.Context) error {
		mon, err := program.Monitor(pctx)
		if err != nil {
			return err
		}
		del, err := hooks.Register(pctx.Context(), mon, "before-delete", func(ctx context.Context, a *hooks.Args) error {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			deletes.Store(n, a.Name)
			if n == 1 {
				b.block(ctx)
			}
			return nil
		})
		if err != nil {
			return err
		}
		var pet pulumi.CustomResourceState
		return pctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
			program.Hooks(&transforms.HooksBinding{BeforeDelete: []transforms.HookRef{del}}))
	}
	stack, err := auto.UpsertStackInlineSource(ctx, "destroyed", "faults", prog)
	require.NoError(t, err)
	_, err = stack.Up(ctx, optup.SuppressProgress())
	require.NoError(t, err)

	dctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := stack.Destroy(dctx, optdestroy.RunProgram(true), optdestroy.SuppressProgress())
		errc <- err
	}()
	select {
	case <-b.entered:
	case err := <-errc:
		t.Fatalf("the destroy ended before the hook blocked: %v", err)
	case <-time.After(hangBound):
		t.Fatalf("the hook did not block within %v", hangBound)
	}
	cancel()
	require.Error(t, wait(t, errc, "Destroy to return once cancelled"), "a cancelled destroy must fail")

	res, err := stack.Destroy(ctx, optdestroy.RunProgram(true), optdestroy.SuppressProgress())
	if err != nil && strings.Contains(err.Error(), "the stack is currently locked") {
		// auto interrupts the CLI, then kills it if it has not exited ten
		// seconds later, and a killed CLI leaves its lock: on a busy
		// machine the user removes it, as the CLI says.
		t.Logf("the interrupted CLI was killed before it released its lock; cancelling: %v", err)
		require.NoError(t, stack.Cancel(ctx))
		res, err = stack.Destroy(ctx, optdestroy.RunProgram(true), optdestroy.SuppressProgress())
	}
	require.NoError(t, err)
	assert.Equal(t, 2, (*res.Summary.ResourceChanges)["delete"], "the pet and the stack: %+v", res.Summary)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, int32(2), calls, "the delete hook runs again")
}

// settle waits until the usage is back to at most base, or the hang bound
// passes, and returns the last measure. A deployment's server shuts itself
// down once the engine has ended the deployment, which is slightly after Up
// returns.
func settle(t *testing.T, base usage) usage {
	t.Helper()
	limit := time.After(hangBound)
	for {
		u := measure(t)
		if u.listeners <= base.listeners && u.goroutines <= base.goroutines {
			return u
		}
		select {
		case <-limit:
			return u
		case <-time.After(100 * time.Millisecond):
		}
	}
}
