package wire

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/archive"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/types/known/structpb"
)

// FromStruct converts a decoded google.protobuf.Struct like
// plugin.UnmarshalProperties with the wire options, in time linear in its
// size: an object's signature is looked up in the converted map instead of
// in a copy of its whole subtree.
func FromStruct(s *structpb.Struct) (resource.PropertyMap, error) {
	m := make(resource.PropertyMap, len(s.GetFields()))
	for k, v := range s.GetFields() {
		pv, err := fromValue(k, v)
		if err != nil {
			return nil, err
		}
		m[resource.PropertyKey(k)] = pv
	}
	return m, nil
}

func fromValue(key string, v *structpb.Value) (resource.PropertyValue, error) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return resource.NewNullProperty(), nil
	case *structpb.Value_BoolValue:
		return resource.NewProperty(k.BoolValue), nil
	case *structpb.Value_NumberValue:
		return resource.NewProperty(k.NumberValue), nil
	case *structpb.Value_StringValue:
		if len(k.StringValue) == unknownSentLen {
			if u, ok := unknown(k.StringValue); ok {
				return u, nil
			}
		}
		return resource.NewProperty(k.StringValue), nil
	case *structpb.Value_ListValue:
		vs := k.ListValue.GetValues()
		elems := make([]resource.PropertyValue, len(vs))
		for i, e := range vs {
			pv, err := fromValue(key, e)
			if err != nil {
				return resource.PropertyValue{}, err
			}
			elems[i] = pv
		}
		return resource.NewProperty(elems), nil
	case *structpb.Value_StructValue:
		obj, err := FromStruct(k.StructValue)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		sig, ok := obj[resource.SigKey]
		if !ok {
			return resource.NewProperty(obj), nil
		}
		if sig.IsString() {
			switch sig.StringValue() {
			case asset.AssetSig, archive.ArchiveSig, resource.ResourceReferenceSig:
				p, err := plugin.UnmarshalPropertyValue(resource.PropertyKey(key), v, sdkOptions)
				if err != nil || p == nil {
					return resource.NewNullProperty(), err
				}
				return *p, nil
			}
		}
		var d decoder
		return d.special(key, obj, sig, 0, 0)
	}
	return resource.PropertyValue{}, fmt.Errorf("property %q has a value of no kind", key)
}
