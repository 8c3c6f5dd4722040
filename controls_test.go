package callbacks_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func TestWarningsReachEngineLogWithURN(t *testing.T) {
	t.Parallel()
	fake, addr := startEngineLog(t)
	eng := serve(t, callbacks.EngineAddress(addr))
	srv := eng.srv
	cb, err := srv.Register(context.Background(), callbacks.ResourceHook(func(ctx context.Context, _ *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		callbacks.Warn(ctx, "bucket has no lifecycle rule")
		callbacks.Info(ctx, "checked 3 rules")
		return nil, nil
	}))
	require.NoError(t, err)
	_, err = eng.invoke(context.Background(), cb.Token, hookRequest(t))
	require.NoError(t, err)
	logs := fake.recorded()
	require.Len(t, logs, 2)
	assert.Equal(t, pulumirpc.LogSeverity_WARNING, logs[0].GetSeverity())
	assert.Equal(t, "bucket has no lifecycle rule", logs[0].GetMessage())
	assert.Equal(t, hookURN, logs[0].GetUrn())
	assert.Equal(t, pulumirpc.LogSeverity_INFO, logs[1].GetSeverity())
	assert.Equal(t, hookURN, logs[1].GetUrn())
}

func TestFailOpen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fn       func(context.Context) error
		opts     []callbacks.RegisterOption
		wantCode codes.Code
		warnings int
	}{
		{name: "panic fails open", fn: func(context.Context) error { panic("boom") },
			opts: []callbacks.RegisterOption{callbacks.FailOpen()}, wantCode: codes.OK, warnings: 1},
		{name: "deadline fails open", fn: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			opts: []callbacks.RegisterOption{callbacks.FailOpen(), callbacks.Timeout(20 * time.Millisecond)}, wantCode: codes.OK, warnings: 1},
		{name: "an error on purpose still fails", fn: func(context.Context) error { return status.Error(codes.Aborted, "no") },
			opts: []callbacks.RegisterOption{callbacks.FailOpen()}, wantCode: codes.Aborted},
		{name: "panic fails closed by default", fn: func(context.Context) error { panic("boom") }, wantCode: codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake, addr := startEngineLog(t)
			eng := serve(t, callbacks.EngineAddress(addr))
			srv := eng.srv
			cb, err := srv.Register(context.Background(), callbacks.ResourceTransform(func(ctx context.Context, _ *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return &pulumirpc.TransformResponse{Properties: mustStruct(t, map[string]any{"changed": true})}, tt.fn(ctx)
			}), append(tt.opts, callbacks.Name("tagger"))...)
			require.NoError(t, err)
			out, err := eng.call(context.Background(), cb.Token, &pulumirpc.TransformRequest{Type: "t", Name: "n"})
			require.Equal(t, tt.wantCode, status.Code(err), "%v", err)
			if tt.wantCode == codes.OK {
				assert.Empty(t, out, "fail-open sends the empty response: no change")
			}
			var warnings []*pulumirpc.LogRequest
			for _, l := range fake.recorded() {
				if l.GetSeverity() != pulumirpc.LogSeverity_DEBUG { // a panic's stack
					warnings = append(warnings, l)
				}
			}
			require.Len(t, warnings, tt.warnings)
			for _, l := range warnings {
				assert.Equal(t, pulumirpc.LogSeverity_WARNING, l.GetSeverity())
				assert.Contains(t, l.GetMessage(), `resource transform "tagger" failed open`)
			}
		})
	}
}

type recordingObserver struct {
	mu       sync.Mutex
	started  []callbacks.CallInfo
	finished []finishedCall
}

type finishedCall struct {
	info callbacks.CallInfo
	code codes.Code
}

func (o *recordingObserver) CallStarted(_ context.Context, info callbacks.CallInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, info)
}

func (o *recordingObserver) CallFinished(_ context.Context, info callbacks.CallInfo, code codes.Code, elapsed time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if elapsed < 0 {
		code = codes.DataLoss // never expected: makes the test fail
	}
	o.finished = append(o.finished, finishedCall{info, code})
}

func TestObserverSeesEveryCallOnceWithItsCode(t *testing.T) {
	t.Parallel()
	obs := &recordingObserver{}
	eng := serve(t, callbacks.WithObserver(obs))
	srv := eng.srv
	ok, err := srv.Register(context.Background(), hook(func() error { return nil }), callbacks.Name("ok"))
	require.NoError(t, err)
	bad, err := srv.Register(context.Background(), hook(func() error { return status.Error(codes.FailedPrecondition, "no") }), callbacks.Name("bad"))
	require.NoError(t, err)
	req := hookRequest(t)
	_, _ = eng.invoke(context.Background(), ok.Token, req)
	_, _ = eng.invoke(context.Background(), bad.Token, req)
	_, _ = eng.invoke(context.Background(), "not-a-token", req)
	_, _ = eng.invoke(context.Background(), ok.Token, []byte{0xff})

	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.started, 4)
	require.Len(t, obs.finished, 4)
	want := []struct {
		name string
		code codes.Code
	}{{"ok", codes.OK}, {"bad", codes.FailedPrecondition}, {"", codes.NotFound}, {"ok", codes.InvalidArgument}}
	for i, w := range want {
		assert.Equal(t, w.name, obs.finished[i].info.Name, "call %d", i)
		assert.Equal(t, w.code, obs.finished[i].code, "call %d", i)
	}
	assert.Equal(t, hookURN, obs.finished[0].info.URN, "finished info has the resource from the request")
	assert.Equal(t, callbacks.KindResourceHook, obs.finished[0].info.Kind)
}

func TestCallInfoInContext(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	reg := newTestRegistry(t, callbacks.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	got := make(chan callbacks.CallInfo, 1)
	// An error hook whose decoder knows the deployment is a preview, as
	// those of package hooks do.
	decode := func(_ context.Context, payload []byte, _ bool, info *callbacks.CallInfo) (*pulumirpc.ErrorHookRequest, error) {
		req := &pulumirpc.ErrorHookRequest{}
		err := proto.Unmarshal(payload, req)
		info.URN, info.Type, info.ResourceName = req.GetUrn(), req.GetType(), req.GetName()
		info.Attempt, info.DryRun = len(req.GetErrors()), true
		return req, err
	}
	encode := func(_ context.Context, _ *pulumirpc.ErrorHookRequest, res *pulumirpc.ErrorHookResponse) ([]byte, error) {
		return proto.Marshal(res)
	}
	tok, err := reg.Register(callbacks.NewFunc(callbacks.KindErrorHook, decode, func(ctx context.Context, _ *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
		info, ok := callbacks.CallInfoFrom(ctx)
		require.True(t, ok)
		callbacks.Logger(ctx).Info("logger is tagged")
		got <- info
		return &pulumirpc.ErrorHookResponse{Retry: true}, nil
	}, encode), callbacks.Name("retry-transient"), callbacks.Timeout(time.Minute))
	require.NoError(t, err)
	req, _ := proto.Marshal(&pulumirpc.ErrorHookRequest{Urn: hookURN, Type: "aws:s3/bucket:Bucket", Name: "logs",
		FailedOperation: "create", Errors: []string{"second failure", "first failure"}})
	_, err = reg.Invoke(context.Background(), tok, req)
	require.NoError(t, err)
	info := <-got
	assert.Equal(t, callbacks.KindErrorHook, info.Kind)
	assert.Equal(t, "retry-transient", info.Name)
	assert.Equal(t, tok, info.Token)
	assert.Equal(t, hookURN, info.URN)
	assert.Equal(t, "logs", info.ResourceName)
	assert.True(t, info.DryRun)
	assert.Equal(t, 2, info.Attempt)
	assert.False(t, info.Deadline.IsZero())
	assert.True(t, info.AcceptsByteStrings, "byte strings are accepted by default")
	for _, attr := range []string{`kind="error hook"`, "token=" + tok, "name=retry-transient", "urn=" + hookURN,
		"resource=logs", "dry_run=true", "attempt=2"} {
		assert.Contains(t, logged.String(), attr, "Logger does not tag its records with the call")
	}

	refuse, err := reg.Register(callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
		info, _ := callbacks.CallInfoFrom(ctx)
		got <- info
		return nil, nil
	}), callbacks.AcceptsByteStrings(false))
	require.NoError(t, err)
	_, err = reg.Invoke(context.Background(), refuse, nil)
	require.NoError(t, err)
	assert.False(t, (<-got).AcceptsByteStrings, "the registration's choice reaches the call")

	_, ok := callbacks.CallInfoFrom(context.Background())
	assert.False(t, ok)
}

func TestKindTimeoutAppliesToThatKindOnly(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, callbacks.KindTimeout(callbacks.KindResourceHook, 20*time.Millisecond))
	block := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	hookTok, err := reg.Register(callbacks.ResourceHook(func(ctx context.Context, _ *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, block(ctx)
	}))
	require.NoError(t, err)
	_, err = reg.Invoke(context.Background(), hookTok, nil)
	require.ErrorIs(t, err, callbacks.ErrTimeout)

	rawTok, err := reg.Register(callbacks.Raw(func(ctx context.Context, _ []byte) ([]byte, error) {
		_, has := ctx.Deadline()
		if has {
			return nil, status.Error(codes.Internal, "raw callbacks must have no deadline here")
		}
		return nil, nil
	}))
	require.NoError(t, err)
	_, err = reg.Invoke(context.Background(), rawTok, nil)
	require.NoError(t, err)
}

func TestHealthServingThenNotServingDuringShutdown(t *testing.T) {
	t.Parallel()
	eng := serve(t)
	srv := eng.srv
	health := healthpb.NewHealthClient(eng.conn)
	res, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, res.GetStatus())
	res, err = health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "pulumirpc.Callbacks"})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, res.GetStatus())

	// A watcher must not hold up Shutdown.
	watch, err := health.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	first, err := watch.Recv()
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, first.GetStatus())

	release := make(chan struct{})
	entered := make(chan struct{})
	cb, err := srv.Register(context.Background(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		close(entered)
		<-release
		return nil, nil
	}))
	require.NoError(t, err)
	call := make(chan error, 1)
	go func() { _, err := eng.invoke(context.Background(), cb.Token, nil); call <- err }()
	<-entered
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(context.Background()) }()
	waitFor(t, func() bool {
		res, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{})
		return err == nil && res.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING
	})
	next, err := watch.Recv()
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, next.GetStatus())
	close(release)
	require.NoError(t, <-call)
	require.NoError(t, <-shutdown)
}
