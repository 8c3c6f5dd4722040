package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// EnvServiceDeployments sets how many deployments
// TestLongLivedServiceStaysFlat runs each way (default 8, which CI runs;
// BENCHMARKS.md has the figures of 500).
const EnvServiceDeployments = "CALLBACKS_SERVICE_DEPLOYMENTS"

// footprint is what a long-lived process must not accumulate.
type footprint struct {
	rss        uint64 // resident memory, bytes
	heap       uint64 // live heap after a collection, bytes
	goroutines int
	files      int // open file descriptors
	listeners  int
}

func (f footprint) String() string {
	return fmt.Sprintf("RSS %.1f MiB, heap %.1f MiB, %d goroutines, %d open files, %d listeners",
		float64(f.rss)/(1<<20), float64(f.heap)/(1<<20), f.goroutines, f.files, f.listeners)
}

func measureFootprint(t *testing.T) footprint {
	t.Helper()
	debug.FreeOSMemory() // what the runtime keeps but does not use is not a leak
	u := measure(t)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return footprint{rss: rss(t), heap: u.heap, goroutines: u.goroutines, files: len(fds), listeners: u.listeners}
}

// rss reads the process's resident set size from /proc/self/status.
func rss(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// settleFootprint waits, within the hang bound, until goroutines and open
// files are back to at most those of base, and returns the last measure.
// Deployments end slightly after Up returns (see settle).
func settleFootprint(t *testing.T, base footprint) footprint {
	t.Helper()
	limit := time.After(hangBound)
	for {
		f := measureFootprint(t)
		if f.goroutines <= base.goroutines && f.files <= base.files && f.listeners <= base.listeners {
			return f
		}
		select {
		case <-limit:
			return f
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// deploySequence runs n inline deployments of the example's program, at
// most width at a time, each a new stack of project, and fails on the first
// error.
func deploySequence(t *testing.T, project string, from, n, width int) {
	t.Helper()
	ctx := t.Context()
	sem := make(chan struct{}, width)
	errs := make(chan error, n)
	for i := from; i < from+n; i++ {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("%s-%d", project, i)
			stack, err := auto.UpsertStackInlineSource(ctx, name, project, inline(&tally{stack: name}))
			if err == nil {
				_, err = stack.Up(ctx, optup.SuppressProgress())
			}
			if err != nil {
				err = fmt.Errorf("deployment %d: %w", i, err)
			}
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
}

// A service that runs deployment after deployment, one at a time and
// sixteen at a time: from the mark (the 50th deployment, or a quarter of
// the run when it is shorter) to the last, its goroutines, open files and
// listeners do not grow at all, and its live heap and resident memory grow
// by less than a leak of 16 KiB (heap) or 64 KiB (resident) per deployment
// would make them, with 1 MiB and 48 MiB of slack: the runtime's own
// bookkeeping, and for resident memory the peak of sixteen programs at once,
// which the run may reach only after the mark (the race detector's shadow
// memory follows that peak and is never given back).
// CALLBACKS_SERVICE_DEPLOYMENTS=500 gives the figures of BENCHMARKS.md.
func TestLongLivedServiceStaysFlat(t *testing.T) {
	hermetic(t, false)
	n := 8
	if v := os.Getenv(EnvServiceDeployments); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "%s", EnvServiceDeployments)
	}
	mark := min(50, n/4)
	require.Positive(t, mark, "%s must be at least 4", EnvServiceDeployments)

	for _, width := range []int{1, 16} {
		t.Run(fmt.Sprintf("%d at a time", width), func(t *testing.T) {
			project := fmt.Sprintf("service%d", width)
			start := time.Now()
			deploySequence(t, project, 0, mark, width)
			runtime.GC()
			atMark := settleFootprint(t, measureFootprint(t))
			deploySequence(t, project, mark, n-mark, width)
			atEnd := settleFootprint(t, atMark)
			t.Logf("%d at a time: after deployment %d: %v; after deployment %d: %v; %.2f s per deployment",
				width, mark, atMark, n, atEnd, time.Since(start).Seconds()/float64(n))

			assert.LessOrEqual(t, atEnd.goroutines, atMark.goroutines, "goroutines grew")
			assert.LessOrEqual(t, atEnd.files, atMark.files, "open files grew")
			assert.LessOrEqual(t, atEnd.listeners, atMark.listeners, "listeners grew")
			later := uint64(n - mark)
			assert.Less(t, int64(atEnd.heap)-int64(atMark.heap), int64(1<<20+later*16<<10),
				"the live heap grew by %d bytes over %d deployments", int64(atEnd.heap)-int64(atMark.heap), later)
			assert.Less(t, int64(atEnd.rss)-int64(atMark.rss), int64(48<<20+later*64<<10),
				"resident memory grew by %d bytes over %d deployments", int64(atEnd.rss)-int64(atMark.rss), later)
		})
	}
}
