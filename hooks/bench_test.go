package hooks_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// benchMap is a property map of n string entries of size bytes each.
func benchMap(n, size int) *structpb.Struct {
	val := make([]byte, size)
	for i := range val {
		val[i] = 'a' + byte(i%26)
	}
	fields := make(map[string]*structpb.Value, n)
	for i := range n {
		fields["key"+strconv.Itoa(i)] = structpb.NewStringValue(string(val))
	}
	return &structpb.Struct{Fields: fields}
}

// benchOptions are the options the engine sends for an ordinary resource.
func benchOptions() *pulumirpc.ResourceOptions {
	return &pulumirpc.ResourceOptions{
		Parent:         "urn:pulumi:dev::proj::pkg:index:Component::app",
		DependsOn:      []string{"urn:pulumi:dev::proj::aws:iam/role:Role::role"},
		Protect:        ptr(false),
		RetainOnDelete: ptr(false),
		Provider:       "urn:pulumi:dev::proj::pulumi:providers:aws::default::0c0ffee",
		IgnoreChanges:  []string{"tags"},
		CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "5m"},
		Hooks:          &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeUpdate: []string{"check"}},
	}
}

// benchRequests encodes the requests of an update: a resource hook request
// that carries all four maps and both option sets, and an error hook request
// that carries its three maps and both option sets; each map holds n string
// entries of size bytes each.
func benchRequests(b *testing.B, n, size int) (hook, errHook []byte) {
	b.Helper()
	hook, err := proto.Marshal(&pulumirpc.ResourceHookRequest{
		Urn: urnBucket, Id: "bucket-1", Name: "logs", Type: "aws:s3/bucket:Bucket",
		NewInputs: benchMap(n, size), OldInputs: benchMap(n, size),
		NewOutputs: benchMap(n, size), OldOutputs: benchMap(n, size),
		NewOptions: benchOptions(), OldOptions: benchOptions(),
	})
	if err != nil {
		b.Fatal(err)
	}
	errHook, err = proto.Marshal(&pulumirpc.ErrorHookRequest{
		Urn: urnBucket, Id: "bucket-1", Name: "logs", Type: "aws:s3/bucket:Bucket",
		FailedOperation: "update", Errors: []string{"throttled"},
		NewInputs: benchMap(n, size), OldInputs: benchMap(n, size), OldOutputs: benchMap(n, size),
		NewOptions: benchOptions(), OldOptions: benchOptions(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return hook, errHook
}

// rawNoError is the floor: a raw-kind function that answers every request
// with the response a hook that succeeds sends (the empty one), without
// looking at the request.
func rawNoError(context.Context, []byte) ([]byte, error) { return nil, nil }

// BenchmarkUnread compares, in process through Registry.Invoke, a hook that
// reads nothing (only the URN) with a raw-kind function that answers the
// same request with the same empty response, and with a hook that reads
// every map and both option sets; for resource hooks and error hooks. The
// ratio unread/raw is what BENCHMARKS.md records; nothing here asserts it.
func BenchmarkUnread(b *testing.B) {
	sizes := []struct {
		name    string
		n, size int
	}{
		{"small", 4, 16},
		{"medium", 64, 256},
		{"1MB", 16, 16 << 10}, // 4 maps of 256 KiB
	}
	reg, err := callbacks.NewRegistry()
	if err != nil {
		b.Fatal(err)
	}
	var sink int
	hookFns := []struct {
		name string
		fn   callbacks.Func
	}{
		{"raw", callbacks.Raw(rawNoError)},
		{"unread", hooks.Adapt(func(_ context.Context, a *hooks.Args) error {
			sink += len(a.URN)
			return nil
		})},
		{"read", hooks.Adapt(func(_ context.Context, a *hooks.Args) error {
			sink += len(a.NewInputs()) + len(a.OldInputs()) + len(a.NewOutputs()) + len(a.OldOutputs())
			sink += len(a.NewOptions().DependsOn) + len(a.OldOptions().DependsOn)
			return nil
		})},
	}
	errFns := []struct {
		name string
		fn   callbacks.Func
	}{
		{"raw", callbacks.Raw(rawNoError)},
		{"unread", hooks.AdaptErrorHook(func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			sink += len(a.URN)
			return false, nil
		})},
		{"read", hooks.AdaptErrorHook(func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			sink += len(a.NewInputs()) + len(a.OldInputs()) + len(a.OldOutputs())
			sink += len(a.NewOptions().DependsOn) + len(a.OldOptions().DependsOn)
			return false, nil
		})},
	}
	run := func(b *testing.B, fn callbacks.Func, payload []byte) {
		token, err := reg.Register(fn)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Invoke(context.Background(), token, payload); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, sz := range sizes {
		hook, errHook := benchRequests(b, sz.n, sz.size)
		for _, f := range hookFns {
			b.Run("hook/"+sz.name+"/"+f.name, func(b *testing.B) { run(b, f.fn, hook) })
		}
		for _, f := range errFns {
			b.Run("error/"+sz.name+"/"+f.name, func(b *testing.B) { run(b, f.fn, errHook) })
		}
	}
	_ = sink
}
