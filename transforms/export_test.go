package transforms

// What the external tests of this package reach that users do not: the
// codecs the adapter runs, on messages rather than on payloads.

import (
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
)

// Adapt is the callbacks.Func a registration makes of fn, in a deployment
// that is not a preview.
func Adapt(fn Func) callbacks.Func {
	if fn == nil {
		return callbacks.ResourceTransform(nil)
	}
	return newFunc(fn, false)
}

// DecodeRequest runs the adapter's decoder on req's encoding, so it accepts
// and refuses exactly what a registered transform does.
func DecodeRequest(req *pulumirpc.TransformRequest) (*Args, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return decodePayload(b, true) // b is this call's own encoding
}

// EncodeResult runs the adapter's encoder on res, outside a call.
func EncodeResult(res *Result, acceptsByteStrings bool) (*pulumirpc.TransformResponse, error) {
	out := &pulumirpc.TransformResponse{}
	if res == nil {
		return out, nil
	}
	b, err := encodePayload(res, acceptsByteStrings, nil, nil, false)
	if err != nil {
		return nil, err
	}
	return out, proto.Unmarshal(b, out)
}

// OptionsFromProto, HooksFromProto and the methods below are the
// conversions of the protobuf path.
var (
	OptionsFromProto = optionsFromProto
	HooksFromProto   = bindingFromProto
)

func (o *ResourceOptions) ToProto(acceptsByteStrings bool) (*pulumirpc.TransformResourceOptions, error) {
	return o.toProto(acceptsByteStrings)
}

func (b *HooksBinding) ToProto() *pulumirpc.RegisterResourceRequest_ResourceHooksBinding {
	return b.toProto()
}
