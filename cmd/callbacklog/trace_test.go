package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readTrace runs show -trace on the log file and reads the trace back.
func readTrace(tb testing.TB, file string, args ...string) traceFile {
	tb.Helper()
	trace := filepath.Join(tb.TempDir(), "trace.json")
	code, _, stderr := callbacklog("", append(append([]string{"show", "-trace", trace}, args...), file)...)
	if code != exitOK {
		tb.Fatalf("show -trace: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		tb.Fatal(err)
	}
	var t traceFile
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		tb.Fatalf("the trace is not Trace Event JSON: %v\n%s", err, data)
	}
	return t
}

// TestTraceOfRecordedLogs checks, for every recorded log, that the trace
// has one event per call, on a lane named after the call's resource, placed
// where the call's start and duration put it, and that no lane holds calls
// that overlap (the viewers draw those wrong).
func TestTraceOfRecordedLogs(t *testing.T) {
	autologs, _ := filepath.Glob(filepath.Join("testdata", "autologs", "*.jsonl"))
	files := append(logs(t), autologs...)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			a, err := readAccount(file, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			recs := a.recs
			if len(recs) == 0 {
				t.Fatal("no calls")
			}
			tr := readTrace(t, file)
			first := summarize(recs).First
			lanes := map[int]string{}
			var processes []string
			for _, e := range tr.TraceEvents {
				if e.Ph == "M" && e.Name == "thread_name" {
					lanes[e.Tid], _ = e.Args["name"].(string)
				}
				if e.Ph == "M" && e.Name == "process_name" {
					processes = append(processes, e.Args["name"].(string))
				}
			}
			if want := []string{"deployment (" + filepath.Base(file) + ")"}; !slices.Equal(processes, want) {
				t.Errorf("processes named %q, want %q", processes, want)
			}
			bySeq := map[int]traceEvent{}
			ends := map[int]float64{} // the latest end on each lane
			for _, e := range tr.TraceEvents {
				if e.Ph == "M" {
					continue
				}
				seq := int(e.Args["seq"].(float64))
				if _, dup := bySeq[seq]; dup {
					t.Errorf("call #%d is more than one event", seq)
				}
				bySeq[seq] = e
				if e.Ts == nil || *e.Ts < 0 || e.Dur != nil && *e.Dur < 0 {
					t.Errorf("call #%d: ts %v, dur %v", seq, e.Ts, e.Dur)
					continue
				}
				if e.Dur != nil {
					if *e.Ts < ends[e.Tid] {
						t.Errorf("call #%d starts on lane %d (%s) before the call before it ends", seq, e.Tid, lanes[e.Tid])
					}
					ends[e.Tid] = max(ends[e.Tid], *e.Ts+*e.Dur)
				}
			}
			if len(bySeq) != len(recs) {
				t.Errorf("%d call events for %d calls", len(bySeq), len(recs))
			}
			for _, r := range recs {
				e, ok := bySeq[r.Seq]
				if !ok {
					t.Errorf("call #%d is not in the trace", r.Seq)
					continue
				}
				lane := lanes[e.Tid]
				if want := laneName(groups([]*record{r})[0]); !strings.HasPrefix(lane, want) {
					t.Errorf("call #%d is on lane %q, want the lane of %s", r.Seq, lane, want)
				}
				if e.Name != r.Kind+": "+r.Registration || e.Args["outcome"] != r.Outcome {
					t.Errorf("call #%d is %q, %v; want %s: %s, %s", r.Seq, e.Name, e.Args["outcome"], r.Kind, r.Registration, r.Outcome)
				}
				if at := float64(r.Start.Sub(first)) / float64(time.Microsecond); math.Abs(*e.Ts-at) > 0.001 {
					t.Errorf("call #%d at %vµs, want %vµs", r.Seq, *e.Ts, at)
				}
				switch {
				case r.NoDuration && (e.Ph != "i" || e.Dur != nil):
					t.Errorf("call #%d, of no known duration, is a %q event of %v", r.Seq, e.Ph, e.Dur)
				case !r.NoDuration && (e.Ph != "X" || e.Dur == nil ||
					math.Abs(*e.Dur-float64(r.Duration)/float64(time.Microsecond)) > 0.001):
					t.Errorf("call #%d is a %q event of %vµs, want X of %v", r.Seq, e.Ph, e.Dur, r.Duration)
				}
				var changes []string
				if cs, ok := e.Args["changes"].([]any); ok {
					for _, c := range cs {
						changes = append(changes, c.(string))
					}
				}
				if len(changes) != len(r.Changes) {
					t.Errorf("call #%d has changes %q, want %d", r.Seq, changes, len(r.Changes))
				}
			}
		})
	}
}

// TestTraceLanesDoNotOverlap gives one resource two calls at once: the
// second goes on a lane of its own, named after the resource too.
func TestTraceLanesDoNotOverlap(t *testing.T) {
	at := time.Date(2026, 11, 28, 3, 25, 22, 0, time.UTC)
	recs := []*record{
		{Seq: 1, Kind: "resource hook", Registration: "a", Outcome: "ok", URN: "urn:x::pet", Type: "t", Name: "pet", Start: at, Duration: time.Second},
		{Seq: 2, Kind: "resource hook", Registration: "b", Outcome: "ok", URN: "urn:x::pet", Type: "t", Name: "pet", Start: at.Add(time.Millisecond), Duration: time.Second},
		{Seq: 3, Kind: "resource hook", Registration: "c", Outcome: "ok", URN: "urn:x::pet", Type: "t", Name: "pet", Start: at.Add(2 * time.Second), Duration: time.Second},
	}
	tr := buildTrace("up.jsonl", recs)
	lanes := map[int]string{}
	tids := map[string]int{}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Name == "thread_name":
			lanes[e.Tid] = e.Args["name"].(string)
		case e.Ph == "X":
			tids[e.Args["registration"].(string)] = e.Tid
		}
	}
	if tids["a"] == tids["b"] || tids["a"] != tids["c"] {
		t.Errorf("calls a, b, c on lanes %d, %d, %d: want b alone", tids["a"], tids["b"], tids["c"])
	}
	if lanes[tids["a"]] != `t "pet"` || lanes[tids["b"]] != `t "pet" (2)` {
		t.Errorf("lanes named %v", lanes)
	}
}
