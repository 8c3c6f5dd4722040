package hooks_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/langhost/callbacks/transforms"
	"sync/atomic"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
)

func noop(context.Context, *hooks.Args) error { return nil }

func noRetry(context.Context, *hooks.ErrorArgs) (bool, error) { return false, nil }

func TestRegister(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		opts         []hooks.ResourceOption
		onDryRun     bool
		ignoreErrors bool
	}{
		{"defaults", nil, false, false},
		{"on-dry-run", []hooks.ResourceOption{hooks.OnDryRun()}, true, false},
		{"ignore-errors", []hooks.ResourceOption{hooks.IgnoreErrors()}, false, true},
		{"both", []hooks.ResourceOption{hooks.OnDryRun(), hooks.IgnoreErrors(), nil}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t)
			fake := fakeEngine(allFeatures...)
			mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)

			var seen capture[string]
			h, err := hooks.Register(t.Context(), wiretest.Bind(t, mon, srv), "audit", func(_ context.Context, a *hooks.Args) error {
				seen.set(a.Name)
				return nil
			}, tt.opts...)
			require.NoError(t, err)

			assert.Equal(t, "audit", h.Name())
			assert.Equal(t, tt.onDryRun, h.OnDryRun())
			assert.Equal(t, tt.ignoreErrors, h.IgnoreErrors())

			reqs, errReqs, _ := recorded(fake)
			require.Len(t, reqs, 1)
			assert.Empty(t, errReqs)
			cb := reqs[0].GetCallback()
			wiretest.RequireProtoEqual(t, &pulumirpc.RegisterResourceHookRequest{
				Name: "audit", Callback: cb, OnDryRun: tt.onDryRun, IgnoreErrors: tt.ignoreErrors,
			}, reqs[0])
			assert.Equal(t, srv.Target(), cb.GetTarget())
			assert.True(t, cb.GetAcceptsByteString())

			kind, name, ok := srv.Registry().Lookup(cb.GetToken())
			require.True(t, ok)
			assert.Equal(t, callbacks.KindResourceHook, kind)
			assert.Equal(t, "audit", name)

			got, ok := nameHeldBy(mon, "audit")
			require.True(t, ok)
			assert.Same(t, h, got)

			// The callback handed to the engine runs the function.
			var resp pulumirpc.ResourceHookResponse
			require.NoError(t, wiretest.Call(t, reqs[0].GetCallback(), &pulumirpc.ResourceHookRequest{Urn: urnBucket, Name: "logs"}, &resp))
			name, n := seen.get()
			assert.Equal(t, 1, n)
			assert.Equal(t, "logs", name)
		})
	}
}

func TestRegisterErrorHook(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	fake := fakeEngine(allFeatures...)
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)

	h, err := hooks.RegisterErrorHook(t.Context(), wiretest.Bind(t, mon, srv), "retry-throttled", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
		return a.Attempt() < 3, nil
	}, hooks.WithRegisterOptions(callbacks.Timeout(time.Minute)))
	require.NoError(t, err)
	assert.Equal(t, "retry-throttled", h.Name())

	hookReqs, reqs, _ := recorded(fake)
	assert.Empty(t, hookReqs)
	require.Len(t, reqs, 1)
	cb := reqs[0].GetCallback()
	wiretest.RequireProtoEqual(t, &pulumirpc.RegisterErrorHookRequest{Name: "retry-throttled", Callback: cb}, reqs[0])

	got, ok := nameHeldBy(mon, "retry-throttled")
	require.True(t, ok)
	assert.Same(t, h, got)

	for _, tc := range []struct {
		errs []string
		want bool
	}{{[]string{"a"}, true}, {[]string{"b", "a"}, true}, {[]string{"c", "b", "a"}, false}} {
		var resp pulumirpc.ErrorHookResponse
		require.NoError(t, wiretest.Call(t, cb, &pulumirpc.ErrorHookRequest{Urn: urnBucket, FailedOperation: "create", Errors: tc.errs}, &resp))
		assert.Equal(t, tc.want, resp.GetRetry(), "after %d failures", len(tc.errs))
	}
}

func TestRegisterEngineRefuses(t *testing.T) {
	t.Parallel()
	refusal := status.Error(codes.InvalidArgument, "resource hook already registered for name \"h\"")
	tests := []struct {
		name     string
		register func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error
	}{
		{"resource-hook", func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error {
			_, err := hooks.Register(ctx, mon, "h", noop)
			return err
		}},
		{"error-hook", func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error {
			_, err := hooks.RegisterErrorHook(ctx, mon, "h", noRetry)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t)
			var refuse atomic.Bool
			refuse.Store(true)
			fake := fakeEngine(allFeatures...)
			fake.RegisterResourceHook = func(context.Context, *pulumirpc.RegisterResourceHookRequest) error {
				if refuse.Load() {
					return refusal
				}
				return nil
			}
			fake.RegisterErrorHook = func(context.Context, *pulumirpc.RegisterErrorHookRequest) error {
				if refuse.Load() {
					return refusal
				}
				return nil
			}
			mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)

			err := tt.register(t.Context(), srv, mon)
			require.Error(t, err)
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "the engine's status must be kept: %v", err)
			assert.Contains(t, err.Error(), `"h"`)
			assert.Equal(t, 0, srv.Registry().Len(), "the callback must be unregistered")
			_, taken := nameHeldBy(mon, "h")
			assert.False(t, taken, "the name must be released")

			// The name is free again.
			refuse.Store(false)
			require.NoError(t, tt.register(t.Context(), srv, mon))
			assert.Equal(t, 1, srv.Registry().Len())
		})
	}
}

func TestRegisterDuplicateName(t *testing.T) {
	t.Parallel()
	resource := func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor, name string) error {
		_, err := hooks.Register(ctx, mon, name, noop)
		return err
	}
	errorHook := func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor, name string) error {
		_, err := hooks.RegisterErrorHook(ctx, mon, name, noRetry)
		return err
	}
	type registerFunc = func(context.Context, *callbacks.Server, *monitor.Monitor, string) error
	tests := []struct {
		name          string
		first, second registerFunc
		firstKind     string
		secondKind    string
	}{
		{"resource-then-resource", resource, resource, "a resource hook", "resource hook"},
		{"resource-then-error", resource, errorHook, "a resource hook", "error hook"},
		{"error-then-resource", errorHook, resource, "an error hook", "resource hook"},
		{"error-then-error", errorHook, errorHook, "an error hook", "error hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t)
			fake := fakeEngine(allFeatures...)
			mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)

			require.NoError(t, tt.first(t.Context(), srv, mon, "shared"))
			err := tt.second(t.Context(), srv, mon, "shared")
			require.Error(t, err)
			require.ErrorIs(t, err, hooks.ErrNameTaken)
			msg := err.Error()
			assert.Contains(t, msg, fmt.Sprintf("registering %s %q", tt.secondKind, "shared"))
			assert.Contains(t, msg, "taken by "+tt.firstKind)
			assert.Contains(t, msg, "register_test.go:", "the error must say where the name was first registered")
			assert.Contains(t, msg, "with Shared", "the error must say how instances share a hook")

			hookReqs, errReqs, _ := recorded(fake)
			assert.Equal(t, 1, len(hookReqs)+len(errReqs), "the engine must be asked only once")
			assert.Equal(t, 1, srv.Registry().Len(), "the refused registration must leave no callback")
		})
	}
}

func TestRegisterMissingFeature(t *testing.T) {
	t.Parallel()
	oldEngine := func() *monitortest.Fake {
		f := fakeEngine()
		f.DeploymentInfo = nil
		f.SupportsFeature = monitortest.OldEngine()
		return f
	}
	withoutOptions := func() *monitortest.Fake { return fakeEngine(monitor.ResourceHooks, monitor.ErrorHooks) }
	tests := []struct {
		name     string
		fake     func() *monitortest.Fake
		register func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error
		feature  string
	}{
		{"old-engine-resource-hook", oldEngine, func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error {
			_, err := hooks.Register(ctx, mon, "h", noop)
			return err
		}, "RESOURCE_HOOKS"},
		{"old-engine-error-hook", oldEngine, func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error {
			_, err := hooks.RegisterErrorHook(ctx, mon, "h", noRetry)
			return err
		}, "ERROR_HOOKS"},
		{"options-required", withoutOptions, func(ctx context.Context, srv *callbacks.Server, mon *monitor.Monitor) error {
			_, err := hooks.Register(ctx, mon, "h", noop, hooks.RequireOptions())
			return err
		}, "SENDS_OPTIONS_TO_HOOKS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t)
			fake := tt.fake()
			mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)

			err := tt.register(t.Context(), srv, mon)
			require.Error(t, err)
			require.ErrorIs(t, err, monitor.ErrMissingFeature)
			assert.Contains(t, err.Error(), tt.feature)
			hookReqs, errReqs, _ := recorded(fake)
			assert.Empty(t, hookReqs, "nothing may be registered with the engine")
			assert.Empty(t, errReqs, "nothing may be registered with the engine")
			assert.Equal(t, 0, srv.Registry().Len())
			_, taken := nameHeldBy(mon, "h")
			assert.False(t, taken)
		})
	}

	t.Run("options-not-sent", func(t *testing.T) {
		t.Parallel()
		srv := wiretest.Listen(t)
		mon := wiretest.Bind(t, monitortest.Serve(t, withoutOptions()), srv)
		_, err := hooks.Register(t.Context(), wiretest.Bind(t, mon, srv), "h", noop)
		require.NoError(t, err)
		_, err = hooks.RegisterErrorHook(t.Context(), wiretest.Bind(t, mon, srv), "e", noRetry)
		require.NoError(t, err)
	})
}

func TestRegisterBadArguments(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	fake := fakeEngine(allFeatures...)
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)
	closed, err := callbacks.Listen()
	require.NoError(t, err)
	require.NoError(t, closed.Close())

	tests := []struct {
		name    string
		call    func() error
		wantIs  error
		wantMsg string
	}{
		{"empty-name", func() error { _, err := hooks.Register(t.Context(), mon, "", noop); return err }, callbacks.ErrInvalidOption, "empty"},
		{"nil-func", func() error { _, err := hooks.Register(t.Context(), mon, "a", nil); return err }, callbacks.ErrNilFunc, ""},
		{"nil-error-func", func() error { _, err := hooks.RegisterErrorHook(t.Context(), mon, "a", nil); return err }, callbacks.ErrNilFunc, ""},
		{"nil-monitor", func() error { _, err := hooks.Register(t.Context(), nil, "a", noop); return err }, callbacks.ErrNilArgument, "monitor"},
		{"closed-server", func() error {
			_, err := hooks.Register(t.Context(), wiretest.Bind(t, mon, closed), "a", noop)
			return err
		}, callbacks.ErrServerClosed, ""},
		{"invalid-timeout", func() error {
			_, err := hooks.Register(t.Context(), mon, "a", noop, hooks.WithRegisterOptions(callbacks.Timeout(0)))
			return err
		}, callbacks.ErrInvalidOption, "Timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
	hookReqs, errReqs, _ := recorded(fake)
	assert.Empty(t, hookReqs)
	assert.Empty(t, errReqs)
	assert.Equal(t, 0, srv.Registry().Len())
	_, taken := nameHeldBy(mon, "a")
	assert.False(t, taken)
}

// TestRegisterConcurrent registers many names at once, some twice: each
// name must end up registered exactly once, with the engine and the server.
func TestRegisterConcurrent(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	fake := fakeEngine(allFeatures...)
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)
	const names = 20
	errs := make(chan error, 2*names)
	for i := range 2 * names {
		go func() {
			_, err := hooks.Register(t.Context(), wiretest.Bind(t, mon, srv), fmt.Sprintf("h%d", i%names), noop)
			errs <- err
		}()
	}
	failed := 0
	for range 2 * names {
		if err := <-errs; err != nil {
			require.True(t, errors.Is(err, hooks.ErrNameTaken), "unexpected error: %v", err)
			failed++
		}
	}
	assert.Equal(t, names, failed)
	reqs, _, _ := recorded(fake)
	assert.Len(t, reqs, names)
	assert.Equal(t, names, srv.Registry().Len())
}

// TestBindingValidateKinds checks that registered hooks are bound only where
// their kind belongs.
func TestBindingValidateKinds(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	mon := wiretest.Bind(t, monitortest.Serve(t, fakeEngine(allFeatures...)), srv)
	h, err := hooks.Register(t.Context(), wiretest.Bind(t, mon, srv), "r", noop)
	require.NoError(t, err)
	eh, err := hooks.RegisterErrorHook(t.Context(), wiretest.Bind(t, mon, srv), "e", noRetry)
	require.NoError(t, err)

	require.NoError(t, hooks.Validate(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{h}, OnError: []transforms.HookRef{eh}}))
	err = hooks.Validate(&transforms.HooksBinding{AfterCreate: []transforms.HookRef{eh}, OnError: []transforms.HookRef{h}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `AfterCreate[0]: "e" is an error hook`)
	assert.Contains(t, err.Error(), `OnError[0]: "r" is a resource hook`)

	var nilHook *hooks.Hook
	err = hooks.Validate(&transforms.HooksBinding{BeforeUpdate: []transforms.HookRef{nilHook}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "BeforeUpdate[0]: a nil hook, or one with no name: did the Register call that made it fail?")

	b := &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{h, transforms.HookName("other")}, OnError: []transforms.HookRef{eh}}
	wiretest.RequireProtoEqual(t, &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{
		BeforeCreate: []string{"r", "other"}, OnError: []string{"e"},
	}, hooks.BindingToProto(b))
}

// Lookup answers whether a name is taken in the deployment, and by which
// hook; a name whose registration the engine refused is free again.
func TestLookup(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	fake := fakeEngine(allFeatures...)
	fake.RegisterResourceHook = func(_ context.Context, req *pulumirpc.RegisterResourceHookRequest) error {
		if req.GetName() == "refused" {
			return status.Error(codes.InvalidArgument, "no")
		}
		return nil
	}
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)
	audit, err := hooks.Register(t.Context(), mon, "audit", noop)
	require.NoError(t, err)
	retry, err := hooks.RegisterErrorHook(t.Context(), mon, "retry", noRetry)
	require.NoError(t, err)
	_, err = hooks.Register(t.Context(), mon, "refused", noop)
	require.Error(t, err)

	got, ok := hooks.Lookup(mon, "audit")
	assert.True(t, ok)
	assert.Same(t, audit, got)
	got, ok = hooks.Lookup(mon, "retry")
	assert.True(t, ok)
	assert.Same(t, retry, got)
	for _, name := range []string{"refused", "unknown", ""} {
		_, ok := hooks.Lookup(mon, name)
		assert.False(t, ok, "%q", name)
	}
	_, ok = hooks.Lookup(nil, "audit")
	assert.False(t, ok)
}
