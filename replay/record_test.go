package replay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks/enginetest"
)

// recorded is one callback call the recording engine makes: the
// registration it calls and the request it sends.
type recorded struct {
	key regKey
	req proto.Message
}

// logWriter writes entries in the engine's PULUMI_DEBUG_GRPC format.
type logWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

type entry struct {
	Method    string          `json:"method"`
	Request   json.RawMessage `json:"request,omitempty"`
	Response  json.RawMessage `json:"response,omitempty"`
	Errors    []string        `json:"errors,omitempty"`
	Metadata  any             `json:"metadata,omitempty"`
	Progress  string          `json:"progress,omitempty"`
	Timestamp time.Time       `json:"timestamp"`
	Duration  time.Duration   `json:"duration,omitempty"`
}

func pj(m any) json.RawMessage {
	if pm, ok := m.(proto.Message); ok && pm != nil {
		b, err := protojson.Marshal(pm)
		if err != nil {
			panic(err)
		}
		return b
	}
	return nil
}

func (w *logWriter) write(e entry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.enc.Encode(e); err != nil {
		panic(err)
	}
}

// monitorMethods are the engine's events that are the program's calls to
// the ResourceMonitor service.
var monitorMethods = map[enginetest.EventKind]bool{
	"GetDeploymentInfo": true, "SupportsFeature": true, "RegisterResource": true, "RegisterResourceOutputs": true,
	"ReadResource": true, "Invoke": true, "RegisterStackTransform": true, "RegisterStackInvokeTransform": true,
	"RegisterResourceHook": true, "RegisterErrorHook": true, "RegisterPackage": true, "SignalAndWaitForShutdown": true,
}

// monitorCall logs one monitor call as the engine's debug interceptor
// does: request_started, then response_completed, or for the program's
// signal, which the callbacks' calls come inside, the half of the two that
// progress names.
func (w *logWriter) monitorCall(ev enginetest.Event, progress string) {
	md := map[string]string{"mode": "server"}
	req, res := pj(ev.Request), pj(ev.Response)
	if req == nil {
		req = json.RawMessage("{}")
	}
	e := entry{Method: "/pulumirpc.ResourceMonitor/" + string(ev.Kind), Request: req, Metadata: md,
		Progress: "response_completed", Timestamp: time.Now()}
	if ev.Err != "" {
		e.Errors = []string{ev.Err}
	} else if e.Response = res; res == nil {
		e.Response = json.RawMessage("{}")
	}
	if progress != "response_completed" {
		w.write(entry{Method: e.Method, Request: req, Metadata: md, Progress: "request_started"})
	}
	if progress != "request_started" {
		w.write(e)
	}
}

// recordLog runs program on enginetest's engine, writing its gRPC log to a
// new file, and, where the engine would call back, makes the calls script
// lists, logging each as the engine logs a callback call. It returns the
// log's path.
func recordLog(t testing.TB, info runInfo, program pulumi.RunFunc, script []recorded) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grpc.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	w := &logWriter{enc: json.NewEncoder(f)}
	var eng *enginetest.Engine
	written := 0 // the engine's events logged so far
	var signal *enginetest.Event
	logMonitor := func() {
		evs := eng.Events()
		for _, ev := range evs[written:] {
			switch {
			case ev.Kind == "SignalAndWaitForShutdown" && signal == nil:
				signal = &ev
				w.monitorCall(ev, "request_started")
			case monitorMethods[ev.Kind]:
				w.monitorCall(ev, "")
			}
		}
		written = len(evs)
	}
	opts := []enginetest.Option{
		enginetest.NoCallbacks(),
		enginetest.WithProject(info.Project), enginetest.WithStack(info.Stack),
		enginetest.WithOrganization(info.Organization),
		enginetest.WithConfig(info.Config, info.ConfigSecretKeys...),
		enginetest.WithParallel(info.Parallel), enginetest.DryRun(info.DryRun),
		enginetest.BeforeShutdown(func(ctx context.Context) {
			logMonitor()
			_, regs := registrations(eng)
			d := dialer{}
			defer d.close()
			for _, s := range script {
				cb, ok := regs[s.key]
				if !ok {
					t.Errorf("recording: nothing registered as %v", s.key)
					continue
				}
				payload, err := proto.Marshal(s.req)
				if err != nil {
					t.Error(err)
					return
				}
				req := &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: payload}
				md := map[string]string{"kind": "callbacks", "mode": "client"}
				start := time.Now()
				w.write(entry{Method: "/pulumirpc.Callbacks/Invoke", Request: pj(req), Metadata: md,
					Progress: "request_started", Timestamp: start})
				res, callErr := d.invoke(ctx, cb, payload)
				e := entry{Method: "/pulumirpc.Callbacks/Invoke", Request: pj(req), Metadata: md,
					Progress: "response_completed", Timestamp: time.Now(), Duration: time.Since(start)}
				if callErr != "" {
					e.Errors = []string{callErr}
				} else {
					e.Response = pj(&pulumirpc.CallbackInvokeResponse{Response: res})
				}
				w.write(e)
			}
		}),
	}
	if info.Features != nil {
		opts = append(opts, enginetest.WithFeatures(info.Features...))
	}
	if eng, err = enginetest.Start(opts...); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = eng.Close() }()
	res, err := eng.RunFunc(t.Context(), func() error { return runProgram(t.Context(), eng.MonitorAddr(), info, program) })
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("recording: the program failed: %v", err)
	}
	logMonitor()
	if signal != nil {
		w.monitorCall(*signal, "response_completed")
	}
	run := &pulumirpc.RunRequest{Project: info.Project, Stack: info.Stack, Organization: info.Organization,
		Config: info.Config, DryRun: info.DryRun, Parallel: info.Parallel, MonitorAddress: eng.MonitorAddr()}
	md := map[string]string{"kind": "language", "mode": "client", "runtime": "go"}
	w.write(entry{Method: "/pulumirpc.LanguageRuntime/Run", Request: pj(run), Metadata: md, Progress: "request_started"})
	w.write(entry{Method: "/pulumirpc.LanguageRuntime/Run", Request: pj(run), Response: json.RawMessage("{}"),
		Metadata: md, Progress: "response_completed", Timestamp: time.Now()})
	return path
}
