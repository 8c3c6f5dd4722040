package hooks_test

import (
	"context"
	"errors"
	"github.com/langhost/callbacks/transforms"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/internal/wire"
)

// seen is what a hook that reads everything saw.
type seen struct {
	maps [4]resource.PropertyMap
	opts [2]*transforms.ResourceOptions
}

// referenceDecode decodes a request the way hooks did before their values
// became lazy, and as the SDK would: protobuf, then each map and option set.
// It reports whether that decode accepts the payload, and what it gives.
func referenceDecode(payload []byte, errorHook bool) (seen, bool) {
	var s seen
	var structs [4]*structpb.Struct
	var opts [2]*pulumirpc.ResourceOptions
	if errorHook {
		var req pulumirpc.ErrorHookRequest
		if proto.Unmarshal(payload, &req) != nil {
			return s, false
		}
		structs = [4]*structpb.Struct{req.GetNewInputs(), req.GetOldInputs(), nil, req.GetOldOutputs()}
		opts = [2]*pulumirpc.ResourceOptions{req.GetNewOptions(), req.GetOldOptions()}
	} else {
		var req pulumirpc.ResourceHookRequest
		if proto.Unmarshal(payload, &req) != nil {
			return s, false
		}
		structs = [4]*structpb.Struct{req.GetNewInputs(), req.GetOldInputs(), req.GetNewOutputs(), req.GetOldOutputs()}
		opts = [2]*pulumirpc.ResourceOptions{req.GetNewOptions(), req.GetOldOptions()}
	}
	var err error
	for i, st := range structs {
		if s.maps[i], err = wire.UnmarshalStruct(st); err != nil {
			return s, false
		}
	}
	for i, o := range opts {
		if s.opts[i], err = hooks.OptionsFromProto(o); err != nil {
			return s, false
		}
	}
	return s, true
}

// FuzzHookReadsNothing feeds arbitrary bytes to four registered hooks: a
// resource hook and an error hook that read nothing but the URN (their maps
// and options are only checked), and two that read every map and option set
// (decoded on first use). The hooks that read nothing must refuse exactly
// the requests the hooks that read everything refuse, with the same coded
// error, and both exactly those that protobuf plus the property decoder
// refuse; what the reading hooks see must equal what that decode gives.
func FuzzHookReadsNothing(f *testing.F) {
	for _, m := range []proto.Message{
		&pulumirpc.ResourceHookRequest{Urn: urnBucket, NewInputs: object(map[string]*structpb.Value{"s": secret(str("x")), "u": unknown(), "b": wiretest.ByteString([]byte{0xff})}), NewOptions: fullOptions()},
		&pulumirpc.ResourceHookRequest{Urn: urnBucket, OldOutputs: object(map[string]*structpb.Value{"r": ref(urnRole, "id"), "o": output(nil, true, urnComp)}), OldOptions: fullOptions()},
		&pulumirpc.ErrorHookRequest{Urn: urnBucket, FailedOperation: "update", Errors: []string{"e2", "e1"},
			NewInputs: object(map[string]*structpb.Value{"l": list(num(1), str("a"))}), OldOutputs: object(nil), NewOptions: fullOptions(), OldOptions: &pulumirpc.ResourceOptions{}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x2a, 0x02, 0x0a, 0x00})       // new_inputs holding an empty field entry
	f.Add([]byte{0x52, 0x03, 0x0a, 0x01, 0xff}) // options whose depends_on is not UTF-8
	reg, err := callbacks.NewRegistry()
	if err != nil {
		f.Fatal(err)
	}
	register := func(fn callbacks.Func) string {
		tok, err := reg.Register(fn)
		if err != nil {
			f.Fatal(err)
		}
		return tok
	}
	var got seen
	hookUnread := register(hooks.Adapt(func(context.Context, *hooks.Args) error { return nil }))
	hookRead := register(hooks.Adapt(func(_ context.Context, a *hooks.Args) error {
		got = seen{
			maps: [4]resource.PropertyMap{a.NewInputs(), a.OldInputs(), a.NewOutputs(), a.OldOutputs()},
			opts: [2]*transforms.ResourceOptions{a.NewOptions(), a.OldOptions()},
		}
		return nil
	}))
	errUnread := register(hooks.AdaptErrorHook(func(context.Context, *hooks.ErrorArgs) (bool, error) { return false, nil }))
	errRead := register(hooks.AdaptErrorHook(func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
		got = seen{
			maps: [4]resource.PropertyMap{a.NewInputs(), a.OldInputs(), nil, a.OldOutputs()},
			opts: [2]*transforms.ResourceOptions{a.NewOptions(), a.OldOptions()},
		}
		return false, nil
	}))
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, k := range []struct {
			errorHook      bool
			unread, reader string
		}{{false, hookUnread, hookRead}, {true, errUnread, errRead}} {
			got = seen{}
			out, err := reg.Invoke(context.Background(), k.unread, payload)
			outRead, errRead := reg.Invoke(context.Background(), k.reader, payload)
			if (err == nil) != (errRead == nil) {
				t.Fatalf("error hook %v: unread: %v; read: %v", k.errorHook, err, errRead)
			}
			want, ok := referenceDecode(payload, k.errorHook)
			if ok != (err == nil) {
				t.Fatalf("error hook %v: the reference decode accepts: %v; the hook: %v", k.errorHook, ok, err)
			}
			if err != nil {
				var ce *callbacks.Error
				if !errors.As(err, &ce) || !errors.Is(err, callbacks.ErrInvalidRequest) {
					t.Fatalf("error hook %v: unexpected error %v", k.errorHook, err)
				}
				if err.Error() != errRead.Error() {
					t.Fatalf("error hook %v: unread and read refuse differently:\n%v\n%v", k.errorHook, err, errRead)
				}
				continue
			}
			if len(out) != 0 || len(outRead) != 0 {
				t.Fatalf("error hook %v: responses %x and %x, want empty", k.errorHook, out, outRead)
			}
			for i := range got.maps {
				if (got.maps[i] == nil) != (want.maps[i] == nil) || !got.maps[i].DeepEquals(want.maps[i]) {
					t.Fatalf("error hook %v: map %d: got %v, want %v", k.errorHook, i, got.maps[i], want.maps[i])
				}
			}
			for i := range got.opts {
				g, err1 := hooks.OptionsToProto(got.opts[i])
				w, err2 := hooks.OptionsToProto(want.opts[i])
				if (err1 == nil) != (err2 == nil) || !proto.Equal(g, w) {
					t.Fatalf("error hook %v: options %d: got %v, want %v", k.errorHook, i, g, w)
				}
			}
		}
	})
}
