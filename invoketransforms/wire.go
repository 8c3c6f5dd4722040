package invoketransforms

import (
	"github.com/langhost/callbacks/internal/transformcore"
	"github.com/langhost/callbacks/internal/wire"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
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
	err := a.props.Decode(b, owned, &pb, requestArgs)
	a.Token, a.Options = pb.GetToken(), optionsFromProto(pb.GetOptions())
	return a, err
}

// encodePayload encodes res as a serialized TransformInvokeResponse to the
// request a decoded to, in whose bytes a result that sends the arguments
// back unread and the options as received is answered.
func encodePayload(a *Args, res *Result, acceptsByteStrings bool) ([]byte, error) {
	var rest proto.Message
	if res.Options != nil {
		rest = &pulumirpc.TransformInvokeResponse{Options: res.Options.toProto()}
	}
	var from *transformcore.Props
	if res.from != nil {
		from = &res.from.props
	}
	return a.props.Reply(responseArgs, res.Properties, from, rest, acceptsByteStrings)
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
