package callbacks_test

// The records of calls in Pulumi's automatic log, against a fake of the
// OTLP logs receiver the CLI runs. These tests set the process's
// environment (t.Setenv), so none of them runs in parallel.

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/calllog"
	"github.com/langhost/callbacks/internal/testkit/benchdata"
)

// fakeReceiver is the CLI's OTLP logs receiver: it keeps every record it
// is sent. With block set, it answers no export until block is closed (or
// the sender gives up), and says on arrived that one came.
type fakeReceiver struct {
	collogspb.UnimplementedLogsServiceServer
	addr    string
	block   chan struct{}
	arrived chan struct{}

	mu      sync.Mutex
	records []*logspb.LogRecord

	accepted atomic.Int64 // connections accepted
	open     atomic.Int64 // connections not yet closed
}

func (f *fakeReceiver) Export(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	if f.block != nil {
		select {
		case f.arrived <- struct{}{}:
		default:
		}
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			f.records = append(f.records, sl.GetLogRecords()...)
		}
	}
	return &collogspb.ExportLogsServiceResponse{}, nil
}

func (f *fakeReceiver) received() []*logspb.LogRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*logspb.LogRecord(nil), f.records...)
}

// startReceiver serves a fake receiver on loopback until the test ends;
// blocking makes it answer no export before then.
func startReceiver(t *testing.T, blocking bool) *fakeReceiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeReceiver{addr: lis.Addr().String()}
	if blocking {
		f.block, f.arrived = make(chan struct{}), make(chan struct{}, 1)
	}
	s := grpc.NewServer()
	collogspb.RegisterLogsServiceServer(s, f)
	go func() { _ = s.Serve(countingListener{lis, f}) }()
	t.Cleanup(func() {
		if f.block != nil {
			close(f.block)
		}
		s.Stop()
	})
	return f
}

// countingListener counts the receiver's connections.
type countingListener struct {
	net.Listener
	f *fakeReceiver
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.f.accepted.Add(1)
	l.f.open.Add(1)
	return &countedConn{Conn: c, open: &l.f.open}, nil
}

type countedConn struct {
	net.Conn
	open *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.open.Add(-1) })
	return c.Conn.Close()
}

// patientLimits send every record, however slow the machine: only a hang
// would meet their deadlines.
var patientLimits = func() calllog.Limits {
	l := calllog.DefaultLimits
	l.Batch, l.ExportTimeout, l.FlushTimeout = 64, hangBound, hangBound
	return l
}()

// pulumiLogTo points servers made from now on at f, as the CLI does, with
// limits l.
func pulumiLogTo(t *testing.T, f *fakeReceiver, l calllog.Limits) {
	t.Helper()
	t.Setenv(calllog.EndpointEnv, f.addr)
	t.Setenv(calllog.SwitchEnv, "")
	t.Cleanup(callbacks.SetPulumiLogLimits(l))
}

// attrsOf is a record's attributes as Go values.
func attrsOf(r *logspb.LogRecord) map[string]any {
	m := map[string]any{}
	for _, kv := range r.GetAttributes() {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.BoolValue
		default:
			m[kv.GetKey()] = v
		}
	}
	return m
}

// loggedCall is the two records of one call.
type loggedCall struct{ start, end map[string]any }

// callsByID pairs the records by call id, failing the test on a record
// that is not the module's or a call without both records.
func callsByID(t *testing.T, recs []*logspb.LogRecord) map[string]*loggedCall {
	t.Helper()
	calls := map[string]*loggedCall{}
	for _, r := range recs {
		a := attrsOf(r)
		require.Equal(t, calllog.Module, a[calllog.AttrModule], "every record names the module")
		require.Equal(t, int64(calllog.Schema), a[calllog.AttrSchema])
		id, _ := a[calllog.AttrCallID].(string)
		require.NotEmpty(t, id)
		c := calls[id]
		if c == nil {
			c = &loggedCall{}
			calls[id] = c
		}
		switch body := r.GetBody().GetStringValue(); body {
		case calllog.StartedBody:
			require.Nil(t, c.start, "two starts of call %s", id)
			c.start = a
		case calllog.FinishedBody:
			require.Nil(t, c.end, "two ends of call %s", id)
			c.end = a
		default:
			t.Fatalf("record with body %q", body)
		}
	}
	for id, c := range calls {
		require.NotNil(t, c.start, "call %s has no start", id)
		require.NotNil(t, c.end, "call %s has no end", id)
	}
	return calls
}

// Each call of every kind, served or through the server's registry (as
// program.Migrations calls it), gives a start record and an end record
// sharing a call id, with its kind, registration, resource and outcome.
func TestPulumiLogRecordsEachCall(t *testing.T) {
	f := startReceiver(t, false)
	pulumiLogTo(t, f, patientLimits)
	h := serve(t, callbacks.WithLogger(discardLogger()))
	ctx := testCtx(t)

	hook := mustRegister(t, h.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return &pulumirpc.ResourceHookResponse{}, nil
	}), callbacks.Name("audit"))
	refusing := mustRegister(t, h.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return &pulumirpc.ResourceHookResponse{Error: "not on Sundays"}, nil
	}), callbacks.Name("guard"))
	errHook := mustRegister(t, h.srv, callbacks.ErrorHook(func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
		return nil, errors.New("no retry today")
	}), callbacks.Name("retry"))
	transform := mustRegister(t, h.srv, callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return nil, nil
	}))
	invoke := mustRegister(t, h.srv, callbacks.InvokeTransform(func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
		return nil, nil
	}))
	migration := mustRegister(t, h.srv, callbacks.StateMigration(func(context.Context, *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
		return nil, nil
	}), callbacks.Name("v2"))

	_, err := h.call(ctx, hook.Token, &pulumirpc.ResourceHookRequest{Urn: hookURN, Type: "aws:s3/bucket:Bucket", Name: "logs"})
	require.NoError(t, err)
	_, err = h.call(ctx, refusing.Token, &pulumirpc.ResourceHookRequest{Urn: hookURN, Type: "aws:s3/bucket:Bucket", Name: "logs"})
	require.NoError(t, err)
	_, err = h.call(ctx, errHook.Token, &pulumirpc.ErrorHookRequest{Urn: hookURN, Errors: []string{"throttled"}})
	require.Error(t, err)
	_, err = h.call(ctx, transform.Token, &pulumirpc.TransformRequest{Type: "random:index/randomPet:RandomPet", Name: "pet"})
	require.NoError(t, err)
	_, err = h.call(ctx, invoke.Token, &pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion"})
	require.NoError(t, err)
	_, err = h.srv.Registry().Invoke(ctx, migration.Token, mustMarshal(t, &pulumirpc.StateMigrationRequest{Urn: hookURN}))
	require.NoError(t, err)
	_, err = h.invoke(ctx, "no-such-token", nil)
	require.Error(t, err)

	require.NoError(t, h.srv.Shutdown(ctx)) // sends what is queued
	st, ok := callbacks.PulumiLogStats(h.srv)
	require.True(t, ok)
	assert.Equal(t, calllog.Stats{Sent: 14}, st)

	byToken := map[string]*loggedCall{}
	for _, c := range callsByID(t, f.received()) {
		byToken[c.start[calllog.AttrToken].(string)] = c
	}
	require.Len(t, byToken, 7)

	c := byToken[hook.Token]
	assert.Equal(t, "resource_hook", c.start[calllog.AttrKind])
	assert.Equal(t, "audit", c.start[calllog.AttrName])
	assert.Equal(t, hookURN, c.start[calllog.AttrURN])
	assert.Equal(t, "aws:s3/bucket:Bucket", c.start[calllog.AttrType])
	assert.Equal(t, "logs", c.start[calllog.AttrResName])
	assert.Contains(t, c.start[calllog.AttrSite], "helpers_test.go:", "the line that registered it: mustRegister's")
	assert.Equal(t, "ok", c.end[calllog.AttrOutcome])
	assert.Equal(t, "OK", c.end[calllog.AttrCode])
	assert.Contains(t, c.end, calllog.AttrDurationMS)
	assert.NotContains(t, c.end, calllog.AttrError)

	c = byToken[refusing.Token]
	assert.Equal(t, "error", c.end[calllog.AttrOutcome], "a hook that answers with its error failed")
	assert.Equal(t, "OK", c.end[calllog.AttrCode])
	assert.Equal(t, "not on Sundays", c.end[calllog.AttrError])

	c = byToken[errHook.Token]
	assert.Equal(t, "error_hook", c.start[calllog.AttrKind])
	assert.Equal(t, int64(1), c.start[calllog.AttrAttempt])
	assert.Equal(t, "error", c.end[calllog.AttrOutcome])
	assert.Equal(t, "UNKNOWN", c.end[calllog.AttrCode])
	assert.Contains(t, c.end[calllog.AttrError], "no retry today")

	c = byToken[transform.Token]
	assert.Equal(t, "resource_transform", c.start[calllog.AttrKind])
	assert.Equal(t, "random:index/randomPet:RandomPet", c.start[calllog.AttrType])
	assert.Equal(t, "pet", c.start[calllog.AttrResName])
	assert.Equal(t, "ok", c.end[calllog.AttrOutcome])

	c = byToken[invoke.Token]
	assert.Equal(t, "invoke_transform", c.start[calllog.AttrKind])
	assert.Equal(t, "aws:index/getRegion:getRegion", c.start[calllog.AttrType])

	c = byToken[migration.Token]
	assert.Equal(t, "state_migration", c.start[calllog.AttrKind])
	assert.Equal(t, "v2", c.start[calllog.AttrName])
	assert.Equal(t, hookURN, c.start[calllog.AttrURN])
	assert.Equal(t, "ok", c.end[calllog.AttrOutcome])

	c = byToken["no-such-token"]
	assert.Equal(t, "unknown", c.start[calllog.AttrKind])
	assert.Equal(t, "NOT_FOUND", c.end[calllog.AttrCode])
}

// A receiver that never answers holds up no call: every call returns
// while the receiver still holds the first send, the records that do not
// fit the queue are dropped and counted, and Shutdown ends within the
// flush bound, counting the rest as failed or dropped. Nothing here
// depends on how fast the machine is: the receiver answers only when the
// test ends.
func TestPulumiLogNeverHoldsUpACall(t *testing.T) {
	f := startReceiver(t, true)
	const queue = 4
	l := calllog.DefaultLimits
	l.Queue, l.Batch, l.ExportTimeout, l.FlushTimeout = queue, 2, hangBound, time.Millisecond
	pulumiLogTo(t, f, l)
	h := serve(t, callbacks.WithLogger(discardLogger()))
	ctx := testCtx(t)
	hook := mustRegister(t, h.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, nil
	}), callbacks.Name("audit"))
	req := hookRequest(t)
	// A transform's records hold its payloads while queued.
	tr := mustRegister(t, h.srv, callbacks.ResourceTransform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return &pulumirpc.TransformResponse{Properties: mustStruct(t, map[string]any{"x": "changed"})}, nil
	}))
	trReq := mustMarshal(t, &pulumirpc.TransformRequest{Name: "pet", Properties: mustStruct(t, map[string]any{"x": "y"})})

	_, err := h.invoke(ctx, hook.Token, req)
	require.NoError(t, err)
	select {
	case <-f.arrived: // the exporter's goroutine is stuck in its first send
	case <-ctx.Done():
		t.Fatal("the receiver got no export")
	}
	const calls = 20
	for i := range calls {
		tok, payload := hook.Token, req
		if i%2 == 0 {
			tok, payload = tr.Token, trReq
		}
		_, err := h.invoke(ctx, tok, payload) // returns although the receiver never answers
		require.NoError(t, err)
	}
	st, _ := callbacks.PulumiLogStats(h.srv)
	// The first send holds one or two records, the queue at most four of
	// the rest (one may be the first call's end, taken or not).
	assert.GreaterOrEqual(t, st.Dropped, uint64(2*calls-queue-1), "the records that did not fit are counted")
	assert.Zero(t, st.Sent)

	require.NoError(t, h.srv.Shutdown(ctx)) // bounded by the flush limit, not by the receiver
	st, _ = callbacks.PulumiLogStats(h.srv)
	assert.Zero(t, st.Sent)
	assert.Equal(t, uint64(2*(calls+1)), st.Dropped+st.Failed, "every record is accounted for: %+v", st)
	assert.Zero(t, st.Held, "the bytes the dropped records held are given back")
	assert.Empty(t, f.received())
}

// Without PULUMI_LOG_OTLP_ENDPOINT a server makes no exporter and dials
// nothing; WithoutPulumiLog and CALLBACKS_PULUMI_LOG=off turn the records
// off when it is set.
func TestPulumiLogOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint bool
		switchTo string
		opts     []callbacks.ServerOption
	}{
		{name: "variable absent"},
		{name: "WithoutPulumiLog", endpoint: true, opts: []callbacks.ServerOption{callbacks.WithoutPulumiLog()}},
		{name: "CALLBACKS_PULUMI_LOG=off", endpoint: true, switchTo: "off"},
		{name: "CALLBACKS_PULUMI_LOG=OFF", endpoint: true, switchTo: "OFF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startReceiver(t, false)
			pulumiLogTo(t, f, patientLimits)
			if !tc.endpoint {
				t.Setenv(calllog.EndpointEnv, "")
			}
			t.Setenv(calllog.SwitchEnv, tc.switchTo)
			h := serve(t, append([]callbacks.ServerOption{callbacks.WithLogger(discardLogger())}, tc.opts...)...)
			ctx := testCtx(t)
			hook := mustRegister(t, h.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				return nil, nil
			}))
			_, err := h.invoke(ctx, hook.Token, hookRequest(t))
			require.NoError(t, err)
			require.NoError(t, h.srv.Shutdown(ctx))
			_, ok := callbacks.PulumiLogStats(h.srv)
			assert.False(t, ok, "the server has an exporter")
			assert.Zero(t, f.accepted.Load(), "connections to the receiver")
		})
	}
}

// Hundreds of servers, each recording its call, leave no connection
// behind (nor, by the package's leak check, any goroutine), and each
// sends its records before its Shutdown returns.
func TestPulumiLogManyServersLeaveNothing(t *testing.T) {
	f := startReceiver(t, false)
	pulumiLogTo(t, f, patientLimits)
	ctx := testCtx(t)
	const servers = 200
	for range servers {
		srv, err := callbacks.Listen(callbacks.WithLogger(discardLogger()))
		require.NoError(t, err)
		tok, err := srv.Registry().Register(callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
			return nil, nil
		}))
		require.NoError(t, err)
		_, err = srv.Registry().Invoke(ctx, tok, hookRequest(t))
		require.NoError(t, err)
		require.NoError(t, srv.Shutdown(ctx))
	}
	assert.Len(t, f.received(), 2*servers, "every server sent both records of its call before its Shutdown returned")
	assert.EqualValues(t, servers, f.accepted.Load(), "one connection per server")
	waitFor(t, func() bool { return f.open.Load() == 0 }) // the test's deadline is the verdict on a leak
}

// secretOf is a property value's secret holding v.
func secretOf(v any) map[string]any {
	return map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": v}
}

// changesOf is what a finished record says the call changed.
func changesOf(t *testing.T, end map[string]any) []calllog.Change {
	t.Helper()
	text, ok := end[calllog.AttrChanges].(string)
	require.True(t, ok, "no changes in %v", end)
	var out []calllog.Change
	require.NoError(t, json.Unmarshal([]byte(text), &out))
	return out
}

// The finished record of a transform, an invoke transform and a migration
// says what each changed, by path, a secret as [secret]; a transform that
// answered "no change" says so; a hook's and a failed call's say nothing
// of changes; and with CALLBACKS_PULUMI_LOG=payloads every record holds
// the call's request and answer, no secret's value in them.
func TestPulumiLogRecordsChanges(t *testing.T) {
	for _, payloads := range []bool{false, true} {
		t.Run(map[bool]string{false: "changes", true: "payloads"}[payloads], func(t *testing.T) {
			f := startReceiver(t, false)
			pulumiLogTo(t, f, patientLimits)
			if payloads {
				t.Setenv(calllog.SwitchEnv, "Payloads")
			}
			h := serve(t, callbacks.WithLogger(discardLogger()))
			ctx := testCtx(t)
			const secret = "hunter2-secret-value"

			tag := mustRegister(t, h.srv, callbacks.ResourceTransform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				props := req.GetProperties().AsMap()
				props["tags"] = map[string]any{"team": "platform"}
				props["password"] = secretOf(secret + "-new")
				return &pulumirpc.TransformResponse{Properties: mustStruct(t, props),
					Options: &pulumirpc.TransformResourceOptions{Protect: proto.Bool(true)}}, nil
			}), callbacks.Name("tag"))
			noop := mustRegister(t, h.srv, callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return nil, nil
			}))
			failing := mustRegister(t, h.srv, callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return nil, errors.New("no")
			}))
			region := mustRegister(t, h.srv, callbacks.InvokeTransform(func(_ context.Context, req *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				return &pulumirpc.TransformInvokeResponse{Args: mustStruct(t, map[string]any{"region": "eu-west-1"})}, nil
			}))
			migrate := mustRegister(t, h.srv, callbacks.StateMigration(func(_ context.Context, req *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
				return &pulumirpc.StateMigrationResponse{NewState: []byte(`[{"urn":"` + hookURN + `","outputs":{"size":2}}]`)}, nil
			}), callbacks.Name("v2"))
			hook := mustRegister(t, h.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				return nil, nil
			}), callbacks.Name("audit"))
			refuse := mustRegister(t, h.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				return &pulumirpc.ResourceHookResponse{Error: "frozen"}, nil
			}), callbacks.Name("freeze"))

			given := &pulumirpc.TransformRequest{Type: "random:index/randomPet:RandomPet", Name: "pet",
				Properties: mustStruct(t, map[string]any{"length": 2.0, "password": secretOf(secret)})}
			for _, tok := range []string{tag.Token, noop.Token} {
				_, err := h.call(ctx, tok, given)
				require.NoError(t, err)
			}
			_, err := h.call(ctx, failing.Token, given)
			require.Error(t, err)
			_, err = h.call(ctx, region.Token, &pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion",
				Args: mustStruct(t, map[string]any{"region": "us-east-1"})})
			require.NoError(t, err)
			_, err = h.srv.Registry().Invoke(ctx, migrate.Token, mustMarshal(t, &pulumirpc.StateMigrationRequest{Urn: hookURN,
				OldState: []byte(`[{"urn":"` + hookURN + `","outputs":{"size":1}}]`)}))
			require.NoError(t, err)
			_, err = h.invoke(ctx, hook.Token, hookRequest(t))
			require.NoError(t, err)
			_, err = h.invoke(ctx, refuse.Token, hookRequest(t))
			require.NoError(t, err)
			require.NoError(t, h.srv.Shutdown(ctx))

			byToken := map[string]*loggedCall{}
			for _, c := range callsByID(t, f.received()) {
				byToken[c.start[calllog.AttrToken].(string)] = c
				for k, v := range c.end {
					if s, ok := v.(string); ok && strings.Contains(s, secret) {
						t.Errorf("the record's %s holds the secret: %s", k, s)
					}
				}
			}
			assert.Equal(t, []calllog.Change{
				{Path: "properties.password", Old: "[secret]", New: "[another secret]"},
				{Path: "properties.tags", New: `{"team": "platform"}`},
				{Path: "options.protect", New: "true"},
			}, changesOf(t, byToken[tag.Token].end))
			assert.Empty(t, changesOf(t, byToken[noop.Token].end))
			assert.Equal(t, calllog.NoteEmptyAnswer, byToken[noop.Token].end[calllog.AttrChangesNote])
			assert.NotContains(t, byToken[failing.Token].end, calllog.AttrChanges, "a failed call changed nothing")
			assert.Equal(t, []calllog.Change{{Path: "args.region", Old: `"us-east-1"`, New: `"eu-west-1"`}},
				changesOf(t, byToken[region.Token].end))
			assert.Equal(t, []calllog.Change{{Path: "state[0].outputs.size", Old: "1", New: "2"}},
				changesOf(t, byToken[migrate.Token].end))
			assert.NotContains(t, byToken[hook.Token].end, calllog.AttrChanges)
			for _, c := range byToken {
				assert.NotContains(t, c.start, calllog.AttrChanges, "a start record says nothing of changes")
			}

			tagEnd := byToken[tag.Token].end
			if !payloads {
				assert.NotContains(t, tagEnd, calllog.AttrRequest)
				assert.NotContains(t, tagEnd, calllog.AttrAnswer)
				return
			}
			var req, answer map[string]any
			require.NoError(t, json.Unmarshal([]byte(tagEnd[calllog.AttrRequest].(string)), &req))
			require.NoError(t, json.Unmarshal([]byte(tagEnd[calllog.AttrAnswer].(string)), &answer))
			assert.Equal(t, "pet", req["name"])
			assert.Equal(t, secretOf("[secret]"), req["properties"].(map[string]any)["password"])
			assert.Equal(t, map[string]any{"team": "platform"}, answer["properties"].(map[string]any)["tags"])
			assert.Contains(t, byToken[hook.Token].end, calllog.AttrRequest, "with payloads, a hook's too")
			assert.Equal(t, "{}", byToken[noop.Token].end[calllog.AttrAnswer], "an empty answer is the empty message")
			refused := byToken[refuse.Token].end
			assert.Equal(t, "error", refused[calllog.AttrOutcome], "a hook that refused failed")
			assert.JSONEq(t, `{"error": "frozen"}`, refused[calllog.AttrAnswer].(string), "a refusal's answer is recorded")
			assert.NotContains(t, byToken[failing.Token].end, calllog.AttrAnswer, "a call that failed answered nothing")
			assert.Contains(t, byToken[failing.Token].end, calllog.AttrRequest, "what it was asked is recorded")
		})
	}
}

// A call whose payloads would pass the bound on the bytes the queued
// records hold is recorded without its changes, and says why; the bytes
// are given back once its records are made, so the next call fits.
func TestPulumiLogPayloadTooLarge(t *testing.T) {
	f := startReceiver(t, false)
	l := patientLimits
	l.Held = 4 << 10
	pulumiLogTo(t, f, l)
	h := serve(t, callbacks.WithLogger(discardLogger()))
	ctx := testCtx(t)
	tr := mustRegister(t, h.srv, callbacks.ResourceTransform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		props := req.GetProperties().AsMap()
		props["x"] = "changed"
		return &pulumirpc.TransformResponse{Properties: mustStruct(t, props)}, nil
	}))
	big := &pulumirpc.TransformRequest{Name: "big", Properties: mustStruct(t, map[string]any{"blob": strings.Repeat("b", 8<<10)})}
	small := &pulumirpc.TransformRequest{Name: "small", Properties: mustStruct(t, map[string]any{"x": "y"})}
	for _, req := range []*pulumirpc.TransformRequest{big, small} {
		_, err := h.call(ctx, tr.Token, req)
		require.NoError(t, err)
	}
	require.NoError(t, h.srv.Shutdown(ctx))
	var notes []any
	var changes []string
	for _, r := range f.received() {
		a := attrsOf(r)
		if r.GetBody().GetStringValue() != calllog.FinishedBody {
			continue
		}
		notes = append(notes, a[calllog.AttrChangesNote])
		if c, ok := a[calllog.AttrChanges].(string); ok {
			changes = append(changes, c)
		}
	}
	assert.Equal(t, []any{calllog.NoteTooLarge, nil}, notes)
	assert.Equal(t, []string{`[{"path":"properties.x","old":"\"y\"","new":"\"changed\""}]`}, changes)
}

// With no receiver listening at the address (the CLI gone), every call
// still answers, its records fail and are counted, and what they held is
// given back.
func TestPulumiLogAbsentReceiver(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := &fakeReceiver{addr: lis.Addr().String()}
	require.NoError(t, lis.Close())
	pulumiLogTo(t, gone, patientLimits)
	h := serve(t, callbacks.WithLogger(discardLogger()))
	ctx := testCtx(t)
	tr := mustRegister(t, h.srv, callbacks.ResourceTransform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		return &pulumirpc.TransformResponse{Properties: mustStruct(t, map[string]any{"x": "changed"})}, nil
	}))
	const calls = 10
	for range calls {
		_, err := h.call(ctx, tr.Token, &pulumirpc.TransformRequest{Name: "pet", Properties: mustStruct(t, map[string]any{"x": "y"})})
		require.NoError(t, err)
	}
	require.NoError(t, h.srv.Shutdown(ctx))
	st, ok := callbacks.PulumiLogStats(h.srv)
	require.True(t, ok)
	assert.Zero(t, st.Sent)
	assert.Equal(t, uint64(2*calls), st.Failed+st.Dropped, "%+v", st)
	assert.Zero(t, st.Held)
}

// BenchmarkInvokePulumiLogTransform serves a resource transform that adds
// a tag, on bufconn, one call at a time, with PULUMI_LOG_OTLP_ENDPOINT
// absent, present (the records say what the call changed) and present with
// CALLBACKS_PULUMI_LOG=payloads, pointing at a receiver that keeps
// nothing. dropped/op counts the records the queue could not hold.
func BenchmarkInvokePulumiLogTransform(b *testing.B) {
	tag := callbacks.ResourceTransform(func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		props := r.GetProperties()
		if props.GetFields() == nil {
			props = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		}
		props.Fields["team"] = structpb.NewStringValue("platform")
		return &pulumirpc.TransformResponse{Properties: props, Options: r.GetOptions()}, nil
	})
	for _, size := range []string{"small", "medium"} {
		for _, mode := range []string{"absent", "present", "payloads"} {
			b.Run(size+"/"+mode, func(b *testing.B) {
				b.Setenv(calllog.EndpointEnv, "")
				b.Setenv(calllog.SwitchEnv, "")
				if mode != "absent" {
					b.Setenv(calllog.EndpointEnv, startDiscardingReceiver(b))
				}
				if mode == "payloads" {
					b.Setenv(calllog.SwitchEnv, calllog.PayloadsOn)
				}
				h := serve(b)
				cb, err := h.srv.Register(context.Background(), tag)
				if err != nil {
					b.Fatal(err)
				}
				req := &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: benchdata.Marshal(benchdata.TransformRequest(size))}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if _, err := h.client.Invoke(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if st, ok := callbacks.PulumiLogStats(h.srv); ok {
					b.ReportMetric(float64(st.Dropped)/float64(b.N), "dropped/op")
				} else if mode != "absent" {
					b.Fatal("no exporter with the variable present")
				}
			})
		}
	}
}
