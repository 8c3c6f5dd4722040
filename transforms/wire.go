package transforms

import (
	"fmt"

	"github.com/langhost/callbacks/internal/transformcore"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// The property map fields of the request and of the response.
var (
	requestProperties  = wire.FieldNum(&pulumirpc.TransformRequest{}, "properties")
	responseProperties = wire.FieldNum(&pulumirpc.TransformResponse{}, "properties")
)

// decodePayload decodes a serialized TransformRequest into Args: the
// properties are checked and kept encoded until read (see wire.Lazy), the
// other fields are decoded by the protobuf runtime. Even on error, the
// returned Args holds the type and name if they were read. With owned, b
// belongs to the call and is never written again.
func decodePayload(b []byte, owned bool) (*Args, error) {
	a := &Args{}
	var pb pulumirpc.TransformRequest
	err := a.props.Decode(b, owned, &pb, requestProperties)
	a.Type, a.Name, a.Custom, a.Parent = pb.GetType(), pb.GetName(), pb.GetCustom(), resource.URN(pb.GetParent())
	if err != nil {
		return a, err
	}
	if a.Options, err = optionsFromProto(pb.GetOptions()); err != nil {
		return a, fmt.Errorf("options: %w", err)
	}
	a.Options.Parent = a.Parent
	a.URN = childURN(a.Parent, a.Type, a.Name)
	return a, nil
}

// encodePayload encodes res as a serialized TransformResponse to the
// request a decoded to, in whose bytes a result that sends the properties
// back unread and the options as received is answered.
func encodePayload(a *Args, res *Result, acceptsByteStrings bool) ([]byte, error) {
	var rest proto.Message
	if res.Options != nil {
		opts, err := res.Options.toProto(acceptsByteStrings)
		if err != nil {
			return nil, err
		}
		rest = &pulumirpc.TransformResponse{Options: opts}
	}
	var from *transformcore.Props
	if res.from != nil {
		from = &res.from.props
	}
	return a.props.Reply(responseProperties, res.Properties, from, rest, acceptsByteStrings)
}

// snapshot encodes a as a request that decodes (see decodePayload) to Args
// equal to a, whatever is done to a afterwards.
func snapshot(a *Args) ([]byte, error) {
	req := &pulumirpc.TransformRequest{Type: a.Type, Name: a.Name, Custom: a.Custom, Parent: string(a.Parent)}
	if a.Options != nil {
		var err error
		if req.Options, err = a.Options.toProto(true); err != nil {
			return nil, err
		}
	}
	return a.props.Copy(requestProperties, req)
}
