package main

import (
	"io"
	"runtime"
	"testing"
)

// heapSampler is a writer that reads the live heap, after a collection,
// every `every` bytes written to it, and keeps the largest.
type heapSampler struct {
	every, n, next int64
	peak           uint64
}

func (s *heapSampler) Write(p []byte) (int, error) {
	s.n += int64(len(p))
	if s.n >= s.next {
		s.sample()
		s.next = s.n + s.every
	}
	return len(p), nil
}

func (s *heapSampler) sample() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.peak = max(s.peak, ms.HeapAlloc)
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestViewsHoldLittleBeyondTheAccount writes each view of a large account
// and reads the live heap as it is written: what a view holds beyond the
// account (the records, which every view needs whole) must be a small part
// of the account, not a copy of it or of the view's output. A page or trace
// built whole before it is written holds more than the account itself.
func TestViewsHoldLittleBeyondTheAccount(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1000
	}
	before := liveHeap()
	recs, d := scaleAccount(n)
	account := liveHeap() - min(before, liveHeap())
	if len(recs) != 3*n || len(d.Steps) != 5*n {
		t.Fatalf("the account has %d calls and %d steps, want %d and %d", len(recs), len(d.Steps), 3*n, 5*n)
	}
	for _, view := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"text", func(w io.Writer) error { return writeText(w, "up.jsonl", fromGRPC, recs, nil, d) }},
		{"json", func(w io.Writer) error { return writeJSON(w, fromGRPC, recs, nil, d) }},
		{"html", func(w io.Writer) error { return writeHTML(w, "up.jsonl", fromGRPC, recs, nil, d) }},
		{"trace", func(w io.Writer) error { return writeTrace(w, "up.jsonl", recs, d) }},
	} {
		base := liveHeap()
		s := &heapSampler{every: 256 << 10}
		if err := view.write(s); err != nil {
			t.Fatalf("%s: %v", view.name, err)
		}
		s.sample()
		held := s.peak - min(base, s.peak)
		t.Logf("%s: %d KiB written, %d KiB held beyond the account of %d KiB (%.2f of it)",
			view.name, s.n>>10, held>>10, account>>10, float64(held)/float64(account))
		if held > account/4 {
			t.Errorf("writing the %s view held %d KiB beyond the account of %d KiB (%d resources): more than a quarter of it",
				view.name, held>>10, account>>10, n)
		}
	}
	runtime.KeepAlive(recs)
	runtime.KeepAlive(d)
}
