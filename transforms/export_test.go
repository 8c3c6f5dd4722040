package transforms

// What the external tests of this package reach that users do not: the
// codecs the adapter runs, on messages rather than on payloads.

import (
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
)

// Adapt is the callbacks.Func a registration makes of fn, in a deployment
// that is not a preview.
func Adapt(fn Func) callbacks.Func { return newFunc(fn, false) }

// DecodeRequest runs the adapter's decoder on req's encoding, so it accepts
// and refuses exactly what a registered transform does.
func DecodeRequest(req *pulumirpc.TransformRequest) (*Args, error) {
	return wiretest.Decode(req, decodePayload)
}

// EncodeResult runs the adapter's encoder on res, outside a call. A nil
// result is the empty response.
func EncodeResult(res *Result, acceptsByteStrings bool) (*pulumirpc.TransformResponse, error) {
	return wiretest.Encode[pulumirpc.TransformResponse](func() ([]byte, error) {
		if res == nil {
			return nil, nil
		}
		return encodePayload(&Args{}, res, acceptsByteStrings)
	})
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
