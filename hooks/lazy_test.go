package hooks_test

import (
	"context"
	"github.com/langhost/callbacks/transforms"
	"sync/atomic"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
)

// field encodes a length-delimited field.
func field(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
}

// cat concatenates encodings.
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// The maps and options are checked when the request arrives, whether the
// hook reads them or not: what a decode refuses is refused with
// InvalidArgument naming the field, and the hook never runs.
func TestLazyValuesAreChecked(t *testing.T) {
	t.Parallel()
	goodMap := field(1, cat(field(1, []byte("acl")), field(2, field(3, []byte("private")))))
	badMaps := map[string][]byte{
		"key not UTF-8":   cat(goodMap, field(1, field(1, []byte{0xff}))),
		"truncated entry": cat(goodMap, []byte{0x0a, 0x05, 0x0a}),
		"bad wire type":   cat(goodMap, []byte{0x0b}),
	}
	badOptions := map[string][]byte{
		"depends_on not UTF-8":       field(1, []byte{0xff}),
		"alias name not UTF-8":       field(6, field(2, field(1, []byte{0xff}))),
		"providers value not UTF-8":  field(14, cat(field(1, []byte("aws")), field(2, []byte{0xff}))),
		"hook name not UTF-8":        field(16, field(1, []byte{'a', 0xff})),
		"truncated custom timeouts":  cat(field(5, []byte("6.0.0")), []byte{0x42, 0x05, 0x0a}),
		"replacement trigger bad":    field(20, field(3, []byte{0xff})),
		"stray end group":            []byte{0x0c},
		"protect as overlong varint": {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	base := field(1, []byte(urnBucket))
	type target struct {
		kind  string
		num   protowire.Number
		name  string
		isMap bool
	}
	targets := []target{
		{"hook", 5, "new_inputs", true}, {"hook", 6, "old_inputs", true},
		{"hook", 7, "new_outputs", true}, {"hook", 8, "old_outputs", true},
		{"hook", 10, "new_options", false}, {"hook", 9, "old_options", false},
		{"error", 5, "new_inputs", true}, {"error", 6, "old_inputs", true}, {"error", 7, "old_outputs", true},
		{"error", 11, "new_options", false}, {"error", 10, "old_options", false},
	}
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	var ran atomic.Int32 // subtests run one at a time
	hook, err := reg.Register(hooks.Adapt(func(context.Context, *hooks.Args) error {
		ran.Add(1)
		return nil
	}))
	require.NoError(t, err)
	errHook, err := reg.Register(hooks.AdaptErrorHook(func(context.Context, *hooks.ErrorArgs) (bool, error) {
		ran.Add(1)
		return false, nil
	}))
	require.NoError(t, err)
	for _, tg := range targets {
		bad := badOptions
		if tg.isMap {
			bad = badMaps
		}
		token := hook
		if tg.kind == "error" {
			token = errHook
		}
		for what, b := range bad {
			t.Run(tg.kind+"/"+tg.name+"/"+what, func(t *testing.T) {
				ran.Store(0)
				_, err := reg.Invoke(t.Context(), token, cat(base, field(tg.num, b)))
				require.ErrorIs(t, err, callbacks.ErrInvalidRequest)
				assert.Equal(t, codes.InvalidArgument, status.Code(err))
				if tg.isMap {
					assert.Contains(t, err.Error(), tg.name+":")
				} else {
					// The protobuf runtime decodes the options with the
					// rest of the request.
					assert.Contains(t, err.Error(), "not a valid pulumirpc.")
				}
				assert.Contains(t, err.Error(), urnBucket)
				assert.Zero(t, ran.Load(), "the hook ran on a request that does not decode")
				// The same field, well formed, reaches the hook.
				good := goodMap
				if !tg.isMap {
					good = field(5, []byte("6.0.0"))
				}
				_, err = reg.Invoke(t.Context(), token, cat(base, field(tg.num, good)))
				require.NoError(t, err)
				assert.Equal(t, int32(1), ran.Load())
			})
		}
	}
}

// What a hook reads is what the request carried, field by field, and nil
// for what it did not carry; a repeated map or option set is merged, as
// protobuf merges it.
func TestLazyValuesReadWhatWasSent(t *testing.T) {
	t.Parallel()
	entry := func(k, v string) []byte { return field(1, cat(field(1, []byte(k)), field(2, field(3, []byte(v))))) }
	payload := cat(field(1, []byte(urnBucket)),
		field(5, entry("a", "new-in")), field(7, entry("b", "new-out")),
		field(10, field(5, []byte("6.0.0"))), field(5, entry("c", "more")),
		field(10, field(7, []byte("prov"))))
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	var got *hooks.Args
	token, err := reg.Register(hooks.Adapt(func(_ context.Context, a *hooks.Args) error {
		got = a
		return nil
	}))
	require.NoError(t, err)
	_, err = reg.Invoke(t.Context(), token, payload)
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.Equal(t, resource.PropertyMap{"a": resource.NewProperty("new-in"), "c": resource.NewProperty("more")}, got.NewInputs())
	assert.Nil(t, got.OldInputs())
	assert.Equal(t, resource.PropertyMap{"b": resource.NewProperty("new-out")}, got.NewOutputs())
	assert.Nil(t, got.OldOutputs())
	require.NotNil(t, got.NewOptions())
	assert.Equal(t, "6.0.0", got.NewOptions().Version)
	assert.Equal(t, "prov", got.NewOptions().Provider)
	assert.Nil(t, got.OldOptions())

	var req pulumirpc.ResourceHookRequest
	require.NoError(t, proto.Unmarshal(payload, &req))
	back, err := got.ToProto()
	require.NoError(t, err)
	assert.True(t, proto.Equal(&req, back), "got %v, want %v", back, &req)
}

// Args built by hand, as in a unit test of a hook, carry what the Set
// methods put in, and nil for the rest.
func TestArgsByHand(t *testing.T) {
	t.Parallel()
	a := &hooks.Args{URN: urnBucket}
	assert.Nil(t, a.NewInputs())
	assert.Nil(t, a.NewOptions())
	in := resource.PropertyMap{"k": resource.NewProperty("v")}
	a.SetNewInputs(in)
	a.SetOldOutputs(resource.PropertyMap{})
	a.SetOldOptions(&transforms.ResourceOptions{Version: "1.0.0"})
	assert.Equal(t, in, a.NewInputs())
	assert.NotNil(t, a.OldOutputs())
	assert.Nil(t, a.OldInputs())
	assert.Nil(t, a.NewOutputs())
	assert.Equal(t, "1.0.0", a.OldOptions().Version)
	req, err := a.ToProto()
	require.NoError(t, err)
	assert.NotNil(t, req.GetNewInputs())
	assert.NotNil(t, req.GetOldOutputs())
	assert.Nil(t, req.GetOldInputs())
	assert.Equal(t, "1.0.0", req.GetOldOptions().GetVersion())
	a.SetNewInputs(nil)
	assert.Nil(t, a.NewInputs())

	e := &hooks.ErrorArgs{URN: urnBucket}
	assert.Nil(t, e.OldInputs())
	e.SetOldInputs(in)
	e.SetNewOptions(&transforms.ResourceOptions{Parent: urnComp})
	assert.Equal(t, in, e.OldInputs())
	assert.Equal(t, resource.URN(urnComp), e.NewOptions().Parent)
	ereq, err := e.ToProto()
	require.NoError(t, err)
	assert.NotNil(t, ereq.GetOldInputs())
	assert.Equal(t, urnComp, ereq.GetNewOptions().GetParent())
}

// An error hook's call context says which attempt it is, though the hook
// decodes its own request.
func TestErrorHookCallInfo(t *testing.T) {
	t.Parallel()
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	got := make(chan callbacks.CallInfo, 1)
	token, err := reg.Register(hooks.AdaptErrorHook(func(ctx context.Context, _ *hooks.ErrorArgs) (bool, error) {
		ci, _ := callbacks.CallInfoFrom(ctx)
		got <- ci
		return true, nil
	}))
	require.NoError(t, err)
	payload, err := proto.Marshal(&pulumirpc.ErrorHookRequest{Urn: urnBucket, Name: "logs", Type: "aws:s3/bucket:Bucket",
		FailedOperation: "create", Errors: []string{"second", "first"}})
	require.NoError(t, err)
	out, err := reg.Invoke(t.Context(), token, payload)
	require.NoError(t, err)
	var res pulumirpc.ErrorHookResponse
	require.NoError(t, proto.Unmarshal(out, &res))
	assert.True(t, res.GetRetry())
	ci := <-got
	assert.Equal(t, 2, ci.Attempt)
	assert.Equal(t, urnBucket, ci.URN)
	assert.Equal(t, "logs", ci.ResourceName)
	assert.Equal(t, "aws:s3/bucket:Bucket", ci.Type)
}

// NewArgs and NewErrorArgs give a hook exactly the values they were given,
// on the side they were given on.
func TestNewArgsFromValues(t *testing.T) {
	t.Parallel()
	in, out := resource.PropertyMap{"in": resource.NewProperty("i")}, resource.PropertyMap{"out": resource.NewProperty("o")}
	oldIn := resource.PropertyMap{"in": resource.NewProperty("old")}
	opts := &transforms.ResourceOptions{Version: "1"}
	urn := resource.URN(urnBucket)
	a := hooks.NewArgs(urn, "id-1", hooks.State{Inputs: in, Outputs: out, Options: opts}, hooks.State{Inputs: oldIn})
	assert.Equal(t, urn, a.URN)
	assert.Equal(t, resource.ID("id-1"), a.ID)
	assert.Equal(t, urn.Name(), a.Name)
	assert.Equal(t, string(urn.Type()), a.Type)
	assert.Equal(t, in, a.NewInputs())
	assert.Equal(t, out, a.NewOutputs())
	assert.Equal(t, oldIn, a.OldInputs())
	assert.Nil(t, a.OldOutputs())
	assert.Same(t, opts, a.NewOptions())
	assert.Nil(t, a.OldOptions())

	e := hooks.NewErrorArgs(urn, "", hooks.OperationCreate, []string{"second", "first"},
		hooks.State{Inputs: in, Options: opts}, hooks.State{Outputs: out})
	assert.Equal(t, hooks.OperationCreate, e.FailedOperation)
	assert.Equal(t, 2, e.Attempt())
	assert.Equal(t, "second", e.LastError())
	assert.Equal(t, in, e.NewInputs())
	assert.Nil(t, e.OldInputs())
	assert.Equal(t, out, e.OldOutputs())
	assert.Same(t, opts, e.NewOptions())
}
