package wire

import (
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// SetUnknown sets the fields of m that this version of the protocol does not
// know to raw, which m then shares. Empty raw leaves m as it is.
func SetUnknown(m protoreflect.ProtoMessage, raw protoreflect.RawFields) {
	if len(raw) > 0 {
		m.ProtoReflect().SetUnknown(raw)
	}
}

// Strings converts between string slices of different string types, such as
// URNs and their wire form; empty gives nil.
func Strings[To, From ~string](in []From) []To {
	if len(in) == 0 {
		return nil
	}
	out := make([]To, len(in))
	for i, s := range in {
		out[i] = To(s)
	}
	return out
}

// CloneBool returns a copy of b; nil stays nil.
func CloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	return new(*b)
}

// ValueFromProto converts a single wire value, such as a replacement
// trigger, with the same lossless rules as property maps. key names the
// value inside the map the conversion wraps it in.
func ValueFromProto(key string, v *structpb.Value) (resource.PropertyValue, error) {
	m, err := UnmarshalStruct(&structpb.Struct{Fields: map[string]*structpb.Value{key: v}})
	if err != nil {
		return resource.PropertyValue{}, err
	}
	return m[resource.PropertyKey(key)], nil
}

// ValueToProto converts a single value to its wire form with the same
// lossless rules as property maps; a value the conversion drops becomes a
// null. key names the value inside the map the conversion wraps it in.
func ValueToProto(key string, v resource.PropertyValue, acceptsByteStrings bool) (*structpb.Value, error) {
	s, err := MarshalStruct(resource.PropertyMap{resource.PropertyKey(key): v}, acceptsByteStrings)
	if err != nil {
		return nil, err
	}
	if out, ok := s.GetFields()[key]; ok {
		return out, nil
	}
	return structpb.NewNullValue(), nil
}
