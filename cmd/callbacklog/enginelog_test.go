package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/enginetest"
)

// rawCallbacks serves a test's callbacks over gRPC as a language host does,
// each token by a function of the request's bytes; functions are added
// before it serves.
type rawCallbacks struct {
	pulumirpc.UnimplementedCallbacksServer
	addr string
	fns  map[string]func([]byte) (proto.Message, error)
}

func (s *rawCallbacks) Invoke(_ context.Context, req *pulumirpc.CallbackInvokeRequest) (*pulumirpc.CallbackInvokeResponse, error) {
	fn := s.fns[req.GetToken()]
	if fn == nil {
		return nil, status.Errorf(codes.NotFound, "no callback %q", req.GetToken())
	}
	res, err := fn(req.GetRequest())
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(res)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CallbackInvokeResponse{Response: b}, nil
}

// serve starts serving s on loopback until the test ends.
func (s *rawCallbacks) serve(tb testing.TB) {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer()
	pulumirpc.RegisterCallbacksServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	s.addr = lis.Addr().String()
}

func (s *rawCallbacks) callback(token string) *pulumirpc.Callback {
	return &pulumirpc.Callback{Target: s.addr, Token: token}
}

// handle is fn as a callback of its request's type.
func handle[Req any, P interface {
	*Req
	proto.Message
}](fn func(P) proto.Message) func([]byte) (proto.Message, error) {
	return func(b []byte) (proto.Message, error) {
		req := P(new(Req))
		if err := proto.Unmarshal(b, req); err != nil {
			return nil, err
		}
		return fn(req), nil
	}
}

// monitorClient dials e's ResourceMonitor.
func monitorClient(tb testing.TB, e *enginetest.Engine) pulumirpc.ResourceMonitorClient {
	tb.Helper()
	conn, err := grpc.NewClient(e.MonitorAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return pulumirpc.NewResourceMonitorClient(conn)
}

const engineSecret = "s3cret-from-the-engine"

// engineLogs runs two deployments on enginetest with PULUMI_DEBUG_GRPC set
// and returns the gRPC log of each: the first creates test:index:Thing "db"
// through a stack transform (which adds a team), a before-create hook and
// an error hook (the first Create is throttled, and the hook asks for a
// retry), and invokes a function through a stack invoke transform (which
// doubles n); the second registers db again with a state migration that
// renames its length to size. db's password is a secret.
func engineLogs(t *testing.T) (first, second string) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	props, err := structpb.NewStruct(map[string]any{"length": 2,
		"password": map[string]any{sig.Key: sig.Secret, "value": engineSecret}})
	if err != nil {
		t.Fatal(err)
	}

	// The first deployment.
	first = filepath.Join(dir, "first.jsonl")
	t.Setenv("PULUMI_DEBUG_GRPC", first)
	var creates atomic.Int32
	e, err := enginetest.Start(enginetest.WithProject("demo"), enginetest.WithStack("dev"),
		enginetest.WithProvider(&enginetest.FakeProvider{
			OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
				if creates.Add(1) == 1 {
					return nil, errors.New("throttled: try again")
				}
				return &enginetest.CreateResponse{ID: req.Name + "-1", Outputs: req.Inputs}, nil
			},
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cbs := &rawCallbacks{fns: map[string]func([]byte) (proto.Message, error){
		"transform": handle(func(req *pulumirpc.TransformRequest) proto.Message {
			m := req.GetProperties().AsMap()
			m["team"] = "infra"
			s, _ := structpb.NewStruct(m)
			return &pulumirpc.TransformResponse{Properties: s, Options: req.GetOptions()}
		}),
		"invoke": handle(func(req *pulumirpc.TransformInvokeRequest) proto.Message {
			n := req.GetArgs().GetFields()["n"].GetNumberValue()
			args, _ := structpb.NewStruct(map[string]any{"n": 2 * n})
			return &pulumirpc.TransformInvokeResponse{Args: args, Options: req.GetOptions()}
		}),
		"hook": handle(func(*pulumirpc.ResourceHookRequest) proto.Message { return &pulumirpc.ResourceHookResponse{} }),
		"errorhook": handle(func(req *pulumirpc.ErrorHookRequest) proto.Message {
			return &pulumirpc.ErrorHookResponse{Retry: len(req.GetErrors()) < 2}
		}),
		"migration": handle(func(req *pulumirpc.StateMigrationRequest) proto.Message {
			return &pulumirpc.StateMigrationResponse{NewState: []byte(strings.ReplaceAll(string(req.GetOldState()), `"length"`, `"size"`))}
		}),
	}}
	cbs.serve(t)
	mon := monitorClient(t, e)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mon.RegisterStackTransform(ctx, cbs.callback("transform")))
	must(mon.RegisterStackInvokeTransform(ctx, cbs.callback("invoke")))
	must(mon.RegisterResourceHook(ctx, &pulumirpc.RegisterResourceHookRequest{Name: "check", Callback: cbs.callback("hook")}))
	must(mon.RegisterErrorHook(ctx, &pulumirpc.RegisterErrorHookRequest{Name: "retry", Callback: cbs.callback("errorhook")}))
	must(mon.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{Type: "test:index:Thing", Name: "db", Custom: true, Object: props,
		AcceptSecrets: true,
		Hooks:         &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"check"}, OnError: []string{"retry"}}}))
	args, _ := structpb.NewStruct(map[string]any{"n": 1})
	must(mon.Invoke(ctx, &pulumirpc.ResourceInvokeRequest{Tok: "test:index:getThing", Args: args}))
	res, err := e.Finish(ctx)
	if err != nil || res.Failed {
		t.Fatalf("the first deployment: %v %v\n%s", err, res.Err, e.Trace())
	}

	// The second, from the first's state.
	second = filepath.Join(dir, "second.jsonl")
	t.Setenv("PULUMI_DEBUG_GRPC", second)
	e2, err := enginetest.Start(enginetest.WithProject("demo"), enginetest.WithStack("dev"), enginetest.WithState(res.State))
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	mon = monitorClient(t, e2)
	must(mon.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{Type: "test:index:Thing", Name: "db", Custom: true, Object: props,
		AcceptSecrets: true, StateMigrations: []*pulumirpc.Callback{cbs.callback("migration")}}))
	if res, err := e2.Finish(ctx); err != nil || res.Failed {
		t.Fatalf("the second deployment: %v %v\n%s", err, res.Err, e2.Trace())
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return read(first), read(second)
}

// TestVerboseOfAnEngineTestLog: the gRPC log enginetest writes of a
// deployment with a call of every kind shows, with -v, what each call was
// asked and answered, the same in every view, with the secret hidden.
func TestVerboseOfAnEngineTestLog(t *testing.T) { //nolint:paralleltest // sets PULUMI_DEBUG_GRPC
	first, second := engineLogs(t)
	log := first + second
	v := views(t, log, "-v")
	calls := jsonCalls(t, v["json"])
	for _, c := range []struct {
		kind string
		path []any
		want any
	}{
		{"resource transform", []any{"request", "properties", "length"}, 2.0},
		{"resource transform", []any{"answer", "properties", "team"}, "infra"},
		{"invoke transform", []any{"request", "token"}, "test:index:getThing"},
		{"invoke transform", []any{"request", "args", "n"}, 1.0},
		{"invoke transform", []any{"answer", "args", "n"}, 2.0},
		{"resource hook", []any{"request", "name"}, "db"},
		{"resource hook", []any{"request", "newInputs", "team"}, "infra"},
		{"error hook", []any{"request", "failedOperation"}, "create"},
		{"error hook", []any{"answer", "retry"}, true},
		{"state migration", []any{"request", "oldState", 0, "inputs", "length"}, 2.0},
		{"state migration", []any{"answer", "newState", 0, "inputs", "size"}, 2.0},
	} {
		if got := at(calls[c.kind], c.path...); got != c.want {
			t.Errorf("%s: %v is %#v, want %#v\n%s", c.kind, c.path, got, c.want, v["json"])
		}
	}
	if e, _ := at(calls["error hook"], "request", "errors", 0).(string); !strings.Contains(e, "throttled: try again") {
		t.Errorf("the error hook's request holds the error %q, want the provider's", e)
	}
	if ch := changeOf(calls["resource transform"], "properties.team"); ch == nil || ch["newValue"] != "infra" {
		t.Errorf("the transform's change of team is %v, want the new value \"infra\"", ch)
	}
	text := payloadRows(v["text"])
	if page := pageRows(t, v["html"]); !slices.Equal(page, text) {
		t.Errorf("the page shows other requests and answers than the text:\npage: %q\ntext: %q", page, text)
	}
	if js := jsonRows(t, v["json"]); !slices.Equal(js, text) {
		t.Errorf("-json shows other requests and answers than the text:\njson: %q\ntext: %q", js, text)
	}
	for form, out := range v {
		if f := leak(t, form, out, engineSecret); f != "" {
			t.Errorf("the %s view prints the secret (%q):\n%s", form, f, out)
		}
	}
}
