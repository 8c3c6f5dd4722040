package wire

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/types/known/structpb"
)

func UnmarshalStruct(s *structpb.Struct) (m resource.PropertyMap, err error) {
	if s == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("malformed property value: %v", p)
		}
	}()
	return FromStruct(s)
}

// Marshal encodes a property map for the wire. Strings that are not valid
// UTF-8 become byte-string envelopes when keepBytes is set (the engine said
// the callback accepts them) and are an error otherwise. A nil map encodes to
// an empty struct: callers that mean "unchanged" must not call Marshal. A
// value no property value may hold is an [*InvalidValueError].
func MarshalStruct(m resource.PropertyMap, keepBytes bool) (*structpb.Struct, error) {
	if err := checkValues(m); err != nil {
		return nil, err
	}
	opts := sdkOptions
	opts.KeepByteString = keepBytes
	return plugin.MarshalProperties(m, opts)
}
