package hooks_test

import (
	"context"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
)

const (
	bucketType = "aws:s3/bucket:Bucket"
	roleType   = "aws:iam/role:Role"
)

// fullTransformOptions returns transform options with every field set, from
// the same values as fullOptions, plus a field of a newer engine.
func fullTransformOptions(t *testing.T) *pulumirpc.TransformResourceOptions {
	t.Helper()
	src := fullOptions().ProtoReflect()
	dst := (&pulumirpc.TransformResourceOptions{}).ProtoReflect()
	fields := dst.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		sfd := src.Descriptor().Fields().ByName(fd.Name())
		require.NotNil(t, sfd, "hook options have no field %s", fd.Name())
		dst.Set(fd, src.Get(sfd))
		require.True(t, dst.Has(fd), "field %s not set", fd.Name())
	}
	dst.SetUnknown(protoreflect.RawFields(unknownField(950, 5)))
	return dst.Interface().(*pulumirpc.TransformResourceOptions)
}

func binding(points map[string][]string) *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	if points == nil {
		return nil
	}
	return &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{
		BeforeCreate: points["BeforeCreate"], AfterCreate: points["AfterCreate"],
		BeforeUpdate: points["BeforeUpdate"], AfterUpdate: points["AfterUpdate"],
		BeforeDelete: points["BeforeDelete"], AfterDelete: points["AfterDelete"],
		OnError: points["OnError"],
	}
}

func names(ns ...string) []transforms.HookRef {
	refs := make([]transforms.HookRef, len(ns))
	for i, n := range ns {
		refs[i] = transforms.HookName(n)
	}
	return refs
}

// transformRequest is a registration as the engine sends it to a stack
// transform, with every option set and the given hooks.
func transformRequest(t *testing.T, typ, name string, custom bool, existing *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *pulumirpc.TransformRequest {
	opts := fullTransformOptions(t)
	opts.Hooks = existing
	return &pulumirpc.TransformRequest{
		Type: typ, Name: name, Custom: custom, Parent: urnComp,
		Properties: object(map[string]*structpb.Value{"acl": output(str("private"), true, urnRole)}),
		Options:    opts,
	}
}

func TestAttach(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		sel      transforms.Selector
		bind     *transforms.HooksBinding
		typ      string
		resName  string
		custom   bool
		existing map[string][]string
		want     map[string][]string // nil: the resource is left untouched
	}{
		{
			name: "by-type", sel: transforms.ByType(roleType, bucketType),
			bind: &transforms.HooksBinding{BeforeCreate: names("audit")}, typ: bucketType, resName: "logs", custom: true,
			want: map[string][]string{"BeforeCreate": {"audit"}},
		},
		{
			name: "by-type-other-type", sel: transforms.ByType(bucketType),
			bind: &transforms.HooksBinding{BeforeCreate: names("audit")}, typ: roleType, resName: "logs", custom: true,
		},
		{
			name: "by-name", sel: transforms.ByName("data", "logs"),
			bind: &transforms.HooksBinding{AfterDelete: names("cleanup")}, typ: roleType, resName: "logs", custom: true,
			want: map[string][]string{"AfterDelete": {"cleanup"}},
		},
		{
			name: "by-name-other-name", sel: transforms.ByName("data"),
			bind: &transforms.HooksBinding{AfterDelete: names("cleanup")}, typ: roleType, resName: "logs", custom: true,
		},
		{
			name: "predicate", sel: func(a *transforms.Args) bool {
				return !a.Custom && a.URN == "urn:pulumi:dev::proj::my:index:Component$my:index:Part::p1"
			},
			bind: &transforms.HooksBinding{AfterCreate: names("announce")}, typ: "my:index:Part", resName: "p1",
			want: map[string][]string{"AfterCreate": {"announce"}},
		},
		{
			name: "predicate-false", sel: func(a *transforms.Args) bool { return !a.Custom },
			bind: &transforms.HooksBinding{AfterCreate: names("announce")}, typ: bucketType, resName: "logs", custom: true,
		},
		{
			name: "nil-selector-picks-all", bind: &transforms.HooksBinding{OnError: names("retry")}, typ: bucketType, resName: "logs", custom: true,
			want: map[string][]string{"OnError": {"retry"}},
		},
		{
			name: "merges-with-existing-hooks", bind: &transforms.HooksBinding{
				BeforeCreate: names("b"), AfterDelete: names("y"), OnError: names("e1"),
			},
			typ: bucketType, resName: "logs", custom: true,
			existing: map[string][]string{"BeforeCreate": {"a"}, "AfterDelete": {"x"}, "OnError": {"e0"}, "BeforeUpdate": {"u"}},
			want:     map[string][]string{"BeforeCreate": {"a", "b"}, "AfterDelete": {"x", "y"}, "OnError": {"e0", "e1"}, "BeforeUpdate": {"u"}},
		},
		{
			name: "already-bound", bind: &transforms.HooksBinding{BeforeCreate: names("audit"), OnError: names("retry")},
			typ: bucketType, resName: "logs", custom: true,
			existing: map[string][]string{"BeforeCreate": {"first", "audit"}, "OnError": {"retry"}},
		},
		{
			name: "partly-bound", bind: &transforms.HooksBinding{BeforeCreate: names("audit"), AfterCreate: names("audit")},
			typ: bucketType, resName: "logs", custom: true,
			existing: map[string][]string{"BeforeCreate": {"audit"}},
			want:     map[string][]string{"BeforeCreate": {"audit"}, "AfterCreate": {"audit"}},
		},
		{
			name: "repeated-name-in-binding", bind: &transforms.HooksBinding{BeforeUpdate: names("a", "a", "b")},
			typ: bucketType, resName: "logs", custom: true,
			want: map[string][]string{"BeforeUpdate": {"a", "b"}},
		},
		{
			name: "existing-empty-binding", bind: &transforms.HooksBinding{BeforeDelete: names("guard")},
			typ: bucketType, resName: "logs", custom: true,
			existing: map[string][]string{},
			want:     map[string][]string{"BeforeDelete": {"guard"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t)
			fake := fakeEngine(allFeatures...)
			mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)

			require.NoError(t, hooks.Attach(t.Context(), wiretest.Bind(t, mon, srv), transforms.Matching(tt.sel), tt.bind))
			cb := attached(t, fake)

			req := transformRequest(t, tt.typ, tt.resName, tt.custom, binding(tt.existing))
			var resp pulumirpc.TransformResponse
			require.NoError(t, wiretest.Call(t, cb, req, &resp))

			assert.Nil(t, resp.GetProperties(), "properties must be left alone")
			if tt.want == nil {
				assert.Nil(t, resp.GetOptions(), "the resource must be left untouched")
				return
			}
			want := proto.CloneOf(req.GetOptions())
			want.Hooks = binding(tt.want)
			wiretest.RequireProtoEqual(t, want, resp.GetOptions())
		})
	}
}

// attached returns the one stack transform the engine was given for every
// binding attached through its monitors.
func attached(t *testing.T, fake *monitortest.Fake) *pulumirpc.Callback {
	t.Helper()
	_, _, registered := recorded(fake)
	require.Len(t, registered, 1, "one stack transform for every binding")
	return registered[0]
}

// TestAttachTwice attaches two bindings with overlapping hooks: the engine
// gets one transform, which applies both, and a second pass over its result
// changes nothing.
func TestAttachTwice(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	fake := fakeEngine(allFeatures...)
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)
	require.NoError(t, hooks.Attach(t.Context(), mon, transforms.Matching(transforms.ByType(bucketType)),
		&transforms.HooksBinding{BeforeCreate: names("audit"), AfterCreate: names("tag")}))
	require.NoError(t, hooks.Attach(t.Context(), mon, transforms.Matching(nil),
		&transforms.HooksBinding{BeforeCreate: names("audit", "policy")}))
	cb := attached(t, fake)

	req := transformRequest(t, bucketType, "logs", true, nil)
	apply := func() bool {
		var resp pulumirpc.TransformResponse
		require.NoError(t, wiretest.Call(t, cb, req, &resp))
		if resp.GetOptions() == nil {
			return false
		}
		req.Options = resp.GetOptions()
		return true
	}
	assert.True(t, apply())
	wiretest.RequireProtoEqual(t, binding(map[string][]string{"BeforeCreate": {"audit", "policy"}, "AfterCreate": {"tag"}}), req.GetOptions().GetHooks())
	assert.False(t, apply(), "a second pass must change nothing")
}

func TestAttachWithRegisteredHooks(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	fake := fakeEngine(allFeatures...)
	mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)
	audit, err := hooks.Register(t.Context(), mon, "audit", noop)
	require.NoError(t, err)
	retry, err := hooks.RegisterErrorHook(t.Context(), mon, "retry", noRetry)
	require.NoError(t, err)

	b := &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}, OnError: []transforms.HookRef{retry}}
	require.NoError(t, hooks.Attach(t.Context(), mon, transforms.Matching(nil), b))
	b.BeforeCreate = append(b.BeforeCreate, transforms.HookName("late")) // must not affect the transform

	req := transformRequest(t, bucketType, "logs", true, nil)
	var resp pulumirpc.TransformResponse
	require.NoError(t, wiretest.Call(t, attached(t, fake), req, &resp))
	wiretest.RequireProtoEqual(t, binding(map[string][]string{"BeforeCreate": {"audit"}, "OnError": {"retry"}}), resp.GetOptions().GetHooks())
}

func TestAttachRefused(t *testing.T) {
	t.Parallel()
	noTransforms := func() *monitortest.Fake { return fakeEngine(monitor.ResourceHooks) }
	tests := []struct {
		name    string
		fake    func() *monitortest.Fake
		setup   func(t *testing.T, srv *callbacks.Server, mon *monitor.Monitor)
		scope   *transforms.Scope
		bind    *transforms.HooksBinding
		opts    []callbacks.RegisterOption
		wantMsg []string
		wantIs  error
	}{
		{
			name: "option-for-the-shared-transform", bind: &transforms.HooksBinding{BeforeCreate: names("audit")},
			opts:    []callbacks.RegisterOption{callbacks.AcceptsByteStrings(false)},
			wantMsg: []string{"AcceptsByteStrings(false) applies to a registration"}, wantIs: callbacks.ErrInvalidOption,
		},
		{
			name: "invalid-option", bind: &transforms.HooksBinding{BeforeCreate: names("audit")},
			opts: []callbacks.RegisterOption{callbacks.Timeout(0)}, wantMsg: []string{"Timeout(0s)"}, wantIs: callbacks.ErrInvalidOption,
		},
		{
			name: "no-scope", scope: &transforms.Scope{}, bind: &transforms.HooksBinding{BeforeCreate: names("audit")},
			wantMsg: []string{"the scope is empty"}, wantIs: transforms.ErrNeverMatches,
		},
		{name: "nil-binding", bind: nil, wantMsg: []string{"names no hooks"}},
		{name: "empty-binding", bind: &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{}}, wantMsg: []string{"names no hooks"}},
		{name: "unnamed-ref", bind: &transforms.HooksBinding{BeforeCreate: names("")}, wantMsg: []string{"BeforeCreate[0]", "no name"}},
		{
			name: "resource-hook-under-on-error",
			setup: func(t *testing.T, srv *callbacks.Server, mon *monitor.Monitor) {
				_, err := hooks.Register(t.Context(), wiretest.Bind(t, mon, srv), "audit", noop)
				require.NoError(t, err)
			},
			bind:    &transforms.HooksBinding{OnError: names("audit")},
			wantMsg: []string{`OnError[0]: "audit" is a resource hook`},
		},
		{
			name: "error-hook-at-lifecycle-point",
			setup: func(t *testing.T, srv *callbacks.Server, mon *monitor.Monitor) {
				_, err := hooks.RegisterErrorHook(t.Context(), wiretest.Bind(t, mon, srv), "retry", noRetry)
				require.NoError(t, err)
			},
			bind:    &transforms.HooksBinding{AfterUpdate: names("retry")},
			wantMsg: []string{`AfterUpdate[0]: "retry" is an error hook`},
		},
		{
			name: "engine-without-transforms", fake: noTransforms,
			bind: &transforms.HooksBinding{BeforeCreate: names("audit")}, wantMsg: []string{"TRANSFORMS"}, wantIs: monitor.ErrMissingFeature,
		},
		{
			name: "engine-without-resource-hooks",
			fake: func() *monitortest.Fake { return fakeEngine(monitor.Transforms) },
			bind: &transforms.HooksBinding{BeforeCreate: names("audit")}, wantMsg: []string{"RESOURCE_HOOKS"}, wantIs: monitor.ErrMissingFeature,
		},
		{
			name: "engine-without-error-hooks",
			fake: func() *monitortest.Fake { return fakeEngine(monitor.Transforms, monitor.ResourceHooks) },
			bind: &transforms.HooksBinding{OnError: names("retry")}, wantMsg: []string{"ERROR_HOOKS"}, wantIs: monitor.ErrMissingFeature,
		},
		{
			name: "engine-refuses",
			fake: func() *monitortest.Fake {
				f := fakeEngine(allFeatures...)
				f.RegisterStackTransform = func(context.Context, *pulumirpc.Callback) error {
					return status.Error(codes.FailedPrecondition, "no more transforms")
				}
				return f
			},
			bind: &transforms.HooksBinding{BeforeCreate: names("audit")}, wantMsg: []string{"no more transforms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t)
			fake := fakeEngine(allFeatures...)
			if tt.fake != nil {
				fake = tt.fake()
			}
			mon := wiretest.Bind(t, monitortest.Serve(t, fake), srv)
			scope := transforms.Matching(nil)
			if tt.scope != nil {
				scope = *tt.scope
			}
			before := 0
			if tt.setup != nil {
				tt.setup(t, srv, mon)
				before = srv.Registry().Len()
			}

			err := hooks.Attach(t.Context(), wiretest.Bind(t, mon, srv), scope, tt.bind, tt.opts...)
			require.Error(t, err)
			for _, w := range tt.wantMsg {
				assert.Contains(t, err.Error(), w)
			}
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
			assert.Equal(t, before, srv.Registry().Len(), "a refused Attach must leave no callback")
			if tt.name != "engine-refuses" {
				_, _, registered := recorded(fake)
				assert.Empty(t, registered, "nothing may be registered with the engine")
			}
		})
	}
}
