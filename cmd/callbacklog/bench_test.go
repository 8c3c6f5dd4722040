package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// heapPeak samples the heap in use while it runs, every few milliseconds,
// and keeps the largest value seen.
type heapPeak struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{stop: make(chan struct{})}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.peak = ms.HeapInuse
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
			runtime.ReadMemStats(&ms)
			h.peak = max(h.peak, ms.HeapInuse)
		}
	}()
	return h
}

// end stops the sampling and returns the peak, sampled once more at the end.
func (h *heapPeak) end() uint64 {
	close(h.stop)
	h.wg.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return max(h.peak, ms.HeapInuse)
}

// cpuTime is the CPU time the process has used, in user and system mode:
// on a machine other work keeps busy it moves far less than the time on the
// clock.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// BenchmarkShowAtScale runs show on scaleLogs of 1,000 and 10,000
// resources, as the command runs: each view reads the log and writes the
// account (text, or JSON Lines with -json) to standard output; -html and
// -trace write their file besides the text. Beside the standard figures it
// reports the process's CPU time per operation (cpu-ns/op, the sampler's
// included), the heap in use at its highest during the operation
// (peak-heap-B, sampled every 2 ms), the output's size (out-B: standard
// output and the file) and the log's size (log-B, log-lines).
//
//	go test -run '^$' -bench BenchmarkShowAtScale -benchtime 1x -timeout 60m ./cmd/callbacklog
func BenchmarkShowAtScale(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		path, log := writeScaleLog(b, n)
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		dir := b.TempDir()
		for _, view := range []struct {
			name  string
			flags []string
			file  string
		}{
			{"text", nil, ""},
			{"json", []string{"-json"}, ""},
			{"html", []string{"-html", filepath.Join(dir, "up.html")}, filepath.Join(dir, "up.html")},
			{"trace", []string{"-trace", filepath.Join(dir, "up.trace.json")}, filepath.Join(dir, "up.trace.json")},
		} {
			b.Run(fmt.Sprintf("resources=%d/%s", n, view.name), func(b *testing.B) {
				args := append(append([]string{"show"}, view.flags...), path)
				b.ReportAllocs()
				runtime.GC()
				var peak uint64
				var out int64
				var cpu time.Duration
				for b.Loop() {
					stdout := &countingWriter{}
					h := startHeapPeak()
					began := cpuTime(b)
					code := run(args, nil, stdout, io.Discard)
					cpu += cpuTime(b) - began
					peak = max(peak, h.end())
					if code != exitOK {
						b.Fatalf("show exited %d", code)
					}
					out = stdout.n
					if view.file != "" {
						fi, err := os.Stat(view.file)
						if err != nil {
							b.Fatal(err)
						}
						out += fi.Size()
					}
				}
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(peak), "peak-heap-B")
				b.ReportMetric(float64(out), "out-B")
				b.ReportMetric(float64(fi.Size()), "log-B")
				b.ReportMetric(float64(log.lines), "log-lines")
			})
		}
	}
}
