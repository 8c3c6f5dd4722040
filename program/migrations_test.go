package program_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// renameLength renames the input and output "length" of the registering
// resource to "size".
var renameLength = (&migrations.Chain{
	Version: func(r map[string]any) (int, error) {
		if in, _ := r["inputs"].(map[string]any); in["length"] != nil {
			return 0, nil
		}
		return 1, nil
	},
	Upgrades: []migrations.Upgrade{func(_ context.Context, r map[string]any) error {
		for _, k := range []string{"inputs", "outputs"} {
			if p, ok := r[k].(map[string]any); ok {
				p["size"] = p["length"]
				delete(p, "length")
			}
		}
		return nil
	}},
}).Migrate

// thing registers a custom resource with the given migrations through the
// SDK.
func thing(props pulumi.Map, fns ...migrations.Func) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		var opts []pulumi.ResourceOption
		for _, fn := range fns {
			upgrade, err := program.Migrations(ctx, fn)
			if err != nil {
				return err
			}
			opts = append(opts, upgrade)
		}
		var r pulumi.CustomResourceState
		return ctx.RegisterResource("test:index:Thing", "thing", props, &r, opts...)
	}
}

func created(t *testing.T) *enginetest.State {
	t.Helper()
	eng := enginetest.New(t)
	res := eng.Run(t, func() error { return pulumi.RunErr(thing(pulumi.Map{"length": pulumi.Int(2)})) })
	require.NoError(t, res.Err, eng.Trace())
	return res.State
}

// Migrations is the SDK's own StateMigrations option carrying this
// module's migrations: the SDK registers the resource (source position and
// stack trace included), its callback server carries the engine's call to
// the deployment's registry, and the status of an error the module makes
// reaches the engine with its code. This test pins those SDK behaviours:
// it fails when an SDK upgrade changes them.
func TestMigrationsGoThroughTheSDK(t *testing.T) {
	prior := created(t)

	t.Run("applied", func(t *testing.T) {
		eng := enginetest.New(t, enginetest.WithState(prior))
		res := eng.Run(t, func() error { return pulumi.RunErr(thing(pulumi.Map{"size": pulumi.Int(2)}, renameLength)) })
		require.NoError(t, res.Err, eng.Trace())
		urn := eng.URN(eng.StackURN(), "test:index:Thing", "thing")

		var req *pulumirpc.RegisterResourceRequest
		for _, ev := range eng.Events("RegisterResource") {
			if ev.URN == urn {
				req = ev.Request.(*pulumirpc.RegisterResourceRequest)
			}
		}
		require.NotNil(t, req, eng.Trace())
		require.Len(t, req.GetStateMigrations(), 1)
		assert.NotNil(t, req.GetSourcePosition(), "the SDK's registration has a source position")
		assert.NotEmpty(t, req.GetStackTrace().GetFrames(), "the SDK's registration has a stack trace")
		assert.Len(t, eng.Events(enginetest.KindCallback), 1, "one migration call")

		assert.Contains(t, eng.Diagnostics(), enginetest.Diagnostic{Severity: "info", URN: urn,
			Message: "State migration applied (state entries: 1 before, 1 after)."})
		for _, s := range res.Steps {
			if s.URN == urn {
				assert.Equal(t, "same", s.Op, "the migrated state matches the program")
			}
		}
		assert.NotNil(t, res.State.Get(urn).Inputs.GetFields()["size"])
	})

	t.Run("refused-result-keeps-its-code", func(t *testing.T) {
		eng := enginetest.New(t, enginetest.WithState(prior))
		changeID := func(_ context.Context, a *migrations.Args) (*migrations.Result, error) {
			rs, err := a.Resources()
			if err != nil {
				return nil, err
			}
			rs[0]["id"] = "changed-id"
			return migrations.Replace(rs, nil)
		}
		res := eng.Run(t, func() error { return pulumi.RunErr(thing(pulumi.Map{"length": pulumi.Int(2)}, changeID)) })
		require.Error(t, res.Err)
		msg := res.Err.Error()
		assert.Contains(t, msg, "state migration 1 of 1 for ")
		assert.Contains(t, msg, "rpc error: code = Internal desc = callbacks: state migration for ")
		assert.Contains(t, msg, "the result breaks the rule id-changed: the resource changed its ID")
		assert.Contains(t, msg, "keep the ID")
		assert.Equal(t, "thing-id", res.State.Get(eng.URN(eng.StackURN(), "test:index:Thing", "thing")).ID, "state unchanged")
	})
}

// Under an engine that does not run migrations (3.260), Migrations says so
// in one line, naming the release that does, before anything is
// registered.
func TestMigrationsNeedANewerEngine(t *testing.T) {
	eng := enginetest.New(t, enginetest.EngineVersion("3.260.0"))
	var called atomic.Bool
	var got error
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, got = program.Migrations(ctx, func(context.Context, *migrations.Args) (*migrations.Result, error) {
				called.Store(true)
				return nil, nil
			})
			return got
		})
	})
	require.Error(t, got)
	assert.True(t, errors.Is(got, monitor.ErrMissingFeature), "%v", got)
	assert.Contains(t, got.Error(), "program.Migrations: state migrations need Pulumi 3.274.1 or later: monitor: the engine lacks a required feature")
	assert.NotContains(t, got.Error(), "\n")
	require.Error(t, res.Err)
	for _, ev := range eng.Events("RegisterResource") {
		assert.Empty(t, ev.Request.(*pulumirpc.RegisterResourceRequest).GetStateMigrations(), "a registration carried migrations")
	}
	assert.False(t, called.Load())
	assert.True(t, strings.Contains(res.Err.Error(), "3.274.1"), "%v", res.Err)
}

// A migration that panics, returns JSON that is not checkpoint state, or
// runs past its deadline fails the resource's registration with an error
// that says so, and the stored state stays as it was.
func TestBadMigrationsLeaveTheStateAlone(t *testing.T) {
	prior := created(t)
	tests := []struct {
		name string
		fn   migrations.Func
		want string
		opts []callbacks.ServerOption
	}{
		{"panic", func(context.Context, *migrations.Args) (*migrations.Result, error) {
			panic("lost its way")
		}, "rpc error: code = Internal desc = state migration for urn:pulumi:stack::project::test:index:Thing::thing panicked: lost its way", nil},
		{"not-checkpoint-state", func(context.Context, *migrations.Args) (*migrations.Result, error) {
			return &migrations.Result{NewState: []byte(`[{"urn": "x", "shape": 1}]`)}, nil
		}, `the result breaks the rule not-checkpoint-state: the new state is not a JSON array of checkpoint resources: json: unknown field "shape"`, nil},
		{"past-its-deadline", func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, "rpc error: code = DeadlineExceeded desc = callbacks: state migration for urn:pulumi:stack::project::test:index:Thing::thing",
			[]callbacks.ServerOption{callbacks.KindTimeout(callbacks.KindStateMigration, 50*time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := enginetest.New(t, enginetest.WithState(prior))
			res := eng.Run(t, func() error {
				return pulumi.RunErr(func(ctx *pulumi.Context) error {
					if _, err := program.Monitor(ctx, tt.opts...); err != nil {
						return err
					}
					return thing(pulumi.Map{"length": pulumi.Int(2)}, tt.fn)(ctx)
				})
			})
			require.Error(t, res.Err)
			urn := eng.URN(eng.StackURN(), "test:index:Thing", "thing")
			var under []string
			for _, d := range eng.Diagnostics() {
				if d.URN == urn && d.Severity == "error" {
					under = append(under, d.Message)
				}
			}
			require.Len(t, under, 1, eng.Trace())
			assert.Contains(t, under[0], "state migration 1 of 1 for "+urn+": ")
			assert.Contains(t, under[0], tt.want)
			assert.Equal(t, prior.Get(urn), res.State.Get(urn), "the stored state changed")
		})
	}
}

// A migration still to run when another resource's create fails is
// cancelled, and the engine reports it under the migrated resource in its
// own words, as 3.274.1 does (integration.TestCancelledStateMigrationUnderPulumi):
// "state migration 1 of 1 for URN: rpc error: code = Canceled desc = context
// canceled". The stored state is unchanged. As in the engine, the migration
// waits for doomed's step in flight, so the error hook holds the failure
// for its five seconds before it lets it go.
func TestMigrationCancelledByAnotherStepsFailure(t *testing.T) {
	prior := created(t)
	eng := enginetest.New(t, enginetest.WithState(prior), enginetest.WithProvider(&enginetest.FakeProvider{
		OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
			return nil, errors.New("throttled")
		},
	}))
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			mon, err := program.Monitor(ctx)
			if err != nil {
				return err
			}
			holding, started := make(chan struct{}), make(chan struct{})
			var once atomic.Bool
			hold, err := hooks.RegisterErrorHook(ctx.Context(), mon, "hold", func(context.Context, *hooks.ErrorArgs) (bool, error) {
				if once.CompareAndSwap(false, true) {
					close(holding)
				}
				select {
				case <-started:
				case <-time.After(5 * time.Second):
				}
				return false, nil
			})
			if err != nil {
				return err
			}
			var doomed pulumi.CustomResourceState
			err = ctx.RegisterResource("test:index:Thing", "doomed", nil, &doomed,
				program.Hooks(&transforms.HooksBinding{OnError: []transforms.HookRef{hold}}))
			if err != nil {
				return err
			}
			<-holding
			return thing(pulumi.Map{"length": pulumi.Int(2)}, func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) {
				close(started)
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Minute): // never cancelled: the test fails below
					return nil, nil
				}
			})(ctx)
		})
	})
	require.True(t, res.Failed, eng.Trace())
	urn := eng.URN(eng.StackURN(), "test:index:Thing", "thing")
	want := "state migration 1 of 1 for " + urn + ": rpc error: code = Canceled desc = context canceled"
	assert.Contains(t, res.Diagnostics, enginetest.Diagnostic{Severity: "error", URN: urn, Message: want}, eng.Trace())
	assert.Contains(t, res.Diagnostics, enginetest.Diagnostic{Severity: "error",
		URN: eng.URN(eng.StackURN(), "test:index:Thing", "doomed"), Message: "throttled"}, eng.Trace())
	assert.ErrorContains(t, res.Err, want)
	assert.Equal(t, prior.Get(urn).Inputs.AsMap(), res.State.Get(urn).Inputs.AsMap(), "the state changed")
}
