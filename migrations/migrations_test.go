package migrations_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/internal/testkit/leakcheck"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
)

func TestMain(m *testing.M) {
	// The engine simulator links the SDK's property marshalling, and with
	// it glog, whose flush daemon runs for the life of the process.
	leakcheck.Main(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

const (
	urnOld    = "urn:pulumi:dev::proj::my:index:Bucket::logs"
	urnChild  = "urn:pulumi:dev::proj::my:index:Bucket$my:index:Policy::logs-policy"
	urnNew    = "urn:pulumi:dev::proj::my:index:BucketV2::logs"
	urnOther  = "urn:pulumi:dev::proj::my:index:Other::x"
	secretSig = "1b47061264138c4ac30d75fd1eb44270"
)

// oldState is a checkpoint excerpt as the engine sends it: the resource,
// then its child, with a secret in plaintext inside its envelope and numbers
// that float64 cannot hold exactly.
const oldState = `[
 {"urn": "` + urnOld + `", "custom": true, "id": "logs-1", "type": "my:index:Bucket",
  "inputs": {"size": 12345678901234567890, "ratio": 0.1000000000000000055511151231257827,
             "key": {"4dabf18193072939515e22adb298388d": "` + secretSig + `", "plaintext": "\"hunter2\""}},
  "outputs": {"arn": "arn:1"}},
 {"urn": "` + urnChild + `", "custom": true, "id": "p-1", "type": "my:index:Policy", "parent": "` + urnOld + `"}
]`

// invoke calls cb over gRPC as the engine would.
func invoke(t *testing.T, cb *pulumirpc.Callback, req *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
	t.Helper()
	var resp pulumirpc.StateMigrationResponse
	if err := wiretest.Call(t, cb, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

func TestMigration(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)

	tests := []struct {
		name     string
		result   func(t *testing.T) *migrations.Result
		err      error
		want     *pulumirpc.StateMigrationResponse
		wantCode codes.Code
		wantMsg  []string
	}{
		{name: "nil-result-means-unchanged", result: func(*testing.T) *migrations.Result { return nil }, want: &pulumirpc.StateMigrationResponse{}},
		{name: "empty-result-means-unchanged", result: func(*testing.T) *migrations.Result { return &migrations.Result{} }, want: &pulumirpc.StateMigrationResponse{}},
		{
			name:   "state-rewritten-in-place",
			result: func(t *testing.T) *migrations.Result { return &migrations.Result{NewState: json.RawMessage(oldState)} },
			want:   &pulumirpc.StateMigrationResponse{NewState: []byte(oldState)},
		},
		{
			name: "child-dropped-without-successor",
			result: func(*testing.T) *migrations.Result {
				return &migrations.Result{NewState: json.RawMessage(`[{"urn": "` + urnOld + `", "custom": true, "id": "logs-1", "type": "my:index:Bucket"}]`)}
			},
			wantCode: codes.Internal, wantMsg: []string{"invalid callback result", "the result breaks the rule unaccounted: did not account for resource " + urnChild},
		},
		{
			name: "function-error", result: func(*testing.T) *migrations.Result { return nil },
			err: errors.New("cannot migrate"), wantCode: codes.Unknown, wantMsg: []string{"cannot migrate"},
		},
		{
			name: "function-status", result: func(*testing.T) *migrations.Result { return nil },
			err: status.Error(codes.FailedPrecondition, "too old"), wantCode: codes.FailedPrecondition, wantMsg: []string{"too old"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var seen *migrations.Args
			cb, err := srv.Register(context.Background(), migrations.Adapt(func(_ context.Context, a *migrations.Args) (*migrations.Result, error) {
				mu.Lock()
				seen = a
				mu.Unlock()
				return tt.result(t), tt.err
			}), callbacks.Name("bucket-v2"))
			require.NoError(t, err)

			resp, err := invoke(t, cb, &pulumirpc.StateMigrationRequest{Urn: urnOld, OldState: []byte(oldState)})
			mu.Lock()
			a := seen
			mu.Unlock()
			require.NotNil(t, a, "the migration must have been called")
			assert.Equal(t, urnOld, string(a.URN))
			assert.Equal(t, oldState, string(a.OldState), "the old state must reach the function byte for byte")

			if tt.want == nil {
				require.Error(t, err)
				assert.Equal(t, tt.wantCode, status.Code(err), "error: %v", err)
				for _, w := range tt.wantMsg {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			if !proto.Equal(tt.want, resp) {
				t.Fatalf("response differs\ngot:\n%s\nwant:\n%s", prototext.Format(resp), prototext.Format(tt.want))
			}
		})
	}
}

func TestArgsResources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		state   string
		check   func(t *testing.T, rs []map[string]any)
		wantErr string
	}{
		{
			name:  "checkpoint",
			state: oldState,
			check: func(t *testing.T, rs []map[string]any) {
				require.Len(t, rs, 2)
				assert.Equal(t, urnOld, rs[0]["urn"])
				inputs := rs[0]["inputs"].(map[string]any)
				assert.Equal(t, json.Number("12345678901234567890"), inputs["size"], "integers must keep every digit")
				assert.Equal(t, json.Number("0.1000000000000000055511151231257827"), inputs["ratio"])
				key := inputs["key"].(map[string]any)
				assert.Equal(t, secretSig, key["4dabf18193072939515e22adb298388d"])
				assert.Equal(t, `"hunter2"`, key["plaintext"])
				assert.Equal(t, urnOld, rs[1]["parent"])
			},
		},
		{name: "empty-array", state: `[]`, check: func(t *testing.T, rs []map[string]any) { assert.Empty(t, rs) }},
		{name: "not-json", state: `[{`, wantErr: "decoding the state"},
		{name: "not-an-array", state: `{}`, wantErr: "decoding the state"},
		{name: "trailing-data", state: `[] []`, wantErr: "data after the JSON array"},
		{name: "empty", state: ``, wantErr: "decoding the state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rs, err := (&migrations.Args{OldState: json.RawMessage(tt.state)}).Resources()
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, rs)
		})
	}
}

// TestReplaceKeepsNumbers decodes, edits and re-encodes a state: numbers
// decoded as json.Number are written back with every digit.
func TestReplaceKeepsNumbers(t *testing.T) {
	t.Parallel()
	rs, err := (&migrations.Args{OldState: json.RawMessage(oldState)}).Resources()
	require.NoError(t, err)
	rs[0]["urn"] = urnNew
	res, err := migrations.Replace(rs, map[string]string{urnOld: urnNew})
	require.NoError(t, err)
	assert.Contains(t, string(res.NewState), `"size":12345678901234567890`)
	assert.Contains(t, string(res.NewState), `"ratio":0.1000000000000000055511151231257827`)
	assert.Equal(t, map[string]string{urnOld: urnNew}, res.Successors)

	empty, err := migrations.Replace(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(empty.NewState), "an empty state is an empty array, not null")
}

func TestCallbackArguments(t *testing.T) {
	t.Parallel()
	mon := monitortest.Serve(t, &monitortest.Fake{})
	srv := mon.Server()
	noop := func(context.Context, *migrations.Args) (*migrations.Result, error) { return nil, nil }
	_, err := migrations.Callback(t.Context(), nil, noop)
	assert.ErrorIs(t, err, callbacks.ErrNilArgument)
	_, err = migrations.Callback(t.Context(), mon, nil)
	assert.ErrorIs(t, err, callbacks.ErrNilFunc)

	cb, err := migrations.Callback(t.Context(), mon, noop, callbacks.Name("v2"))
	require.NoError(t, err)
	kind, name, ok := srv.Registry().Lookup(cb.GetToken())
	require.True(t, ok)
	assert.Equal(t, callbacks.KindStateMigration, kind)
	assert.Equal(t, "v2", name)
	assert.Equal(t, srv.Target(), cb.GetTarget())
}

// A migration registered in a preview is told so: the request does not
// say it, the engine did when the migration was registered.
func TestCallbackDryRun(t *testing.T) {
	t.Parallel()
	for _, preview := range []bool{false, true} {
		info := monitortest.CurrentEngine(monitor.StateMigrations)
		if preview {
			info = monitortest.CurrentPreview(monitor.StateMigrations)
		}
		mon := monitortest.Serve(t, &monitortest.Fake{DeploymentInfo: info})
		got := make(chan callbacks.CallInfo, 1)
		cb, err := migrations.Callback(t.Context(), mon, func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) {
			ci, _ := callbacks.CallInfoFrom(ctx)
			got <- ci
			return nil, nil
		})
		require.NoError(t, err)
		_, err = invoke(t, cb, &pulumirpc.StateMigrationRequest{Urn: urnOld, OldState: []byte(oldState)})
		require.NoError(t, err)
		if ci := <-got; ci.DryRun != preview {
			t.Errorf("preview %v: CallInfo.DryRun = %v", preview, ci.DryRun)
		}
	}
}

// TestFeatureCheck runs the feature check against the simulated engine in each of
// the states the real engine can be in.
func TestFeatureCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []enginetest.Option
		wantErr bool
	}{
		{"3.274.1", nil, false},
		{"3.260.0", []enginetest.Option{enginetest.EngineVersion("3.260.0")}, true},
		{"old-engine", []enginetest.Option{enginetest.OldEngine()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := enginetest.Start(tt.opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			mon, err := monitor.Dial(e.MonitorAddr(), wiretest.Listen(t))
			require.NoError(t, err)

			err = mon.Require(t.Context(), monitor.StateMigrations)
			if !tt.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, monitor.ErrMissingFeature)
			assert.Contains(t, err.Error(), "STATE_MIGRATIONS")
		})
	}
}

// TestRegistrationWithMigrations shows why the feature is asked for first: an engine
// without the feature (3.260.0) refuses the registration outright.
func TestRegistrationWithMigrations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     []enginetest.Option
		wantCode codes.Code
	}{
		{"refused-by-3.260.0", []enginetest.Option{enginetest.EngineVersion("3.260.0")}, codes.FailedPrecondition},
		{"accepted-by-3.274.1", nil, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, err := enginetest.Start(tt.opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = e.Close() })
			mon, err := monitor.Dial(e.MonitorAddr(), wiretest.Listen(t))
			require.NoError(t, err)
			srv := wiretest.Listen(t)

			cb, err := srv.Register(context.Background(), migrations.Adapt(func(context.Context, *migrations.Args) (*migrations.Result, error) { return nil, nil }))
			require.NoError(t, err)
			_, err = mon.Client().RegisterResource(t.Context(), &pulumirpc.RegisterResourceRequest{
				Type: "my:index:Bucket", Name: "logs", Custom: true, StateMigrations: []*pulumirpc.Callback{cb},
			})
			assert.Equal(t, tt.wantCode, status.Code(err), "error: %v", err)
		})
	}
}

// TestEngineCallsFromAMigrationFailAtOnce: the engine waits for a
// registration's migrations with its steps paused, so a call to it from
// inside a migration would never be answered. Made with the migration's
// context, it fails at once and says why; the engine gets that error as the
// migration's.
func TestEngineCallsFromAMigrationFailAtOnce(t *testing.T) {
	t.Parallel()
	e, err := enginetest.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	srv := wiretest.Listen(t)
	mon, err := monitor.Dial(e.MonitorAddr(), srv)
	require.NoError(t, err)

	inside := make(chan error, 1)
	cb, err := migrations.Callback(t.Context(), mon, func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) {
		_, err := mon.Client().SupportsFeature(ctx, &pulumirpc.SupportsFeatureRequest{Id: "secrets"})
		inside <- err
		return nil, err
	}, callbacks.Name("greedy"))
	require.NoError(t, err)

	_, err = invoke(t, cb, &pulumirpc.StateMigrationRequest{Urn: urnOld, OldState: []byte(oldState)})
	require.Error(t, err)
	assert.Equal(t, codes.FailedPrecondition, status.Code(err), "error: %v", err)
	assert.Contains(t, err.Error(), `/pulumirpc.ResourceMonitor/SupportsFeature called from inside state migration "greedy" for `+urnOld)
	assert.Contains(t, err.Error(), "would never return")
	assert.ErrorIs(t, <-inside, monitor.ErrCallFromMigration)

	// The same call outside a migration is answered.
	_, err = mon.Client().SupportsFeature(t.Context(), &pulumirpc.SupportsFeatureRequest{Id: "secrets"})
	require.NoError(t, err)
}

// A migration may take the old state as the SDK's checkpoint type and give
// it back the same way: typed fields change, exact numbers and secret
// envelopes survive, and the result passes the engine's rules.
func TestCheckpointRoundTrip(t *testing.T) {
	t.Parallel()
	const urn = "urn:pulumi:dev::proj::my:index:Bucket::logs"
	old := `[{"urn":"` + urn + `","custom":true,"id":"logs-1","type":"my:index:Bucket",` +
		`"inputs":{"size":12345678901234567890,"key":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"hush"}},` +
		`"outputs":{"size":12345678901234567890}}]`
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	token, err := reg.Register(migrations.Adapt(func(_ context.Context, a *migrations.Args) (*migrations.Result, error) {
		rs, err := a.Checkpoint()
		if err != nil {
			return nil, err
		}
		rs[0].Inputs["tier"] = "cold"
		delete(rs[0].Outputs, "size")
		return migrations.ReplaceCheckpoint(rs, nil)
	}))
	require.NoError(t, err)
	payload, err := proto.Marshal(&pulumirpc.StateMigrationRequest{Urn: urn, OldState: []byte(old)})
	require.NoError(t, err)
	out, err := reg.Invoke(t.Context(), token, payload)
	require.NoError(t, err)
	var resp pulumirpc.StateMigrationResponse
	require.NoError(t, proto.Unmarshal(out, &resp))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(resp.GetNewState(), &got))
	require.Len(t, got, 1)
	assert.Equal(t, "logs-1", got[0]["id"])
	assert.Equal(t, "cold", got[0]["inputs"].(map[string]any)["tier"])
	outputs, _ := got[0]["outputs"].(map[string]any)
	assert.NotContains(t, outputs, "size")
	assert.Contains(t, string(resp.GetNewState()), `"size":12345678901234567890`, "the exact number")
	assert.Contains(t, string(resp.GetNewState()), `"value":"hush"`, "the secret envelope")

	empty, err := migrations.ReplaceCheckpoint(nil, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `[]`, string(empty.NewState))
}
