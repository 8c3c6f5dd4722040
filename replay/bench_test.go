package replay

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReplay replays a synthetic log of a 1,000-resource `pulumi up` with a
// stack transform and a hook on every resource (writeSyntheticLog): the
// program runs once against the stand-in engine, and the log's 2,000 calls
// are read, sent to the program's functions and compared. peak-heap-B is
// the largest heap in use seen during the operations.
func BenchmarkReplay(b *testing.B) {
	const resources = 1000
	log := filepath.Join(b.TempDir(), "up.jsonl")
	f, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	if err := writeSyntheticLog(f, resources); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	program := synthProgram(resources, "tx")

	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Run(b, log, program)
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load()), "peak-heap-B")
}
