package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usage is what a process holds that a deployment may leave behind.
type usage struct {
	listeners  int    // listening TCP sockets
	goroutines int    // runtime.NumGoroutine
	heap       uint64 // live heap bytes after a collection
}

func (u usage) String() string {
	return fmt.Sprintf("%d listening sockets, %d goroutines, %.1f MiB heap",
		u.listeners, u.goroutines, float64(u.heap)/(1<<20))
}

func measure(t *testing.T) usage {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{listeners: len(listening(t)), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}

// listening returns the local addresses (hexadecimal, as /proc shows them)
// of this process's listening TCP sockets: its socket file descriptors
// whose inode /proc/net/tcp{,6} lists in state LISTEN (0A).
func listening(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	mine := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(table)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && mine[f[9]] {
				addrs = append(addrs, f[1])
			}
		}
	}
	return addrs
}

// deployMany runs n inline deployments of body, each a new stack of one
// project, at most four at a time, as a service does.
func deployMany(t *testing.T, project string, n int, body func(stack string) pulumi.RunFunc) {
	t.Helper()
	ctx := t.Context()
	sem := make(chan struct{}, 4)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := fmt.Sprintf("%s-%d", project, i)
			stack, err := auto.UpsertStackInlineSource(ctx, name, project, body(name))
			if err == nil {
				_, err = stack.Up(ctx, optup.SuppressProgress())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "deployment %d", i)
	}
}

const deployments = 12

// A service that runs twelve inline deployments with this module's
// callbacks ends with the listening sockets and goroutines it started with,
// and its heap no larger than one deployment's worth of garbage. The Go
// SDK's own callbacks, measured the same way, leave a listening socket and
// goroutines behind for every deployment, which shows the measure sees a
// leak.
func TestInlineDeploymentsLeaveNothing(t *testing.T) {
	hermetic(t, false)

	// One deployment first, so that what a process sets up once (the SDK's
	// log daemon, grpc's resolvers) is in the baseline.
	deployMany(t, "warm", 1, func(stack string) pulumi.RunFunc { return inline(&tally{stack: stack}) })
	base := measure(t)
	deployMany(t, "ours", deployments, func(stack string) pulumi.RunFunc { return inline(&tally{stack: stack}) })
	ours := settle(t, base)
	t.Logf("this module: before %v; after %d deployments %v (heap %+d bytes)", base, deployments, ours, int64(ours.heap)-int64(base.heap))
	assert.Equal(t, base.listeners, ours.listeners, "listening sockets left behind")
	assert.LessOrEqual(t, ours.goroutines, base.goroutines, "goroutines left behind")
	// A leaked server, its connection and its registry would hold well over
	// 64 KiB per deployment.
	assert.Less(t, int64(ours.heap)-int64(base.heap), int64(64<<10*deployments/4),
		"the heap grew by %d bytes over %d deployments", int64(ours.heap)-int64(base.heap), deployments)

	base = ours
	deployMany(t, "sdk", deployments, func(string) pulumi.RunFunc { return sdkInline })
	sdk := measure(t)
	t.Logf("the Go SDK's callbacks: before %v; after %d deployments %v", base, deployments, sdk)
	assert.GreaterOrEqual(t, sdk.listeners-base.listeners, deployments,
		"the Go SDK's callbacks no longer leave a listener per deployment: the measure may be blind")
}

// sdkInline is the inline program of TestFourStacksAtOnce written with the
// Go SDK's own callbacks: a stack transform, a resource hook and an error
// hook on the pet.
func sdkInline(ctx *pulumi.Context) error {
	err := ctx.RegisterResourceTransform(func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		return nil
	})
	if err != nil {
		return err
	}
	audit, err := ctx.RegisterResourceHook("audit", func(*pulumi.ResourceHookArgs) error { return nil }, nil)
	if err != nil {
		return err
	}
	retry, err := ctx.RegisterErrorHook("retry", func(*pulumi.ErrorHookArgs) (bool, error) { return false, nil })
	if err != nil {
		return err
	}
	var pet pulumi.CustomResourceState
	return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
		pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
			BeforeCreate: []*pulumi.ResourceHook{audit},
			OnError:      []*pulumi.ErrorHook{retry},
		}))
}
