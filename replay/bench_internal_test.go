package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkRead reads a synthetic log of a 1,000-resource `pulumi up` with a stack
// transform and a hook on every resource: 2,000 callback calls.
func BenchmarkRead(b *testing.B) {
	var log bytes.Buffer
	if err := writeSyntheticLog(&log, 1000); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(log.Len()))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for c, err := range Read(bytes.NewReader(log.Bytes())) {
			if err != nil || c == nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 2000 {
			b.Fatalf("%d calls, want 2000", n)
		}
	}
}

// BenchmarkScrub scrubs the same log.
func BenchmarkScrub(b *testing.B) {
	var log bytes.Buffer
	if err := writeSynthetic(&log, synthetic{resources: 1000, secret: "hunter2-secret", plain: "us-west-2"}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(log.Len()))
	b.ReportAllocs()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if err := Scrub(&out, bytes.NewReader(log.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// peakHeap reads a log file and returns the largest live heap seen while
// the calls are read (each call dropped once seen), sampled after a
// collection every `every` calls.
func peakHeap(t *testing.T, path string, every int) (peak uint64, calls int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ms runtime.MemStats
	for c, err := range Read(f) {
		if err != nil || c == nil {
			t.Fatal(err)
		}
		calls++
		if calls%every == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	return peak, calls
}

// TestReadMemoryDoesNotGrowWithTheLog reads logs of N and 10N resources from
// files: the live heap while reading the longer one stays within a small
// margin of the shorter one's, so memory holds a line and the tokens, not
// the log. No timing is involved.
func TestReadMemoryDoesNotGrowWithTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 10,000-resource log")
	}
	dir := t.TempDir()
	write := func(name string, n int) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := writeSyntheticLog(f, n); err != nil {
			t.Fatal(err)
		}
		return path
	}
	small, large := write("small.jsonl", 500), write("large.jsonl", 5000)
	// Warm up the runtime (and this test's own allocations) first.
	peakHeap(t, small, 250)
	smallPeak, smallCalls := peakHeap(t, small, 250)
	largePeak, largeCalls := peakHeap(t, large, 250)
	if smallCalls != 1000 || largeCalls != 10000 {
		t.Fatalf("read %d and %d calls, want 1000 and 10000", smallCalls, largeCalls)
	}
	// Ten times the log may not cost more than a fixed margin (1 MiB) over
	// the small log's peak: the 10,000-call log's calls alone are over 3 MiB.
	const margin = 1 << 20
	t.Logf("peak live heap: %d KiB for 1,000 calls, %d KiB for 10,000", smallPeak>>10, largePeak>>10)
	if largePeak > smallPeak+margin {
		t.Errorf("the live heap grew with the log: %d KiB for 1,000 calls, %d KiB for 10,000", smallPeak>>10, largePeak>>10)
	}
}
