package invoketransforms

// What the tests of this package reach that users do not: the codecs the
// adapter runs, on messages rather than on payloads, and the conversions of
// the options.

import (
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
)

// Adapt is the callbacks.Func a registration makes of fn, in a deployment
// that is not a preview.
func Adapt(fn Func) callbacks.Func { return newFunc(fn, false) }

// DecodeRequest runs the adapter's decoder on req's encoding, so it accepts
// and refuses exactly what a registered invoke transform does.
func DecodeRequest(req *pulumirpc.TransformInvokeRequest) (*Args, error) {
	return wiretest.Decode(req, decodePayload)
}

// EncodeResult runs the adapter's encoder on res, outside a call. A nil
// result is the empty response.
func EncodeResult(res *Result, acceptsByteStrings bool) (*pulumirpc.TransformInvokeResponse, error) {
	return wiretest.Encode[pulumirpc.TransformInvokeResponse](func() ([]byte, error) {
		if res == nil {
			return nil, nil
		}
		return encodePayload(&Args{}, res, acceptsByteStrings)
	})
}

// OptionsFromProto and ToProto are the conversions of the options.
var OptionsFromProto = optionsFromProto

func (o *InvokeOptions) ToProto() *pulumirpc.TransformInvokeOptions { return o.toProto() }
