package hooks_test

import (
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
)

// FuzzResourceHookRequest feeds arbitrary payloads to the request decoder:
// it must not panic, and whatever decodes must encode back to a request that
// decodes and encodes to itself.
func FuzzResourceHookRequest(f *testing.F) {
	for _, req := range []*pulumirpc.ResourceHookRequest{
		{Urn: urnBucket, NewInputs: object(map[string]*structpb.Value{"s": secret(str("x")), "u": unknown(), "b": wiretest.ByteString([]byte{0xff})})},
		{Urn: urnBucket, OldOutputs: object(map[string]*structpb.Value{"r": ref(urnRole, "id"), "o": output(nil, true, urnComp)}), NewOptions: fullOptions()},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var req pulumirpc.ResourceHookRequest
		if proto.Unmarshal(payload, &req) != nil {
			return
		}
		a, err := hooks.DecodeArgs(&req)
		if err != nil {
			return
		}
		first, err := a.ToProto()
		if err != nil {
			return
		}
		again, err := hooks.DecodeArgs(first)
		if err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		second, err := again.ToProto()
		if err != nil {
			t.Fatalf("second encoding failed: %v", err)
		}
		if !proto.Equal(first, second) {
			t.Fatalf("encoding is not stable:\n%v\n%v", first, second)
		}
	})
}
