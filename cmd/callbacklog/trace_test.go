package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// has one event per call and per provider step, in the process of the run
// the account places it in, on a lane named after its resource, placed
// where its start and duration put it, and that no lane holds calls that
// overlap (the viewers draw those wrong).
func TestTraceOfRecordedLogs(t *testing.T) {
	autologs, _ := filepath.Glob(filepath.Join("testdata", "autologs", "*.jsonl"))
	files := append(logs(t), autologs...)
	steps := 0
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			in, err := openLog(file, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer in.close()
			var recs []*record
			d := &deployment{}
			if in.auto {
				recs, _, _ = readAutoLog(in, false)
			} else {
				recs, _, d = readLog(in, false, false)
			}
			if len(recs) == 0 {
				t.Fatal("no calls")
			}
			all := append(slices.Clone(recs), d.Steps...)
			steps += len(d.Steps)
			tr := readTrace(t, file)
			first := summarize(all).First
			lanes := map[int]string{}
			processes := map[int]string{}
			for _, e := range tr.TraceEvents {
				if e.Ph == "M" && e.Name == "thread_name" {
					lanes[e.Tid], _ = e.Args["name"].(string)
				}
				if e.Ph == "M" && e.Name == "process_name" {
					processes[e.Pid], _ = e.Args["name"].(string)
				}
			}
			// A call is known by its number, a step by the log line that
			// completed it.
			key := func(r *record) string {
				if r.Step != "" {
					return "step at line " + strconv.Itoa(r.Line)
				}
				return "call #" + strconv.Itoa(r.Seq)
			}
			byKey := map[string]traceEvent{}
			ends := map[int]float64{} // the latest end on each lane
			for _, e := range tr.TraceEvents {
				if e.Ph == "M" || e.Cat == "would run" { // what a preview says an update would run: no call
					continue
				}
				k := "call #" + strconv.Itoa(int(num(e.Args["seq"])))
				if _, ok := e.Args["step"]; ok {
					k = "step at line " + strconv.Itoa(int(num(e.Args["line"])))
				}
				if _, dup := byKey[k]; dup {
					t.Errorf("%s is more than one event", k)
				}
				byKey[k] = e
				if e.Ts == nil || *e.Ts < 0 || e.Dur != nil && *e.Dur < 0 {
					t.Errorf("%s: ts %v, dur %v", k, e.Ts, e.Dur)
					continue
				}
				if e.Dur != nil {
					if *e.Ts < ends[e.Tid] {
						t.Errorf("%s starts on lane %d (%s) before the call before it ends", k, e.Tid, lanes[e.Tid])
					}
					ends[e.Tid] = max(ends[e.Tid], *e.Ts+*e.Dur)
				}
			}
			if len(byKey) != len(all) {
				t.Errorf("%d events for %d calls and steps", len(byKey), len(all))
			}
			for _, r := range all {
				k := key(r)
				e, ok := byKey[k]
				if !ok {
					t.Errorf("%s is not in the trace", k)
					continue
				}
				wantProcess := "deployment (" + filepath.Base(file) + ")"
				if r.RunLine != 0 {
					wantProcess = r.Run + " (log line " + strconv.Itoa(r.RunLine) + ")"
				}
				if processes[e.Pid] != wantProcess {
					t.Errorf("%s is in process %q, want %q", k, processes[e.Pid], wantProcess)
				}
				lane := lanes[e.Tid]
				if want := laneName(groups([]*record{r})[0]); !strings.HasPrefix(lane, want) {
					t.Errorf("%s is on lane %q, want the lane of %s", k, lane, want)
				}
				if e.Name != r.Kind+": "+r.Registration || e.Args["outcome"] != r.Outcome {
					t.Errorf("%s is %q, %v; want %s: %s, %s", k, e.Name, e.Args["outcome"], r.Kind, r.Registration, r.Outcome)
				}
				if at := float64(r.Start.Sub(first)) / float64(time.Microsecond); math.Abs(*e.Ts-at) > 0.001 {
					t.Errorf("%s at %vµs, want %vµs", k, *e.Ts, at)
				}
				switch {
				case r.NoDuration && (e.Ph != "i" || e.Dur != nil):
					t.Errorf("%s, of no known duration, is a %q event of %v", k, e.Ph, e.Dur)
				case !r.NoDuration && (e.Ph != "X" || e.Dur == nil ||
					math.Abs(*e.Dur-float64(r.Duration)/float64(time.Microsecond)) > 0.001):
					t.Errorf("%s is a %q event of %vµs, want X of %v", k, e.Ph, e.Dur, r.Duration)
				}
				var changes []string
				if cs, ok := e.Args["changes"].([]any); ok {
					for _, c := range cs {
						changes = append(changes, c.(string))
					}
				}
				if len(changes) != len(r.Changes) {
					t.Errorf("%s has changes %q, want %d", k, changes, len(r.Changes))
				}
			}
		})
	}
	if steps == 0 {
		t.Error("no recorded log has a provider step: the trace's steps went untested")
	}
}

// num is a JSON number read back from a trace's args; 0 if absent.
func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// TestTraceSeparatesRuns gives a preview and an update the same resource's
// calls: each run is a process of its own, named as the account names it,
// and what the log places in no run goes to the deployment's.
func TestTraceSeparatesRuns(t *testing.T) {
	at := time.Date(2026, 11, 28, 3, 25, 22, 0, time.UTC)
	d := &deployment{Runs: []*progRun{{Name: "preview", Line: 3}, {Name: "update", Line: 40}}}
	pet := func(seq, runLine int, run string) *record {
		return &record{Seq: seq, Kind: "resource transform", Registration: "stack transform #1", Outcome: "unchanged",
			URN: "urn:x::pet", Type: "t", Name: "pet", Start: at.Add(time.Duration(seq) * time.Second), Duration: time.Millisecond,
			Run: run, RunLine: runLine}
	}
	recs := []*record{pet(1, 3, "preview"), pet(2, 40, "update"), pet(3, 0, "")}
	d.Steps = []*record{{Line: 50, Kind: "provider step", Step: "Create", Registration: "Create", Outcome: "ok",
		URN: "urn:x::pet", Type: "t", Name: "pet", Start: at.Add(5 * time.Second), Duration: time.Millisecond, Run: "update", RunLine: 40}}
	tr := buildTrace("up.jsonl", recs, d)
	processes := map[int]string{}
	in := map[string]string{}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Name == "process_name":
			processes[e.Pid] = e.Args["name"].(string)
		case e.Ph == "X":
			k := fmt.Sprint(e.Args["seq"])
			if s, ok := e.Args["step"]; ok {
				k = fmt.Sprint(s)
			}
			in[k] = processes[e.Pid]
		}
	}
	want := map[string]string{"1": "preview (log line 3)", "2": "update (log line 40)", "3": "deployment (up.jsonl)", "Create": "update (log line 40)"}
	if !maps.Equal(in, want) {
		t.Errorf("calls in processes %v, want %v", in, want)
	}
	if len(processes) != 3 {
		t.Errorf("processes %v, want the two runs and the deployment's", processes)
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
	tr := buildTrace("up.jsonl", recs, nil)
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
