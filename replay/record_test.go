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
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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

// interceptor logs every monitor call as the engine's debug interceptor
// does: request_started, then response_completed.
func (w *logWriter) interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md := map[string]string{"mode": "server"}
	w.write(entry{Method: info.FullMethod, Request: pj(req), Metadata: md, Progress: "request_started"})
	res, err := h(ctx, req)
	w.write(entry{Method: info.FullMethod, Request: pj(req), Response: pj(res), Metadata: md,
		Progress: "response_completed", Timestamp: time.Now()})
	return res, err
}

// recordLog runs program against the stand-in engine, writing its gRPC log
// to a new file, and, where the engine would call back, makes the calls
// script lists, logging each as the engine logs a callback call. It
// returns the log's path.
func recordLog(t testing.TB, info runInfo, program pulumi.RunFunc, script []recorded) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grpc.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	w := &logWriter{enc: json.NewEncoder(f)}
	eng, err := newEngine(info, grpc.ChainUnaryInterceptor(w.interceptor))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	eng.onShutdown = func(ctx context.Context) {
		_, regs := eng.registrations()
		d := &dialer{conns: map[string]*grpc.ClientConn{}}
		defer d.close()
		for _, s := range script {
			tgt, ok := regs[s.key]
			if !ok {
				t.Errorf("recording: nothing registered as %v", s.key)
				continue
			}
			payload, err := proto.Marshal(s.req)
			if err != nil {
				t.Fatal(err)
			}
			req := &pulumirpc.CallbackInvokeRequest{Token: tgt.Token, Request: payload}
			md := map[string]string{"kind": "callbacks", "mode": "client"}
			start := time.Now()
			w.write(entry{Method: "/pulumirpc.Callbacks/Invoke", Request: pj(req), Metadata: md,
				Progress: "request_started", Timestamp: start})
			res, callErr := d.invoke(ctx, tgt, payload)
			e := entry{Method: "/pulumirpc.Callbacks/Invoke", Request: pj(req), Metadata: md,
				Progress: "response_completed", Timestamp: time.Now(), Duration: time.Since(start)}
			if callErr != "" {
				e.Errors = []string{callErr}
			} else {
				e.Response = pj(&pulumirpc.CallbackInvokeResponse{Response: res})
			}
			w.write(e)
		}
	}
	if err := runProgram(context.Background(), eng, info, program); err != nil {
		t.Fatalf("recording: the program failed: %v", err)
	}
	run := &pulumirpc.RunRequest{Project: info.Project, Stack: info.Stack, Organization: info.Organization,
		Config: info.Config, DryRun: info.DryRun, Parallel: info.Parallel, MonitorAddress: eng.Addr()}
	md := map[string]string{"kind": "language", "mode": "client", "runtime": "go"}
	w.write(entry{Method: "/pulumirpc.LanguageRuntime/Run", Request: pj(run), Metadata: md, Progress: "request_started"})
	w.write(entry{Method: "/pulumirpc.LanguageRuntime/Run", Request: pj(run), Response: json.RawMessage("{}"),
		Metadata: md, Progress: "response_completed", Timestamp: time.Now()})
	return path
}
