package invoketransforms

// What the tests of this package reach that users do not: the codecs the
// adapter runs, on messages rather than on payloads, and the protobuf
// runtime's conversions of the options, which the wire codecs of
// optwire.go are held to.

import (
	"slices"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
)

// Adapt is the callbacks.Func a registration makes of fn, in a deployment
// that is not a preview.
func Adapt(fn Func) callbacks.Func {
	if fn == nil {
		return callbacks.InvokeTransform(nil)
	}
	return newFunc(fn, false)
}

// DecodeRequest runs the adapter's decoder on req's encoding, so it accepts
// and refuses exactly what a registered invoke transform does.
func DecodeRequest(req *pulumirpc.TransformInvokeRequest) (*Args, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	return decodePayload(b, true) // b is this call's own encoding
}

// EncodeResult runs the adapter's encoder on res, outside a call.
func EncodeResult(res *Result, acceptsByteStrings bool) (*pulumirpc.TransformInvokeResponse, error) {
	out := &pulumirpc.TransformInvokeResponse{}
	if res == nil {
		return out, nil
	}
	b, err := encodePayload(res, acceptsByteStrings, nil, nil, false)
	if err != nil {
		return nil, err
	}
	return out, proto.Unmarshal(b, out)
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

// Clone returns a deep copy of the options.
func (o *InvokeOptions) Clone() *InvokeOptions {
	if o == nil {
		return nil
	}
	c := *o
	if o.PluginChecksums != nil {
		c.PluginChecksums = make(map[string][]byte, len(o.PluginChecksums))
		for k, v := range o.PluginChecksums {
			c.PluginChecksums[k] = slices.Clone(v)
		}
	}
	c.unknown = slices.Clone(o.unknown)
	return &c
}
