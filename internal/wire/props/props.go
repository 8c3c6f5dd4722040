// Package props converts property values between the wire (structpb) and the
// Pulumi SDK's resource.PropertyMap without losing anything: secrets stay
// secrets, unknowns stay unknown, resource references, output values with
// their dependencies, assets and byte strings all survive a round trip.
package props

import (
	"fmt"

	"github.com/langhost/callbacks/internal/wire/wireprops"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/types/known/structpb"
)

// wire keeps every special value as it is, in both directions. Assets are not
// re-hashed: their hashes come from the engine, which recomputes them when it
// reads the response.
var wire = plugin.MarshalOptions{
	KeepUnknowns:     true,
	KeepSecrets:      true,
	KeepResources:    true,
	KeepOutputValues: true,
	KeepByteString:   true,
}

// Unmarshal decodes a wire struct. A nil struct decodes to a nil map. Input
// the SDK's decoder cannot handle (it panics on a Value with no kind) is an
// error, not a panic: the payload comes from another process.
func Unmarshal(s *structpb.Struct) (m resource.PropertyMap, err error) {
	if s == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("malformed property value: %v", p)
		}
	}()
	return wireprops.FromStruct(s)
}

// Marshal encodes a property map for the wire. Strings that are not valid
// UTF-8 become byte-string envelopes when keepBytes is set (the engine said
// the callback accepts them) and are an error otherwise. A nil map encodes to
// an empty struct: callers that mean "unchanged" must not call Marshal.
func Marshal(m resource.PropertyMap, keepBytes bool) (*structpb.Struct, error) {
	opts := wire
	opts.KeepByteString = keepBytes
	return plugin.MarshalProperties(m, opts)
}
