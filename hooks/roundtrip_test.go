package hooks_test

import (
	"context"
	"errors"
	"github.com/langhost/callbacks/transforms"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
)

// capture remembers the last value a hook saw.
type capture[T any] struct {
	mu sync.Mutex
	v  T
	n  int
}

func (c *capture[T]) set(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.v, c.n = v, c.n+1
}

func (c *capture[T]) get() (T, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v, c.n
}

// TestResourceHookRoundTrip sends hook requests through a real server and
// checks that the hook sees typed values and that re-encoding what it saw
// gives back exactly the request the engine sent.
func TestResourceHookRoundTrip(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	bytesIn := string([]byte{0xff, 0xfe, 0x00, 'a'})

	tests := []struct {
		name  string
		req   *pulumirpc.ResourceHookRequest
		read  *pulumirpc.ResourceHookRequest // what the hook reads of req, if less than all of it
		check func(t *testing.T, a *hooks.Args)
	}{
		{
			name: "before-create",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket, Name: "logs", Type: "aws:s3/bucket:Bucket",
				NewInputs:  object(map[string]*structpb.Value{"acl": str("private"), "size": num(3), "on": boolean(true), "none": structpb.NewNullValue()}),
				NewOptions: &pulumirpc.ResourceOptions{Protect: ptr(false), RetainOnDelete: ptr(false)},
			},
			check: func(t *testing.T, a *hooks.Args) {
				assert.Equal(t, resource.URN(urnBucket), a.URN)
				assert.Equal(t, resource.ID(""), a.ID)
				assert.Equal(t, "logs", a.Name)
				assert.Equal(t, "aws:s3/bucket:Bucket", a.Type)
				assert.Equal(t, "private", a.NewInputs()["acl"].StringValue())
				assert.Equal(t, 3.0, a.NewInputs()["size"].NumberValue())
				assert.True(t, a.NewInputs()["none"].IsNull())
				assert.Nil(t, a.OldInputs())
				assert.Nil(t, a.NewOutputs())
				assert.Nil(t, a.OldOptions())
				require.NotNil(t, a.NewOptions())
				require.NotNil(t, a.NewOptions().Protect)
				assert.False(t, *a.NewOptions().Protect)
				assert.Nil(t, a.NewOptions().DeleteBeforeReplace)
			},
		},
		{
			name: "secrets",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket, Id: "b-1",
				NewInputs: object(map[string]*structpb.Value{
					"password": secret(str("hunter2")),
					"nested":   obj(map[string]*structpb.Value{"keys": secret(list(str("a"), str("b")))}),
				}),
				NewOutputs: object(map[string]*structpb.Value{"token": secret(obj(map[string]*structpb.Value{"v": num(1)}))}),
			},
			check: func(t *testing.T, a *hooks.Args) {
				pw := a.NewInputs()["password"]
				require.True(t, pw.IsSecret(), "password should be a secret, got %v", pw)
				assert.Equal(t, "hunter2", pw.SecretValue().Element.StringValue())
				keys := a.NewInputs()["nested"].ObjectValue()["keys"]
				require.True(t, keys.IsSecret())
				assert.Len(t, keys.SecretValue().Element.ArrayValue(), 2)
				assert.True(t, a.NewOutputs()["token"].IsSecret())
			},
		},
		{
			name: "unknowns",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket,
				NewInputs: object(map[string]*structpb.Value{
					"arn":  unknown(),
					"list": list(str("x"), unknown()),
				}),
				NewOutputs: object(map[string]*structpb.Value{"id": unknown()}),
			},
			check: func(t *testing.T, a *hooks.Args) {
				assert.True(t, a.NewInputs()["arn"].IsComputed())
				assert.True(t, a.NewInputs()["list"].ArrayValue()[1].IsComputed())
				assert.True(t, a.NewOutputs()["id"].IsComputed())
			},
		},
		{
			name: "resource-references",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket,
				NewInputs: object(map[string]*structpb.Value{
					"role":      ref(urnRole, "role-7"),
					"component": ref(urnComp, ""),
				}),
			},
			check: func(t *testing.T, a *hooks.Args) {
				role := a.NewInputs()["role"]
				require.True(t, role.IsResourceReference())
				assert.Equal(t, resource.URN(urnRole), role.ResourceReferenceValue().URN)
				id, ok := role.ResourceReferenceValue().IDString()
				assert.True(t, ok)
				assert.Equal(t, "role-7", id)
				require.True(t, a.NewInputs()["component"].IsResourceReference())
			},
		},
		{
			name: "output-values-with-dependencies",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket,
				NewInputs: object(map[string]*structpb.Value{
					"known":         output(str("v"), false, urnRole, urnComp),
					"unknownSecret": output(nil, true, urnRole),
					"plain":         output(num(2), false),
				}),
			},
			check: func(t *testing.T, a *hooks.Args) {
				known := a.NewInputs()["known"]
				require.True(t, known.IsOutput())
				assert.True(t, known.OutputValue().Known)
				assert.Equal(t, "v", known.OutputValue().Element.StringValue())
				assert.Equal(t, []resource.URN{urnRole, urnComp}, known.OutputValue().Dependencies)
				us := a.NewInputs()["unknownSecret"].OutputValue()
				assert.False(t, us.Known)
				assert.True(t, us.Secret)
			},
		},
		{
			name: "byte-strings",
			req: &pulumirpc.ResourceHookRequest{
				Urn:        urnBucket,
				NewInputs:  object(map[string]*structpb.Value{"blob": wiretest.ByteString([]byte(bytesIn))}),
				OldOutputs: object(map[string]*structpb.Value{"blobs": list(wiretest.ByteString([]byte{0x80}), str("text"))}),
			},
			check: func(t *testing.T, a *hooks.Args) {
				assert.Equal(t, bytesIn, a.NewInputs()["blob"].StringValue())
				assert.Equal(t, "\x80", a.OldOutputs()["blobs"].ArrayValue()[0].StringValue())
			},
		},
		{
			name: "assets-and-archives",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket,
				NewInputs: object(map[string]*structpb.Value{
					"asset": withSig(assetSig, map[string]*structpb.Value{
						"hash": str("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"),
						"text": str("hello"),
					}),
					"archive": withSig(archiveSig, map[string]*structpb.Value{
						"hash": str("deadbeef"),
						"path": str("./dist"),
					}),
				}),
			},
			check: func(t *testing.T, a *hooks.Args) {
				assert.True(t, a.NewInputs()["asset"].IsAsset())
				assert.True(t, a.NewInputs()["archive"].IsArchive())
			},
		},
		{
			name: "update-with-every-option",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket, Id: "b-1", Name: "logs", Type: "aws:s3/bucket:Bucket",
				NewInputs:  object(map[string]*structpb.Value{"acl": str("public")}),
				OldInputs:  object(map[string]*structpb.Value{"acl": str("private")}),
				NewOutputs: object(map[string]*structpb.Value{"acl": str("public"), "arn": str("arn:1")}),
				OldOutputs: object(map[string]*structpb.Value{"acl": str("private"), "arn": str("arn:1")}),
				NewOptions: fullOptions(),
				OldOptions: &pulumirpc.ResourceOptions{Protect: ptr(true), RetainOnDelete: ptr(true), Parent: urnComp},
			},
			check: func(t *testing.T, a *hooks.Args) {
				require.NotNil(t, a.NewOptions())
				require.NotNil(t, a.OldOptions())
				assert.Equal(t, resource.URN(urnComp), a.NewOptions().Parent)
				require.NotNil(t, a.NewOptions().Hooks)
				assert.Equal(t, []transforms.HookRef{transforms.HookName("bc1"), transforms.HookName("bc2")}, a.NewOptions().Hooks.BeforeCreate)
				require.NotNil(t, a.NewOptions().ReplacementTrigger)
				assert.True(t, a.NewOptions().ReplacementTrigger.IsSecret())
				assert.True(t, *a.OldOptions().RetainOnDelete)
			},
		},
		{
			name: "present-but-empty-maps",
			req: &pulumirpc.ResourceHookRequest{
				Urn: urnBucket, Id: "b-1",
				OldInputs:  object(nil),
				OldOutputs: object(map[string]*structpb.Value{}),
				OldOptions: &pulumirpc.ResourceOptions{},
			},
			check: func(t *testing.T, a *hooks.Args) {
				assert.NotNil(t, a.OldInputs())
				assert.Empty(t, a.OldInputs())
				assert.NotNil(t, a.OldOutputs())
				assert.Nil(t, a.NewInputs())
				assert.NotNil(t, a.OldOptions())
				assert.Nil(t, a.NewOptions())
			},
		},
		{
			// The options of newer engines are accepted, and the hook reads
			// what this version knows of them; a hook sends nothing back.
			name: "fields-of-newer-engines",
			req: func() *pulumirpc.ResourceHookRequest {
				o := fullOptions()
				o.ProtoReflect().SetUnknown(unknownField(900, 7))
				o.GetHooks().ProtoReflect().SetUnknown(unknownField(901, 1))
				o.GetCustomTimeouts().ProtoReflect().SetUnknown(unknownField(902, 2))
				o.GetAliases()[0].ProtoReflect().SetUnknown(unknownField(903, 3))
				o.GetAliases()[1].GetSpec().ProtoReflect().SetUnknown(unknownField(904, 4))
				return &pulumirpc.ResourceHookRequest{Urn: urnBucket, OldOptions: o}
			}(),
			read: &pulumirpc.ResourceHookRequest{Urn: urnBucket, OldOptions: fullOptions()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var seen capture[*hooks.Args]
			var again capture[*pulumirpc.ResourceHookRequest]
			cb, err := srv.Register(context.Background(), hooks.Adapt(func(_ context.Context, a *hooks.Args) error {
				seen.set(a)
				req, err := a.ToProto()
				if err != nil {
					return err
				}
				again.set(req)
				return nil
			}))
			require.NoError(t, err)

			var resp pulumirpc.ResourceHookResponse
			require.NoError(t, wiretest.Call(t, cb, tt.req, &resp))
			assert.Empty(t, resp.GetError())

			got, n := again.get()
			require.Equal(t, 1, n, "hook calls")
			want := tt.req
			if tt.read != nil {
				want = tt.read
			}
			wiretest.RequireProtoEqual(t, want, got)
			if tt.check != nil {
				a, _ := seen.get()
				tt.check(t, a)
			}
		})
	}
}

func TestErrorHookRoundTrip(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	tests := []struct {
		name  string
		req   *pulumirpc.ErrorHookRequest
		check func(t *testing.T, a *hooks.ErrorArgs)
	}{
		{
			name: "create",
			req: &pulumirpc.ErrorHookRequest{
				Urn: urnBucket, Name: "logs", Type: "aws:s3/bucket:Bucket",
				FailedOperation: "create",
				Errors:          []string{"second: throttled", "first: timeout"},
				NewInputs:       object(map[string]*structpb.Value{"pw": secret(str("s")), "b": wiretest.ByteString([]byte{0xc3})}),
				NewOptions:      fullOptions(),
			},
			check: func(t *testing.T, a *hooks.ErrorArgs) {
				assert.Equal(t, hooks.OperationCreate, a.FailedOperation)
				assert.Equal(t, 2, a.Attempt())
				assert.Equal(t, "second: throttled", a.LastError())
				assert.True(t, a.NewInputs()["pw"].IsSecret())
				assert.Nil(t, a.OldOptions())
				require.NotNil(t, a.NewOptions())
				assert.Equal(t, "6.1.0", a.NewOptions().Version)
			},
		},
		{
			name: "update",
			req: &pulumirpc.ErrorHookRequest{
				Urn: urnBucket, Id: "b-1", FailedOperation: "update", Errors: []string{"boom"},
				NewInputs:  object(map[string]*structpb.Value{"x": unknown()}),
				OldInputs:  object(map[string]*structpb.Value{"x": num(1)}),
				OldOutputs: object(map[string]*structpb.Value{"r": ref(urnRole, "r-1"), "o": output(str("v"), true, urnComp)}),
				NewOptions: &pulumirpc.ResourceOptions{Protect: ptr(false)},
				OldOptions: fullOptions(),
			},
			check: func(t *testing.T, a *hooks.ErrorArgs) {
				assert.Equal(t, hooks.OperationUpdate, a.FailedOperation)
				assert.Equal(t, 1, a.Attempt())
				assert.True(t, a.NewInputs()["x"].IsComputed())
				assert.True(t, a.OldOutputs()["r"].IsResourceReference())
				assert.True(t, a.OldOutputs()["o"].IsOutput())
			},
		},
		{
			name: "delete",
			req: &pulumirpc.ErrorHookRequest{
				Urn: urnBucket, Id: "b-1", FailedOperation: "delete", Errors: []string{"in use"},
				OldInputs: object(nil), OldOutputs: object(nil), OldOptions: &pulumirpc.ResourceOptions{RetainOnDelete: ptr(false)},
			},
			check: func(t *testing.T, a *hooks.ErrorArgs) {
				assert.Equal(t, hooks.OperationDelete, a.FailedOperation)
				assert.Nil(t, a.NewInputs())
				assert.NotNil(t, a.OldInputs())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var seen capture[*hooks.ErrorArgs]
			var again capture[*pulumirpc.ErrorHookRequest]
			cb, err := srv.Register(context.Background(), hooks.AdaptErrorHook(func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
				seen.set(a)
				req, err := a.ToProto()
				if err != nil {
					return false, err
				}
				again.set(req)
				return false, nil
			}))
			require.NoError(t, err)

			var resp pulumirpc.ErrorHookResponse
			require.NoError(t, wiretest.Call(t, cb, tt.req, &resp))
			wiretest.RequireProtoEqual(t, &pulumirpc.ErrorHookResponse{}, &resp)

			got, n := again.get()
			require.Equal(t, 1, n, "hook calls")
			wiretest.RequireProtoEqual(t, tt.req, got)
			a, _ := seen.get()
			tt.check(t, a)
		})
	}
}

// TestHookResults checks what reaches the engine for each outcome of a
// hook: errors travel in the response, with a gRPC OK.
func TestHookResults(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	req := &pulumirpc.ResourceHookRequest{Urn: urnBucket, NewInputs: object(nil)}

	t.Run("resource", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			err  error
			want *pulumirpc.ResourceHookResponse
		}{
			{"success", nil, &pulumirpc.ResourceHookResponse{}},
			{"error", errors.New("Oh no"), &pulumirpc.ResourceHookResponse{Error: "Oh no"}},
			{"wrapped-error", errors.Join(errors.New("a"), errors.New("b")), &pulumirpc.ResourceHookResponse{Error: "a\nb"}},
			{"error-without-message", errors.New(""), &pulumirpc.ResourceHookResponse{Error: "hook failed with an error that has no message"}},
			{"status-error", status.Error(codes.PermissionDenied, "denied"), &pulumirpc.ResourceHookResponse{Error: "rpc error: code = PermissionDenied desc = denied"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				cb, err := srv.Register(context.Background(), hooks.Adapt(func(context.Context, *hooks.Args) error { return tt.err }))
				require.NoError(t, err)
				var resp pulumirpc.ResourceHookResponse
				require.NoError(t, wiretest.Call(t, cb, req, &resp), "the call itself must succeed")
				wiretest.RequireProtoEqual(t, tt.want, &resp)
			})
		}
	})

	t.Run("error", func(t *testing.T) {
		t.Parallel()
		ereq := &pulumirpc.ErrorHookRequest{Urn: urnBucket, FailedOperation: "create", Errors: []string{"x"}}
		tests := []struct {
			name  string
			retry bool
			err   error
			want  *pulumirpc.ErrorHookResponse
		}{
			{"retry", true, nil, &pulumirpc.ErrorHookResponse{Retry: true}},
			{"no-retry", false, nil, &pulumirpc.ErrorHookResponse{}},
			{"error", false, errors.New("cannot decide"), &pulumirpc.ErrorHookResponse{Error: "cannot decide"}},
			{"error-wins-over-retry", true, errors.New("broken"), &pulumirpc.ErrorHookResponse{Error: "broken"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				cb, err := srv.Register(context.Background(), hooks.AdaptErrorHook(func(context.Context, *hooks.ErrorArgs) (bool, error) { return tt.retry, tt.err }))
				require.NoError(t, err)
				var resp pulumirpc.ErrorHookResponse
				require.NoError(t, wiretest.Call(t, cb, ereq, &resp), "the call itself must succeed")
				wiretest.RequireProtoEqual(t, tt.want, &resp)
			})
		}
	})

	t.Run("undecodable-properties", func(t *testing.T) {
		t.Parallel()
		var called atomic.Bool
		cb, err := srv.Register(context.Background(), hooks.Adapt(func(context.Context, *hooks.Args) error { called.Store(true); return nil }))
		require.NoError(t, err)
		bad := &pulumirpc.ResourceHookRequest{Urn: urnBucket, NewInputs: object(map[string]*structpb.Value{
			"s": withSig(secretSig, nil), // a secret without a value
		})}
		err = wiretest.Call(t, cb, bad, &pulumirpc.ResourceHookResponse{})
		require.Error(t, err)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "error: %v", err)
		assert.Contains(t, err.Error(), urnBucket)
		assert.False(t, called.Load())
	})

	t.Run("context-is-the-call's", func(t *testing.T) {
		t.Parallel()
		var info capture[callbacks.CallInfo]
		cb, err := srv.Register(context.Background(), hooks.Adapt(func(ctx context.Context, a *hooks.Args) error {
			ci, ok := callbacks.CallInfoFrom(ctx)
			if !ok {
				return errors.New("not a callback context")
			}
			info.set(ci)
			return nil
		}), callbacks.Name("audit"))
		require.NoError(t, err)
		var resp pulumirpc.ResourceHookResponse
		require.NoError(t, wiretest.Call(t, cb, req, &resp))
		require.Empty(t, resp.GetError())
		ci, n := info.get()
		require.Equal(t, 1, n)
		assert.Equal(t, callbacks.KindResourceHook, ci.Kind)
		assert.Equal(t, "audit", ci.Name)
		assert.Equal(t, urnBucket, ci.URN)
	})
}
