package invoketransforms

import (
	"github.com/langhost/callbacks/internal/wire"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// The argument map fields of the request and of the response.
var (
	requestArgs  = wire.FieldNum(&pulumirpc.TransformInvokeRequest{}, "args")
	responseArgs = wire.FieldNum(&pulumirpc.TransformInvokeResponse{}, "args")
)

// decodePayload decodes a serialized TransformInvokeRequest into Args: the
// arguments are checked and kept encoded until read (see wire.Lazy), the
// other fields are decoded by the protobuf runtime. Even on error, the
// returned Args holds the token if it was read. With owned, b belongs to
// the call and is never written again.
func decodePayload(b []byte, owned bool) (*Args, error) {
	a := &Args{}
	var pb pulumirpc.TransformInvokeRequest
	msg, err := wire.DecodeRequest(b, owned, &pb, wire.Field{Num: requestArgs, Into: &a.args})
	a.msg, a.Token, a.Options = msg, pb.GetToken(), optionsFromProto(pb.GetOptions())
	return a, err
}

// encodePayload encodes res as a serialized TransformInvokeResponse. msg is
// the request the call decoded (nil outside a call), in whose bytes a
// result that sends the arguments back unread and the options as received
// is answered.
func encodePayload(msg *wire.Message, res *Result, acceptsByteStrings bool) ([]byte, error) {
	r := wire.Reply{Num: responseArgs, Props: res.Args}
	if res.Args == nil && res.from != nil {
		r.From = &res.from.args
	}
	if res.Options != nil {
		r.Rest = &pulumirpc.TransformInvokeResponse{Options: res.Options.toProto()}
	}
	return msg.EncodeReply(r, acceptsByteStrings)
}

// optionsFromProto converts the wire form of invoke options. A nil message
// converts to empty options. The result shares the message's map.
func optionsFromProto(pb *pulumirpc.TransformInvokeOptions) *InvokeOptions {
	return &InvokeOptions{
		Provider:          pb.GetProvider(),
		PluginDownloadURL: pb.GetPluginDownloadUrl(),
		Version:           pb.GetVersion(),
		PluginChecksums:   pb.GetPluginChecksums(),
		unknown:           pb.ProtoReflect().GetUnknown(),
	}
}

// toProto converts the options to their wire form. A nil receiver converts
// to nil. The message shares the options' map.
func (o *InvokeOptions) toProto() *pulumirpc.TransformInvokeOptions {
	if o == nil {
		return nil
	}
	pb := &pulumirpc.TransformInvokeOptions{
		Provider:          o.Provider,
		PluginDownloadUrl: o.PluginDownloadURL,
		Version:           o.Version,
		PluginChecksums:   o.PluginChecksums,
	}
	wire.SetUnknown(pb, o.unknown)
	return pb
}
