package calllog

import (
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks/internal/changes"
)

// Change is one value a call changed, as a record lists it.
type Change = changes.Change

// ChangeBounds bound what a record says a call changed.
type ChangeBounds = changes.Bounds

// DiffCall returns what a call of kind ("resource_transform",
// "invoke_transform" or "state_migration") changed, given its request and
// the answer the engine was sent (empty: nothing changed), within b, and
// how many changes b left out; every secret is hidden. It fails only on
// payloads that do not decode as the kind's messages.
func DiffCall(kind string, request, answer []byte, b ChangeBounds) ([]Change, int, error) {
	s := changes.New(b, false)
	switch kind {
	case "resource_transform":
		req, res := &pulumirpc.TransformRequest{}, &pulumirpc.TransformResponse{}
		if err := unmarshalBoth(request, req, answer, res); err != nil {
			return nil, 0, err
		}
		s.Structs("properties", req.GetProperties(), or(res.GetProperties(), req.GetProperties()))
		s.Options("options", req.GetOptions(), or(res.GetOptions(), req.GetOptions()))
	case "invoke_transform":
		req, res := &pulumirpc.TransformInvokeRequest{}, &pulumirpc.TransformInvokeResponse{}
		if err := unmarshalBoth(request, req, answer, res); err != nil {
			return nil, 0, err
		}
		s.Structs("args", req.GetArgs(), or(res.GetArgs(), req.GetArgs()))
		s.Options("options", req.GetOptions(), or(res.GetOptions(), req.GetOptions()))
	case "state_migration":
		req, res := &pulumirpc.StateMigrationRequest{}, &pulumirpc.StateMigrationResponse{}
		if err := unmarshalBoth(request, req, answer, res); err != nil {
			return nil, 0, err
		}
		newState := res.GetNewState()
		if len(newState) == 0 {
			newState = req.GetOldState()
		}
		s.States(req.GetOldState(), newState)
		s.Successors(nil, res.GetSuccessors())
	default:
		return nil, 0, nil
	}
	out, leftOut := s.Changes()
	return out, leftOut, nil
}

func unmarshalBoth(req []byte, reqM proto.Message, res []byte, resM proto.Message) error {
	if err := proto.Unmarshal(req, reqM); err != nil {
		return fmt.Errorf("the request is not a valid %s", reqM.ProtoReflect().Descriptor().Name())
	}
	if err := proto.Unmarshal(res, resM); err != nil {
		return fmt.Errorf("the answer is not a valid %s", resM.ProtoReflect().Descriptor().Name())
	}
	return nil
}

// or returns m, or dflt where the answer left m out.
func or[M comparable](m, dflt M) M {
	var zero M
	if m == zero {
		return dflt
	}
	return m
}
