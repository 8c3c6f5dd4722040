package benchdata_test

import (
	"testing"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/proto"
)

var keep = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true, KeepOutputValues: true}

// TestPayloadsMatchTheHarness checks what the package comment promises:
// sizes, property counts, and that the encoding is the one the SDK's
// property marshalling reads and writes back unchanged.
func TestPayloadsMatchTheHarness(t *testing.T) {
	for _, tc := range []struct {
		size             string
		props            int
		minBytes, maxLen int
		secrets, unknown int
	}{
		{"small", 5, 300, 400, 0, 0},
		{"medium", 50, 3000, 4000, 1, 1},
		{"large", 52, benchdata.LargeMinBytes, benchdata.LargeMinBytes + 4096, 1, 1},
	} {
		t.Run(tc.size, func(t *testing.T) {
			req := benchdata.TransformRequest(tc.size)
			if n := len(benchdata.Marshal(req)); n < tc.minBytes || n > tc.maxLen {
				t.Errorf("serialized size %d, want %d..%d", n, tc.minBytes, tc.maxLen)
			}
			if n := len(req.GetProperties().GetFields()); n != tc.props {
				t.Errorf("got %d top-level properties, want %d", n, tc.props)
			}
			pm, err := plugin.UnmarshalProperties(req.GetProperties(), keep)
			if err != nil {
				t.Fatal(err)
			}
			secrets, unknowns := 0, 0
			for _, v := range pm {
				if v.IsSecret() {
					secrets++
				}
				if v.IsComputed() {
					unknowns++
				}
			}
			if secrets != tc.secrets || unknowns != tc.unknown {
				t.Errorf("got %d secrets and %d unknowns, want %d and %d", secrets, unknowns, tc.secrets, tc.unknown)
			}
			back, err := plugin.MarshalProperties(pm, keep)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, req.GetProperties()) {
				t.Error("the properties do not survive the SDK's round trip unchanged")
			}
			if !proto.Equal(req, benchdata.TransformRequest(tc.size)) {
				t.Error("two builds differ")
			}
		})
	}
}

func TestEngineAndDeepRequestsDecode(t *testing.T) {
	pm, err := plugin.UnmarshalProperties(benchdata.EngineTransformRequest().GetProperties(), keep)
	if err != nil {
		t.Fatal(err)
	}
	outputs := 0
	for _, v := range pm {
		if v.IsOutput() {
			outputs++
		}
	}
	if outputs != 3 {
		t.Errorf("engine request: got %d output values, want 3", outputs)
	}
	pm, err = plugin.UnmarshalProperties(benchdata.DeepTransformRequest(10).GetProperties(), keep)
	if err != nil {
		t.Fatal(err)
	}
	depth := 0
	for v := pm["tree"]; v.IsObject(); v = v.ObjectValue()["child"] {
		depth++
	}
	if depth != 10 {
		t.Errorf("deep request: got depth %d, want 10", depth)
	}
}

func TestOtherKindsCarryTheProperties(t *testing.T) {
	for _, size := range benchdata.Sizes {
		props := benchdata.Properties(size)
		if !proto.Equal(benchdata.InvokeTransformRequest(size).GetArgs(), props) ||
			!proto.Equal(benchdata.ResourceHookRequest(size).GetNewInputs(), props) ||
			!proto.Equal(benchdata.ErrorHookRequest(size).GetOldOutputs(), props) ||
			len(benchdata.StateMigrationRequest(size).GetOldState()) == 0 {
			t.Errorf("%s: a request does not carry the %s properties", size, size)
		}
	}
}
