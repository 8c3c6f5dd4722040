package invoketransforms

// What the tests of this package reach that users do not: the codecs the
// adapter runs, on messages rather than on payloads, and the protobuf
// runtime's conversions of the options, which the wire codecs of
// optwire.go are held to.

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
		return encodePayload(res, acceptsByteStrings, nil, nil, false)
	})
}

// OptionsFromProto converts the protobuf runtime's form of invoke options.
// A nil message converts to empty options. The result shares the message's
// map.
func OptionsFromProto(pb *pulumirpc.TransformInvokeOptions) *InvokeOptions {
	if pb == nil {
		return &InvokeOptions{}
	}
	return &InvokeOptions{
		Provider:          pb.GetProvider(),
		PluginDownloadURL: pb.GetPluginDownloadUrl(),
		Version:           pb.GetVersion(),
		PluginChecksums:   pb.GetPluginChecksums(),
		unknown:           pb.ProtoReflect().GetUnknown(),
	}
}

// ToProto converts the options to the protobuf runtime's form. A nil
// receiver converts to nil. The message shares the options' map.
func (o *InvokeOptions) ToProto() *pulumirpc.TransformInvokeOptions {
	if o == nil {
		return nil
	}
	pb := &pulumirpc.TransformInvokeOptions{
		Provider:          o.Provider,
		PluginDownloadUrl: o.PluginDownloadURL,
		Version:           o.Version,
		PluginChecksums:   o.PluginChecksums,
	}
	if len(o.unknown) > 0 {
		pb.ProtoReflect().SetUnknown(o.unknown)
	}
	return pb
}
