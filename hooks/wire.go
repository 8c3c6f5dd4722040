package hooks

import (
	"fmt"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// mapField is a property map field of a hook request, kept encoded in into
// until read.
func mapField(pb proto.Message, name protoreflect.Name, into *wire.Lazy) wire.Field {
	return wire.Field{Num: wire.FieldNum(pb, name), Into: into}
}

// decodePayload decodes a serialized ResourceHookRequest into Args: the
// property maps are checked and kept encoded until read (see wire.Lazy),
// the other fields are decoded by the protobuf runtime. Even on error, the
// returned Args holds the URN if it was read. With owned, b belongs to the
// call and is never written again.
func decodePayload(b []byte, owned bool) (*Args, error) {
	a := &Args{}
	var pb pulumirpc.ResourceHookRequest
	_, err := wire.DecodeRequest(b, owned, &pb,
		mapField(&pb, "new_inputs", &a.newInputs), mapField(&pb, "old_inputs", &a.oldInputs),
		mapField(&pb, "new_outputs", &a.newOutputs), mapField(&pb, "old_outputs", &a.oldOutputs))
	a.URN, a.ID, a.Name, a.Type = resource.URN(pb.GetUrn()), resource.ID(pb.GetId()), pb.GetName(), pb.GetType()
	if err != nil {
		return a, err
	}
	a.newOptions, a.oldOptions, err = bothOptions(pb.GetNewOptions(), pb.GetOldOptions())
	return a, err
}

// decodeErrorPayload decodes a serialized ErrorHookRequest into ErrorArgs,
// like decodePayload.
func decodeErrorPayload(b []byte, owned bool) (*ErrorArgs, error) {
	a := &ErrorArgs{}
	var pb pulumirpc.ErrorHookRequest
	_, err := wire.DecodeRequest(b, owned, &pb,
		mapField(&pb, "new_inputs", &a.newInputs), mapField(&pb, "old_inputs", &a.oldInputs),
		mapField(&pb, "old_outputs", &a.oldOutputs))
	a.URN, a.ID, a.Name, a.Type = resource.URN(pb.GetUrn()), resource.ID(pb.GetId()), pb.GetName(), pb.GetType()
	a.FailedOperation, a.Errors = Operation(pb.GetFailedOperation()), pb.GetErrors()
	if err != nil {
		return a, err
	}
	a.newOptions, a.oldOptions, err = bothOptions(pb.GetNewOptions(), pb.GetOldOptions())
	return a, err
}

// bothOptions converts a hook request's new and old options.
func bothOptions(newPB, oldPB *pulumirpc.ResourceOptions) (newOpts, oldOpts *transforms.ResourceOptions, err error) {
	if newOpts, err = optionsFromProto(newPB); err != nil {
		return nil, nil, fmt.Errorf("new_options: %w", err)
	}
	if oldOpts, err = optionsFromProto(oldPB); err != nil {
		return nil, nil, fmt.Errorf("old_options: %w", err)
	}
	return newOpts, oldOpts, nil
}

// inputs returns a map of a hook request: nil when the request did not
// carry it, decoded on the first call otherwise.
func inputs(l *wire.Lazy) resource.PropertyMap {
	if !l.Sent() {
		return nil
	}
	return l.Map()
}
