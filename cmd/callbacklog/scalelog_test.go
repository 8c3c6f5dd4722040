package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// scaleLog is the shape of the large log the benchmarks and the scale tests
// read: `pulumi up` without --skip-preview of a program that registers
// resources RandomPets under the stack, with a stack transform that adds a
// tag to every one and a before-create hook on every one, written as CLI
// 3.274.1 writes its gRPC log (two entries per call, the monitor's entries
// with the zero start time). In the preview each resource is registered, transformed,
// checked and diffed; in the update it is registered, transformed, checked,
// diffed, its hook called and it is created. The times are made up and the
// same on every run.
type scaleLog struct {
	resources int
	// Filled in as the log is written.
	lines, calls, steps int
}

const (
	scaleProject = "scale"
	scaleType    = "random:index/randomPet:RandomPet"
	scaleHook    = "check-owner"
)

var scaleStackURN = "urn:pulumi:dev::" + scaleProject + "::pulumi:pulumi:Stack::" + scaleProject + "-dev"

func scaleName(i int) string { return fmt.Sprintf("pet-%05d", i) }

func scaleURN(i int) string {
	return "urn:pulumi:dev::" + scaleProject + "::" + scaleType + "::" + scaleName(i)
}

// scaleTeam is the tag the transform gives resource i: ten teams in turn.
func scaleTeam(i int) string { return "team-" + strconv.Itoa(i%10) }

// scaleWriter writes the entries of a scaleLog.
type scaleWriter struct {
	w   *bufio.Writer
	log *scaleLog
	now time.Time
	err error
}

// write writes the log to w.
func (s *scaleLog) write(w io.Writer) error {
	sw := &scaleWriter{w: bufio.NewWriterSize(w, 1<<16), log: s, now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
	sw.call("/pulumirpc.LanguageRuntime/GetPluginInfo", langMeta, map[string]any{}, map[string]any{"version": "3.274.1"}, time.Millisecond)
	for _, dryRun := range []bool{true, false} {
		sw.run(dryRun)
	}
	if err := sw.w.Flush(); sw.err == nil {
		sw.err = err
	}
	return sw.err
}

// entry writes one entry; a monitor's request_started has the zero time,
// and its response_completed the saturated duration, as the CLI writes
// them.
func (sw *scaleWriter) entry(method string, meta map[string]string, req, res any, progress string, took time.Duration) {
	if sw.err != nil {
		return
	}
	sw.now = sw.now.Add(50*time.Microsecond + took)
	e := logEntry{Method: method, Request: req, Metadata: meta, Progress: progress, Timestamp: sw.now.Format(time.RFC3339Nano)}
	server := meta["mode"] == "server"
	switch {
	case progress == "request_started" && server:
		e.Timestamp = "0001-01-01T00:00:00Z"
	case progress == "response_completed":
		e.Response, e.Duration = res, int64(took)
		if server {
			e.Duration = 1<<63 - 1
		}
	}
	data, err := json.Marshal(e)
	if err != nil {
		sw.err = err
		return
	}
	sw.w.Write(data)
	sw.err = sw.w.WriteByte('\n')
	sw.log.lines++
}

func (sw *scaleWriter) call(method string, meta map[string]string, req, res any, took time.Duration) {
	sw.entry(method, meta, req, nil, "request_started", 0)
	sw.entry(method, meta, req, res, "response_completed", took)
}

func (sw *scaleWriter) step(method string, req, res any, took time.Duration) {
	sw.call("/pulumirpc.ResourceProvider/"+method, providerMeta, req, res, took)
	sw.log.steps++
}

func (sw *scaleWriter) callback(token string, req, res proto.Message, took time.Duration) {
	sw.call("/pulumirpc.Callbacks/Invoke", callbackMeta,
		map[string]any{"token": token, "request": sw.payload(req)},
		map[string]any{"response": sw.payload(res)}, took)
	sw.log.calls++
}

func (sw *scaleWriter) payload(m proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil && sw.err == nil {
		sw.err = err
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (sw *scaleWriter) run(dryRun bool) {
	req := map[string]any{
		"project": scaleProject, "stack": "dev", "organization": "acme", "dryRun": dryRun, "parallel": 16,
		"program": ".", "pwd": "/home/dev/" + scaleProject, "monitorAddress": "127.0.0.1:40001",
	}
	runStart := sw.now
	sw.entry("/pulumirpc.LanguageRuntime/Run", langMeta, req, nil, "request_started", 0)
	sw.call("/pulumirpc.ResourceMonitor/GetDeploymentInfo", monitorMeta, map[string]any{},
		map[string]any{"project": scaleProject, "stack": "dev", "organization": "acme", "dryRun": dryRun}, 0)
	run := "update"
	if dryRun {
		run = "preview"
	}
	transformTok, hookTok := "transform-"+run, "hook-"+run
	sw.call("/pulumirpc.ResourceMonitor/RegisterStackTransform", monitorMeta,
		map[string]any{"target": "127.0.0.1:40002", "token": transformTok, "acceptsByteString": true}, map[string]any{}, 0)
	sw.call("/pulumirpc.ResourceMonitor/RegisterResourceHook", monitorMeta,
		map[string]any{"name": scaleHook, "callback": map[string]any{"target": "127.0.0.1:40002", "token": hookTok, "acceptsByteString": true}},
		map[string]any{}, 0)
	sdk := "file:///home/dev/go/pkg/mod/github.com/pulumi/pulumi/sdk/v3@v3.274.1/go/pulumi/"
	sw.call("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta,
		map[string]any{"type": "pulumi:pulumi:Stack", "name": scaleProject + "-dev", "object": map[string]any{},
			"sourcePosition": map[string]any{"uri": sdk + "run.go", "line": 104}},
		map[string]any{"urn": scaleStackURN, "object": map[string]any{}}, 0)
	for i := range sw.log.resources {
		sw.resource(i, dryRun, transformTok, hookTok, sdk)
	}
	sw.call("/pulumirpc.ResourceMonitor/SignalAndWaitForShutdown", monitorMeta, map[string]any{}, map[string]any{}, 0)
	sw.entry("/pulumirpc.LanguageRuntime/Run", langMeta, req, map[string]any{}, "response_completed", sw.now.Sub(runStart))
}

// resource writes what the deployment does about resource i in one run.
func (sw *scaleWriter) resource(i int, dryRun bool, transformTok, hookTok, sdk string) {
	name, urn := scaleName(i), scaleURN(i)
	inputs := map[string]any{"length": 2, "prefix": name}
	reg := map[string]any{
		"type": scaleType, "name": name, "parent": scaleStackURN, "custom": true, "object": inputs,
		"propertyDependencies": map[string]any{"length": map[string]any{}, "prefix": map[string]any{}},
		"acceptSecrets":        true, "customTimeouts": map[string]any{}, "supportsPartialValues": true, "acceptResources": true,
		"sourcePosition": map[string]any{"uri": "file:///home/dev/" + scaleProject + "/main.go", "line": 31},
		"stackTrace": map[string]any{"frames": []any{
			map[string]any{"pc": map[string]any{"uri": "file:///home/dev/" + scaleProject + "/main.go", "line": 31}},
			map[string]any{"pc": map[string]any{"uri": sdk + "run.go", "line": 144}},
			map[string]any{"pc": map[string]any{"uri": sdk + "run.go", "line": 104}},
			map[string]any{"pc": map[string]any{"uri": sdk + "run.go", "line": 53}},
		}},
		"hooks": map[string]any{"beforeCreate": []string{scaleHook}}, "supportsResultReporting": true, "acceptsByteString": true,
	}
	sw.entry("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, reg, nil, "request_started", 0)

	props := func(tagged bool) *structpb.Struct {
		m := map[string]any{"length": 2, "prefix": name}
		if tagged {
			m["tags"] = map[string]any{"team": scaleTeam(i)}
		}
		s, err := structpb.NewStruct(m)
		if err != nil && sw.err == nil {
			sw.err = err
		}
		return s
	}
	sw.callback(transformTok,
		&pulumirpc.TransformRequest{Type: scaleType, Name: name, Custom: true, Parent: scaleStackURN, Properties: props(false),
			Options: &pulumirpc.TransformResourceOptions{Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{scaleHook}}}},
		&pulumirpc.TransformResponse{Properties: props(true),
			Options: &pulumirpc.TransformResourceOptions{Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{scaleHook}}}},
		time.Duration(300+i%700)*time.Microsecond)

	news := map[string]any{"length": 2, "prefix": name, "tags": map[string]any{"team": scaleTeam(i)}}
	sw.step("Check", map[string]any{"urn": urn, "olds": map[string]any{}, "news": news, "name": name, "type": scaleType,
		"randomSeed": base64.StdEncoding.EncodeToString([]byte(urn)[:32]), "oldOutputs": map[string]any{}},
		map[string]any{"inputs": news}, time.Duration(200+i%300)*time.Microsecond)
	sw.step("Diff", map[string]any{"urn": urn, "id": name + "-id", "olds": map[string]any{"length": 2, "prefix": name},
		"news": news, "oldInputs": map[string]any{"length": 2, "prefix": name}, "name": name, "type": scaleType},
		map[string]any{"changes": "DIFF_SOME", "replaces": []string{"tags"}, "diffs": []string{"tags"}}, time.Duration(150+i%200)*time.Microsecond)
	if !dryRun {
		sw.callback(hookTok,
			&pulumirpc.ResourceHookRequest{Urn: urn, Name: name, Type: scaleType, NewInputs: props(true)},
			&pulumirpc.ResourceHookResponse{}, time.Duration(400+i%900)*time.Microsecond)
		sw.step("Create", map[string]any{"urn": urn, "properties": news, "name": name, "type": scaleType,
			"resourceStatusAddress": "127.0.0.1:40003", "resourceStatusToken": "status-" + name},
			map[string]any{"id": name + "-id", "properties": news}, time.Duration(2000+i%3000)*time.Microsecond)
	}
	sw.call("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, reg, map[string]any{"urn": urn, "object": news}, 0)
}

// writeScaleLog writes a scaleLog of n resources into a file of tb's
// temporary directory and returns its path and what it holds.
func writeScaleLog(tb testing.TB, n int) (string, *scaleLog) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "up-"+strconv.Itoa(n)+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	s := &scaleLog{resources: n}
	if err := s.write(f); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, s
}

// scaleAccount is the account show builds from a scaleLog of n resources,
// made directly: the records of the calls and the deployment with its runs
// and provider steps, as readLog gives them.
func scaleAccount(n int) ([]*record, *deployment) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	d := &deployment{Known: true, Project: scaleProject, Stack: "dev", Organization: "acme", CLI: "3.274.1"}
	var recs []*record
	line, seq := 2, 0
	at := t0
	next := func(took time.Duration) (int, time.Time) {
		line += 2
		at = at.Add(50*time.Microsecond + took)
		return line, at.Add(-took)
	}
	for _, run := range []string{"preview", "update"} {
		r := &progRun{Name: run, Line: line + 1, Start: at}
		d.Runs = append(d.Runs, r)
		for i := range n {
			name, urn := scaleName(i), scaleURN(i)
			call := func(kind, reg, method, outcome string, took time.Duration, changes []change) {
				l, start := next(took)
				seq++
				rec := &record{Seq: seq, Line: l, Kind: kind, Registration: reg, Method: method,
					URN: urn, Type: scaleType, Name: name, Outcome: outcome, Changes: changes,
					Start: start, Duration: took, Run: run, RunLine: r.Line}
				if method == "RegisterResourceHook" {
					rec.HookName = reg
				}
				recs = append(recs, rec)
			}
			step := func(method, outcome string, took time.Duration) {
				l, start := next(took)
				d.Steps = append(d.Steps, &record{Line: l, Kind: "provider step", Step: method, Provider: "random",
					Registration: method + " (random)", URN: urn, Type: scaleType, Name: name, Outcome: outcome,
					Start: start, Duration: took, Run: run, RunLine: r.Line})
			}
			call("resource transform", "stack transform #1", "RegisterStackTransform", "changed", 500*time.Microsecond,
				[]change{{Path: "properties.tags", Old: absent, New: `{"team": "` + scaleTeam(i) + `"}`}})
			step("Check", "ok", 300*time.Microsecond)
			step("Diff", "changes", 200*time.Microsecond)
			if run == "update" {
				call("resource hook", scaleHook, "RegisterResourceHook", "ok", 800*time.Microsecond, nil)
				step("Create", "ok", 3*time.Millisecond)
			}
		}
		line++
		r.End, r.Duration = line, at.Sub(r.Start)
	}
	d.Last = at
	return recs, d
}

// TestScaleAccountIsTheLogs checks that scaleAccount is what show makes of
// a scaleLog of as many resources, but for lines and times: the same calls
// and steps, in the same order and runs, about the same resources, with the
// same outcomes and changes.
func TestScaleAccountIsTheLogs(t *testing.T) {
	const n = 25
	path, log := writeScaleLog(t, n)
	code, out, stderr := callbacklog("", "show", "-json", path)
	if code != exitOK {
		t.Fatalf("show -json: exit %d: %s", code, stderr)
	}
	recs, d := scaleAccount(n)
	if log.calls != len(recs) || log.steps != len(d.Steps) {
		t.Fatalf("the log has %d calls and %d steps, the account %d and %d", log.calls, log.steps, len(recs), len(d.Steps))
	}
	var made bytes.Buffer
	if err := writeJSON(&made, fromGRPC, recs, nil, d); err != nil {
		t.Fatal(err)
	}
	// What is compared: all but the log's lines and times.
	type shape struct {
		Run, Kind, Outcome string
		Seq                int
		Provider           *struct{ Name, Method string }
		Registration       struct{ Label, Method, Name string }
		Resource           *struct{ URN, Type, Name string }
		Changes            []change
		Deployment         *struct {
			Project, Stack, Organization, CLI string
			Runs                              []struct{ Name, Result string }
		}
	}
	read := func(what, s string) []shape {
		var out []shape
		for l := range strings.Lines(s) {
			var x shape
			if err := json.Unmarshal([]byte(l), &x); err != nil {
				t.Fatalf("%s: %v: %s", what, err, l)
			}
			out = append(out, x)
		}
		return out
	}
	// What the preview says an update would run is not in the account
	// made: a line per resource, and one for the preview.
	var calls strings.Builder
	wouldRun := 0
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, `{"wouldRun":`) {
			wouldRun++
			continue
		}
		calls.WriteString(l)
	}
	if wouldRun != n+1 {
		t.Errorf("show -json says what an update would run in %d lines, want %d", wouldRun, n+1)
	}
	got, want := read("the account made", made.String()), read("show -json", calls.String())
	if len(got) != len(want) || len(want) != 1+len(recs)+len(d.Steps) {
		t.Fatalf("the account made has %d lines, show's %d; want %d", len(got), len(want), 1+len(recs)+len(d.Steps))
	}
	for i := range want {
		g, _ := json.Marshal(got[i])
		w, _ := json.Marshal(want[i])
		if !bytes.Equal(g, w) {
			t.Errorf("line %d of the account made is\n%s\nwhere show's is\n%s", i+1, g, w)
		}
	}
}
