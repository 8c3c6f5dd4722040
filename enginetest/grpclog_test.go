package enginetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
)

// logLine is a line of the engine's gRPC log, as the CLI writes it.
type logLine struct {
	Method   string            `json:"method"`
	Request  json.RawMessage   `json:"request"`
	Response json.RawMessage   `json:"response"`
	Errors   []string          `json:"errors"`
	Metadata map[string]string `json:"metadata"`
	Progress string            `json:"progress"`
	Time     string            `json:"timestamp"`
	Duration int64             `json:"duration"`
}

// readLog reads a gRPC log, failing the test on a line that is not a whole
// JSON object.
func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the engine wrote no gRPC log: %v", err)
	}
	defer func() { _ = f.Close() }()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %d is not a JSON object: %v\n%s", len(out)+1, err, sc.Text())
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A program with a stack transform and a hook, one of whose calls fails,
// and a second engine sharing the file: each engine logs every monitor call
// it serves and every callback call it makes as the CLI does, two entries a
// call, in one 0600 file of whole lines.
func TestEngineWritesTheCLIsGRPCLog(t *testing.T) { //nolint:paralleltest // sets PULUMI_DEBUG_GRPC
	path := filepath.Join(t.TempDir(), "grpc.log")
	t.Setenv("PULUMI_DEBUG_GRPC", path)

	run := func(t *testing.T, name string, failHook bool) {
		e := startEngine(t)
		p := newProgram(t, e)
		cbs := newCallbackServer(t)
		p.stackTransform(cbs.transform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			return &pulumirpc.TransformResponse{}, nil
		}))
		p.resourceHook("h", cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			if failHook {
				return nil, errors.New("hook says no")
			}
			return &pulumirpc.ResourceHookResponse{}, nil
		}), false, true)
		p.custom(name, map[string]any{"x": 1.0}, withHooks(&binding{BeforeCreate: []string{"h"}}))
		p.finish()
	}
	run(t, "first", true)

	lines := readLog(t, path)
	type entry struct{ method, progress string }
	var got []entry
	for _, l := range lines {
		got = append(got, entry{strings.TrimPrefix(l.Method, "/pulumirpc."), l.Progress})
	}
	want := []entry{
		{"ResourceMonitor/RegisterStackTransform", "request_started"},
		{"ResourceMonitor/RegisterStackTransform", "response_completed"},
		{"ResourceMonitor/RegisterResourceHook", "request_started"},
		{"ResourceMonitor/RegisterResourceHook", "response_completed"},
		{"ResourceMonitor/RegisterResource", "request_started"},
		{"Callbacks/Invoke", "request_started"},
		{"Callbacks/Invoke", "response_completed"},
		{"Callbacks/Invoke", "request_started"},
		{"Callbacks/Invoke", "response_completed"},
		{"ResourceMonitor/RegisterResource", "response_completed"},
		{"ResourceMonitor/SignalAndWaitForShutdown", "request_started"},
		{"ResourceMonitor/SignalAndWaitForShutdown", "response_completed"},
	}
	if len(got) != len(want) {
		t.Fatalf("log entries:\n got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d is %v, want %v", i+1, got[i], want[i])
		}
	}

	for i, l := range lines {
		client := strings.HasPrefix(l.Method, "/pulumirpc.Callbacks/")
		wantMeta := map[string]string{"mode": "server"}
		if client {
			wantMeta = map[string]string{"kind": "callbacks", "mode": "client"}
		}
		if len(l.Metadata) != len(wantMeta) || l.Metadata["mode"] != wantMeta["mode"] || l.Metadata["kind"] != wantMeta["kind"] {
			t.Errorf("entry %d (%s) has metadata %v, want %v", i+1, l.Method, l.Metadata, wantMeta)
		}
		completed := l.Progress == "response_completed"
		if len(l.Request) == 0 {
			t.Errorf("entry %d (%s) has no request", i+1, l.Method)
		}
		if started := l.Progress == "request_started"; started && (l.Response != nil || l.Duration != 0) {
			t.Errorf("entry %d (%s) is a start with a response or a duration", i+1, l.Method)
		}
		switch {
		case !client && !completed && l.Time != "0001-01-01T00:00:00Z":
			t.Errorf("entry %d (%s): a server's start has timestamp %q, want the zero time the CLI writes", i+1, l.Method, l.Time)
		case !client && completed && l.Duration != 1<<63-1:
			t.Errorf("entry %d (%s): a server's end has duration %d, want the saturated duration the CLI writes", i+1, l.Method, l.Duration)
		case client && l.Time == "0001-01-01T00:00:00Z":
			t.Errorf("entry %d (%s) has no timestamp", i+1, l.Method)
		}
	}

	// The callback calls: the transform's request and response, then the
	// hook's error, in the engine's words.
	var invoke pulumirpc.CallbackInvokeRequest
	if err := protojson.Unmarshal(lines[6].Request, &invoke); err != nil || invoke.GetToken() == "" || len(invoke.GetRequest()) == 0 {
		t.Errorf("the transform's logged request %s: %v", lines[6].Request, err)
	}
	if lines[6].Response == nil || lines[6].Errors != nil {
		t.Errorf("the transform's end has response %s and errors %v", lines[6].Response, lines[6].Errors)
	}
	if lines[8].Response != nil || len(lines[8].Errors) != 1 || !strings.Contains(lines[8].Errors[0], "hook says no") {
		t.Errorf("the failed hook's end has response %s and errors %q, want its error", lines[8].Response, lines[8].Errors)
	}
	var resp pulumirpc.RegisterResourceResponse
	if err := protojson.Unmarshal(lines[9].Response, &resp); err != nil || resp.GetUrn() == "" {
		t.Errorf("RegisterResource's logged response %s: %v", lines[9].Response, err)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the log's mode is %v, want 0600", fi.Mode().Perm())
	}

	// Engines that share the file append whole lines.
	t.Run("together", func(t *testing.T) {
		for _, name := range []string{"a", "b", "c", "d"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				run(t, name, false)
			})
		}
	})
	if n := len(readLog(t, path)); n != 5*len(want) {
		t.Errorf("after five deployments the log has %d entries, want %d", n, 5*len(want))
	}
}

// Without PULUMI_DEBUG_GRPC, nothing is written.
func TestEngineWritesNoGRPCLogUnasked(t *testing.T) { //nolint:paralleltest // sets PULUMI_DEBUG_GRPC
	t.Setenv("PULUMI_DEBUG_GRPC", "")
	dir := t.TempDir()
	t.Chdir(dir)
	e := startEngine(t)
	p := newProgram(t, e)
	p.custom("r", nil)
	p.finish()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("the working directory holds %v (%v), want nothing", entries, err)
	}
}
