package enginetest

import (
	"encoding/base64"
	"fmt"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Signatures of Pulumi's special property values. An object whose sigKey
// field holds one of these strings is not a plain map but the value the
// signature names. The values are those of the Pulumi SDK's sig package.
const (
	// sigKey is the field that carries a special value's signature.
	sigKey = "4dabf18193072939515e22adb298388d"
	// secretSig marks a secret: {sigKey: secretSig, "value": v}.
	secretSig = "1b47061264138c4ac30d75fd1eb44270"
	// resourceReferenceSig marks a resource reference:
	// {sigKey: resourceReferenceSig, "urn": u, "id": i, "packageVersion": p}.
	resourceReferenceSig = "5cf8f73096256a8f31e491e813e4eb8e"
	// outputValueSig marks an output value:
	// {sigKey: outputValueSig, "value"?: v, "secret"?: bool, "dependencies"?: [urn...]}.
	// An output value without "value" is unknown.
	outputValueSig = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
	// byteStringSig marks a string whose bytes are not valid UTF-8:
	// {sigKey: byteStringSig, "value": base64(bytes)}.
	byteStringSig = "803fd3297a5875dc03ca845dda5d2a98"
	// assetSig marks an asset.
	assetSig = "c44067f5952c0a294b673a41bacd8c17"
	// archiveSig marks an archive.
	archiveSig = "0def7320c3a5731c473e5ecbe6d01bc7"
	// unknownSentinel is the string that stands for an unknown value when
	// output values are not in use.
	unknownSentinel = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
)

// secretValue wraps v in a secret envelope.
func secretValue(v *structpb.Value) *structpb.Value {
	return sigObject(secretSig, map[string]*structpb.Value{"value": cloneValue(v)})
}

// unknownValue returns the unknown sentinel string.
func unknownValue() *structpb.Value { return structpb.NewStringValue(unknownSentinel) }

// byteStringValue returns the byte-string envelope for b.
func byteStringValue(b []byte) *structpb.Value {
	return sigObject(byteStringSig, map[string]*structpb.Value{
		"value": structpb.NewStringValue(base64.StdEncoding.EncodeToString(b)),
	})
}

// resourceReferenceValue returns a resource reference to urn (and id, for a
// custom resource).
func resourceReferenceValue(urn, id string) *structpb.Value {
	fields := map[string]*structpb.Value{"urn": structpb.NewStringValue(urn)}
	if id != "" {
		fields["id"] = structpb.NewStringValue(id)
	}
	return sigObject(resourceReferenceSig, fields)
}

// outputValue is the decoded form of an output-value object.
type outputValue struct {
	Value        *structpb.Value // nil when unknown
	Known        bool
	Secret       bool
	Dependencies []string
}

// Encode returns the wire form of o.
func (o outputValue) Encode() *structpb.Value {
	fields := map[string]*structpb.Value{}
	if o.Known && o.Value != nil {
		fields["value"] = cloneValue(o.Value)
	}
	if o.Secret {
		fields["secret"] = structpb.NewBoolValue(true)
	}
	if len(o.Dependencies) > 0 {
		fields["dependencies"] = stringList(o.Dependencies)
	}
	return sigObject(outputValueSig, fields)
}

// decodeOutputValue reports whether v is an output-value object and, if so,
// decodes it.
func decodeOutputValue(v *structpb.Value) (outputValue, bool) {
	if signature(v) != outputValueSig {
		return outputValue{}, false
	}
	f := v.GetStructValue().GetFields()
	var o outputValue
	if val, ok := f["value"]; ok {
		o.Value, o.Known = val, true
	}
	o.Secret = f["secret"].GetBoolValue()
	for _, d := range f["dependencies"].GetListValue().GetValues() {
		o.Dependencies = append(o.Dependencies, d.GetStringValue())
	}
	return o, true
}

// signature returns the signature of a special value, or "" for any other
// value.
func signature(v *structpb.Value) string {
	s, ok := v.GetKind().(*structpb.Value_StructValue)
	if !ok || s.StructValue == nil {
		return ""
	}
	sig, ok := s.StructValue.GetFields()[sigKey]
	if !ok {
		return ""
	}
	return sig.GetStringValue()
}

// isSecret reports whether v is a secret envelope.
func isSecret(v *structpb.Value) bool { return signature(v) == secretSig }

// secretElement returns the value inside a secret envelope.
func secretElement(v *structpb.Value) *structpb.Value {
	return v.GetStructValue().GetFields()["value"]
}

func sigObject(sig string, fields map[string]*structpb.Value) *structpb.Value {
	all := make(map[string]*structpb.Value, len(fields)+1)
	for k, v := range fields {
		all[k] = v
	}
	all[sigKey] = structpb.NewStringValue(sig)
	return structpb.NewStructValue(&structpb.Struct{Fields: all})
}

func stringList(ss []string) *structpb.Value {
	vals := make([]*structpb.Value, len(ss))
	for i, s := range ss {
		vals[i] = structpb.NewStringValue(s)
	}
	return structpb.NewListValue(&structpb.ListValue{Values: vals})
}

func cloneValue(v *structpb.Value) *structpb.Value {
	if v == nil {
		return nil
	}
	return proto.Clone(v).(*structpb.Value)
}

func cloneStruct(s *structpb.Struct) *structpb.Struct {
	if s == nil {
		return nil
	}
	return proto.Clone(s).(*structpb.Struct)
}

// emptyIfNil returns s, or an empty struct when s is nil.
func emptyIfNil(s *structpb.Struct) *structpb.Struct {
	if s == nil {
		return &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	return s
}

// mapStruct applies f to every top-level field of s and returns a new struct.
func mapStruct(s *structpb.Struct, f func(key string, v *structpb.Value) (*structpb.Value, error)) (*structpb.Struct, error) {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(s.GetFields()))}
	for k, v := range s.GetFields() {
		nv, err := f(k, v)
		if err != nil {
			return nil, err
		}
		if nv != nil {
			out.Fields[k] = nv
		}
	}
	return out, nil
}

// canonical converts properties into the form the simulator stores: secrets
// as secret envelopes, unknowns as the sentinel string, output values
// flattened (their dependencies dropped) and byte strings whose bytes are
// valid UTF-8 turned into plain strings.
func canonical(s *structpb.Struct) (*structpb.Struct, error) {
	return mapStruct(s, func(k string, v *structpb.Value) (*structpb.Value, error) {
		return canonicalValue(k, v)
	})
}

func canonicalValue(key string, v *structpb.Value) (*structpb.Value, error) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_ListValue:
		out := make([]*structpb.Value, 0, len(k.ListValue.GetValues()))
		for _, e := range k.ListValue.GetValues() {
			ce, err := canonicalValue(key, e)
			if err != nil {
				return nil, err
			}
			out = append(out, ce)
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out}), nil
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		switch signature(v) {
		case "":
			s, err := mapStruct(k.StructValue, canonicalValue)
			if err != nil {
				return nil, err
			}
			return structpb.NewStructValue(s), nil
		case secretSig:
			inner, ok := fields["value"]
			if !ok {
				return nil, fmt.Errorf("malformed RPC secret: missing value for %q", key)
			}
			ci, err := canonicalValue(key, inner)
			if err != nil {
				return nil, err
			}
			return makeSecret(ci), nil
		case outputValueSig:
			o, _ := decodeOutputValue(v)
			var inner *structpb.Value
			if o.Known {
				ci, err := canonicalValue(key, o.Value)
				if err != nil {
					return nil, err
				}
				inner = ci
			} else {
				inner = unknownValue()
			}
			if o.Secret {
				return makeSecret(inner), nil
			}
			return inner, nil
		case assetSig, archiveSig:
			return withAssetHash(key, v)
		case byteStringSig:
			raw, err := decodeByteString(key, v)
			if err != nil {
				return nil, err
			}
			if utf8.Valid(raw) {
				return structpb.NewStringValue(string(raw)), nil
			}
			return byteStringValue(raw), nil
		default:
			return cloneValue(v), nil
		}
	default:
		return cloneValue(v), nil
	}
}

// makeSecret wraps v in a secret envelope unless it already is one.
func makeSecret(v *structpb.Value) *structpb.Value {
	if isSecret(v) {
		return v
	}
	return sigObject(secretSig, map[string]*structpb.Value{"value": v})
}

func decodeByteString(key string, v *structpb.Value) ([]byte, error) {
	val, ok := v.GetStructValue().GetFields()["value"]
	if !ok {
		return nil, fmt.Errorf("malformed byte string for %q: missing value", key)
	}
	sv, ok := val.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return nil, fmt.Errorf("malformed byte string for %q: value is not a string", key)
	}
	raw, err := base64.StdEncoding.DecodeString(sv.StringValue)
	if err != nil {
		return nil, fmt.Errorf("malformed byte string for %q: value is not valid base64: %w", key, err)
	}
	return raw, nil
}

// upgrade converts properties into output-value form: secrets and unknowns
// become output values, existing output values keep their dependencies.
func upgrade(s *structpb.Struct) *structpb.Struct {
	out, _ := mapStruct(s, func(_ string, v *structpb.Value) (*structpb.Value, error) {
		return upgradeValue(v), nil
	})
	return out
}

func upgradeValue(v *structpb.Value) *structpb.Value {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if k.StringValue == unknownSentinel {
			return outputValue{}.Encode()
		}
		return cloneValue(v)
	case *structpb.Value_ListValue:
		out := make([]*structpb.Value, 0, len(k.ListValue.GetValues()))
		for _, e := range k.ListValue.GetValues() {
			out = append(out, upgradeValue(e))
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out})
	case *structpb.Value_StructValue:
		switch signature(v) {
		case "":
			s := upgrade(k.StructValue)
			return structpb.NewStructValue(s)
		case secretSig:
			inner := upgradeValue(secretElement(v))
			if o, ok := decodeOutputValue(inner); ok {
				o.Secret = true
				return o.Encode()
			}
			return outputValue{Value: inner, Known: true, Secret: true}.Encode()
		case outputValueSig:
			o, _ := decodeOutputValue(v)
			if o.Known {
				inner := upgradeValue(o.Value)
				if io, ok := decodeOutputValue(inner); ok {
					io.Secret = io.Secret || o.Secret
					io.Dependencies = mergeStrings(o.Dependencies, io.Dependencies)
					return io.Encode()
				}
				o.Value = inner
			}
			return o.Encode()
		default:
			return cloneValue(v)
		}
	default:
		return cloneValue(v)
	}
}

// withDependencies folds per-property dependencies into top-level output
// values.
func withDependencies(s *structpb.Struct, deps map[string][]string) *structpb.Struct {
	out := cloneStruct(emptyIfNil(s))
	for k, urns := range deps {
		v, ok := out.Fields[k]
		if !ok || len(urns) == 0 {
			continue
		}
		if o, isOV := decodeOutputValue(v); isOV {
			o.Dependencies = mergeStrings(o.Dependencies, urns)
			out.Fields[k] = o.Encode()
			continue
		}
		out.Fields[k] = outputValue{Value: v, Known: true, Dependencies: urns}.Encode()
	}
	return out
}

// dependenciesOf reads the dependencies of top-level output values.
func dependenciesOf(s *structpb.Struct) map[string][]string {
	deps := map[string][]string{}
	for k, v := range s.GetFields() {
		if o, ok := decodeOutputValue(v); ok && len(o.Dependencies) > 0 {
			deps[k] = append([]string(nil), o.Dependencies...)
		}
	}
	return deps
}

// forReceiver prepares properties for a receiver: byte strings are kept only
// if it accepts them; otherwise a string that is not valid UTF-8 is an error.
func forReceiver(s *structpb.Struct, acceptsByteString bool) (*structpb.Struct, error) {
	if s == nil {
		return nil, nil
	}
	if acceptsByteString {
		return cloneStruct(s), nil
	}
	return mapStruct(s, rejectByteStrings)
}

func rejectByteStrings(key string, v *structpb.Value) (*structpb.Value, error) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_ListValue:
		out := make([]*structpb.Value, 0, len(k.ListValue.GetValues()))
		for _, e := range k.ListValue.GetValues() {
			ce, err := rejectByteStrings(key, e)
			if err != nil {
				return nil, err
			}
			out = append(out, ce)
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out}), nil
	case *structpb.Value_StructValue:
		switch signature(v) {
		case byteStringSig:
			raw, err := decodeByteString(key, v)
			if err != nil {
				return nil, err
			}
			if utf8.Valid(raw) {
				return structpb.NewStringValue(string(raw)), nil
			}
			return nil, fmt.Errorf(
				"the value of property %q is a string that contains non-UTF8 bytes, which the receiver does not support",
				key)
		case "":
			s, err := mapStruct(k.StructValue, rejectByteStrings)
			if err != nil {
				return nil, err
			}
			return structpb.NewStructValue(s), nil
		default:
			// Special values keep their shape; only their payloads may hold
			// byte strings.
			fields := map[string]*structpb.Value{}
			for fk, fv := range k.StructValue.GetFields() {
				nv, err := rejectByteStrings(key, fv)
				if err != nil {
					return nil, err
				}
				fields[fk] = nv
			}
			return structpb.NewStructValue(&structpb.Struct{Fields: fields}), nil
		}
	default:
		return cloneValue(v), nil
	}
}

// forProgram shapes properties for a RegisterResource or Invoke response.
func forProgram(s *structpb.Struct, acceptSecrets, acceptResources bool) *structpb.Struct {
	if s == nil {
		return nil
	}
	out, _ := mapStruct(s, func(_ string, v *structpb.Value) (*structpb.Value, error) {
		return forProgramValue(v, acceptSecrets, acceptResources), nil
	})
	return out
}

func forProgramValue(v *structpb.Value, acceptSecrets, acceptResources bool) *structpb.Value {
	switch k := v.GetKind().(type) {
	case *structpb.Value_ListValue:
		out := make([]*structpb.Value, 0, len(k.ListValue.GetValues()))
		for _, e := range k.ListValue.GetValues() {
			out = append(out, forProgramValue(e, acceptSecrets, acceptResources))
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out})
	case *structpb.Value_StructValue:
		fields := k.StructValue.GetFields()
		switch signature(v) {
		case secretSig:
			inner := forProgramValue(fields["value"], acceptSecrets, acceptResources)
			if acceptSecrets {
				return makeSecret(inner)
			}
			return inner
		case resourceReferenceSig:
			if acceptResources {
				return cloneValue(v)
			}
			if id := fields["id"]; id != nil && id.GetStringValue() != "" {
				return cloneValue(id)
			}
			return cloneValue(fields["urn"])
		case "":
			s := forProgram(k.StructValue, acceptSecrets, acceptResources)
			return structpb.NewStructValue(s)
		default:
			return cloneValue(v)
		}
	default:
		return cloneValue(v)
	}
}

// secretOutputs marks the named top-level outputs as secret.
func secretOutputs(s *structpb.Struct, names []string) *structpb.Struct {
	if len(names) == 0 || s == nil {
		return s
	}
	out := cloneStruct(s)
	for _, n := range names {
		if v, ok := out.Fields[n]; ok {
			out.Fields[n] = makeSecret(v)
		}
	}
	return out
}

func mergeStrings(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// changedKeys lists the top-level keys whose values differ between a and b.
func changedKeys(a, b *structpb.Struct) []string {
	var keys []string
	seen := map[string]bool{}
	for k, av := range a.GetFields() {
		seen[k] = true
		if bv, ok := b.GetFields()[k]; !ok || !proto.Equal(av, bv) {
			keys = append(keys, k)
		}
	}
	for k := range b.GetFields() {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// propertyText renders a property value the way the engine prints it in a
// check failure: a scalar in braces ({x}, {42}, {true}); other values as
// JSON in braces.
func propertyText(v *structpb.Value) string {
	switch k := v.GetKind().(type) {
	case nil, *structpb.Value_NullValue:
		return "{<nil>}"
	case *structpb.Value_StringValue:
		return "{" + k.StringValue + "}"
	case *structpb.Value_BoolValue:
		return fmt.Sprintf("{%t}", k.BoolValue)
	case *structpb.Value_NumberValue:
		return fmt.Sprintf("{%v}", k.NumberValue)
	default:
		b, _ := protojson.Marshal(v)
		return "{" + string(b) + "}"
	}
}

// withDependencyLists gives every output value in s, at any depth, a
// "dependencies" field, an empty list when it has no dependencies, as 3.274
// writes output values into a resource transform's request (3.260 left the
// field out when it had none). s is not changed.
func withDependencyLists(s *structpb.Struct) *structpb.Struct {
	if s == nil {
		return nil
	}
	out, _ := mapStruct(s, func(_ string, v *structpb.Value) (*structpb.Value, error) {
		return withDependencyList(v), nil
	})
	return out
}

func withDependencyList(v *structpb.Value) *structpb.Value {
	switch k := v.GetKind().(type) {
	case *structpb.Value_ListValue:
		out := make([]*structpb.Value, len(k.ListValue.GetValues()))
		for i, e := range k.ListValue.GetValues() {
			out[i] = withDependencyList(e)
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out})
	case *structpb.Value_StructValue:
		switch signature(v) {
		case "", outputValueSig, secretSig:
		default:
			return cloneValue(v)
		}
		s := withDependencyLists(k.StructValue)
		if _, ok := s.Fields["dependencies"]; signature(v) == outputValueSig && !ok {
			s.Fields["dependencies"] = stringList(nil)
		}
		return structpb.NewStructValue(s)
	default:
		return cloneValue(v)
	}
}
