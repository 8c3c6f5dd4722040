// Package wire is the codec below every callback kind. A request arrives as
// a [Message]: [DecodeRequest] decodes its fields with the protobuf runtime
// and keeps its property maps (its google.protobuf.Struct fields) encoded in
// a [Lazy] until they are read, after a check that refuses whatever a
// decode would; [Message.EncodeReply] answers it, in the request's own
// bytes when the maps go back unread.
//
// The property maps convert between resource.PropertyMap and the wire form
// of a google.protobuf.Struct directly, without building structpb messages
// in between. They read and write the same encoding as the SDK's
// plugin.UnmarshalProperties and plugin.MarshalProperties with KeepUnknowns,
// KeepSecrets, KeepResources and KeepOutputValues (and KeepByteString as
// asked), in time linear in the size of the input at any nesting depth.
// Assets, archives and resource references are rare in callback payloads;
// they go through the SDK's own functions, one value at a time.
//
// The plain path, protobuf plus conversions over structpb ([UnmarshalStruct],
// which is [FromStruct]: the SDK's plugin.UnmarshalProperties rules in linear
// time, itself held to the SDK by the tests; [MarshalStruct], which is the
// SDK's plugin.MarshalProperties), is the reference the tests hold all of
// this to.
package wire

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/archive"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// MaxDepth is how many messages deep a payload may nest, counted as the
// protobuf runtime counts them (a struct, its entry and the value are three).
const MaxDepth = 10000

var sdkOptions = plugin.MarshalOptions{
	KeepUnknowns:     true,
	KeepSecrets:      true,
	KeepResources:    true,
	KeepOutputValues: true,
	KeepByteString:   true,
}

// ErrDepth is returned for payloads nested more than MaxDepth messages deep.
var ErrDepth = errors.New("exceeded maximum recursion depth")

// Field numbers of google.protobuf.Struct, its map entries, Value and
// ListValue.
const (
	structFields   = 1
	entryKey       = 1
	entryValue     = 2
	valueNull      = 1
	valueNumber    = 2
	valueString    = 3
	valueBool      = 4
	valueStruct    = 5
	valueList      = 6
	listValues     = 1
	unknownSentLen = len(plugin.UnknownStringValue)
)

// Decode decodes the wire form of a google.protobuf.Struct into a property
// map. The strings in the result share one copy of b; b is not retained.
func Decode(b []byte) (resource.PropertyMap, error) {
	d := newDecoder(b)
	return d.structAt(0, len(d.s), 1)
}

// DecodeShared is Decode for bytes that are never written again, such as a
// request the gRPC codec made for one call: the strings in the result are
// parts of b itself, not of a copy.
func DecodeShared(b []byte) (resource.PropertyMap, error) {
	d := &decoder{s: unsafe.String(unsafe.SliceData(b), len(b)), b: b}
	return d.structAt(0, len(b), 1)
}

func newDecoder(b []byte) *decoder {
	s := string(b)
	// A read-only view of the copy, for the protowire functions.
	return &decoder{s: s, b: unsafe.Slice(unsafe.StringData(s), len(s))}
}

type decoder struct {
	s string // the payload; every string decoded is a substring of it
	b []byte // the same bytes, never written to
	// canonical is set for bytes the protobuf runtime wrote, which never
	// repeat a field.
	canonical bool
}

var errInvalid = errors.New("proto: cannot parse invalid wire-format data")

// tag reads one tag at b[i:end] and returns the field number, type and the
// position after the tag.
func (d *decoder) tag(i, end int) (protowire.Number, protowire.Type, int, error) {
	num, typ, n := protowire.ConsumeTag(d.b[i:end])
	if n < 0 || num > protowire.MaxValidNumber {
		// The protobuf runtime refuses field numbers above the maximum,
		// though ConsumeTag reads them.
		return 0, 0, 0, errInvalid
	}
	return num, typ, i + n, nil
}

// lengthPrefixed reads a length at b[i:end] and returns the range of the
// bytes it announces.
func (d *decoder) lengthPrefixed(i, end int) (int, int, error) {
	v, n := protowire.ConsumeBytes(d.b[i:end])
	if n < 0 {
		return 0, 0, errInvalid
	}
	return i + n - len(v), i + n, nil
}

// varint reads a varint at b[i:end] and returns it and the position after it.
func (d *decoder) varint(i, end int) (uint64, int, error) {
	v, n := protowire.ConsumeVarint(d.b[i:end])
	if n < 0 {
		return 0, 0, errInvalid
	}
	return v, i + n, nil
}

// skip skips a field value at b[i:end] and returns the position after it.
func (d *decoder) skip(num protowire.Number, typ protowire.Type, i, end int) (int, error) {
	n := protowire.ConsumeFieldValue(num, typ, d.b[i:end])
	if n < 0 {
		return 0, errInvalid
	}
	return i + n, nil
}

// structAt decodes the Struct at s[i:end].
func (d *decoder) structAt(i, end, depth int) (resource.PropertyMap, error) {
	if depth > MaxDepth {
		return nil, ErrDepth
	}
	// Count the entries first so that the map is made at its size.
	n := 0
	for k := i; k < end; {
		num, typ, p, err := d.tag(k, end)
		if err != nil {
			return nil, err
		}
		if num == structFields && typ == protowire.BytesType {
			n++
		}
		if k, err = d.skip(num, typ, p, end); err != nil {
			return nil, err
		}
	}
	m := make(resource.PropertyMap, n)
	start := i
	for i < end {
		num, typ, p, err := d.tag(i, end)
		if err != nil {
			return nil, err
		}
		if num != structFields || typ != protowire.BytesType {
			if i, err = d.skip(num, typ, p, end); err != nil {
				return nil, err
			}
			continue
		}
		ei, ee, err := d.lengthPrefixed(p, end)
		if err != nil {
			return nil, err
		}
		key, v, err := d.entry(ei, ee, depth+1)
		if err != nil {
			if !d.canonical && d.repeatsKey(start, end) {
				// A later entry with the same key replaces this one, as
				// the protobuf runtime reads a map; let it, then decode
				// its canonical encoding.
				return d.structViaProto(start, end, depth)
			}
			return nil, err
		}
		m[resource.PropertyKey(key)] = v
		i = ee
	}
	return m, nil
}

// repeatsKey reports whether two entries of the Struct at b[i:end], whose
// fields are well-formed, have the same key. It runs only on the way to
// an error, so it may allocate.
func (d *decoder) repeatsKey(i, end int) bool {
	seen := map[string]bool{}
	for i < end {
		num, typ, p, err := d.tag(i, end)
		if err != nil {
			return false
		}
		next, err := d.skip(num, typ, p, end)
		if err != nil {
			return false
		}
		if num == structFields && typ == protowire.BytesType {
			ei, ee, err := d.lengthPrefixed(p, end)
			if err != nil {
				return false
			}
			key := ""
			for k := ei; k < ee; {
				n, t, q, err := d.tag(k, ee)
				if err != nil {
					return false
				}
				if n == entryKey && t == protowire.BytesType {
					a, b, err := d.lengthPrefixed(q, ee)
					if err != nil {
						return false
					}
					key = d.s[a:b]
				}
				if k, err = d.skip(n, t, q, ee); err != nil {
					return false
				}
			}
			if seen[key] {
				return true
			}
			seen[key] = true
		}
		i = next
	}
	return false
}

// structViaProto decodes the Struct at b[i:end] through the protobuf
// runtime, for encodings the engine never sends (a key repeated, of which
// the runtime keeps the last).
func (d *decoder) structViaProto(i, end, depth int) (resource.PropertyMap, error) {
	var pb structpb.Struct
	if err := (proto.UnmarshalOptions{RecursionLimit: MaxDepth - depth + 1}).Unmarshal(d.b[i:end], &pb); err != nil {
		return nil, err
	}
	b, err := deterministic.Marshal(&pb)
	if err != nil {
		return nil, err
	}
	sub := newDecoder(b)
	sub.canonical = true
	return sub.structAt(0, len(b), depth)
}

// entry decodes one map entry of a Struct.
func (d *decoder) entry(i, end, depth int) (string, resource.PropertyValue, error) {
	if depth > MaxDepth {
		return "", resource.PropertyValue{}, ErrDepth
	}
	var key string
	vi, ve, haveValue := 0, 0, false
	i0 := i
	for i < end {
		num, typ, p, err := d.tag(i, end)
		if err != nil {
			return "", resource.PropertyValue{}, err
		}
		switch {
		case num == entryKey && typ == protowire.BytesType:
			ki, ke, err := d.lengthPrefixed(p, end)
			if err != nil {
				return "", resource.PropertyValue{}, err
			}
			key = d.s[ki:ke]
			if !utf8.ValidString(key) {
				return "", resource.PropertyValue{}, errors.New("proto: string field contains invalid UTF-8")
			}
			i = ke
		case num == entryValue && typ == protowire.BytesType:
			if haveValue {
				if d.canonical {
					return "", resource.PropertyValue{}, errInvalid
				}
				// The protobuf runtime merges repeated message fields;
				// let it, then decode its canonical encoding.
				return d.entryViaProto(i0, end, depth)
			}
			if vi, ve, err = d.lengthPrefixed(p, end); err != nil {
				return "", resource.PropertyValue{}, err
			}
			haveValue = true
			i = ve
		default:
			if i, err = d.skip(num, typ, p, end); err != nil {
				return "", resource.PropertyValue{}, err
			}
		}
	}
	if !haveValue {
		return "", resource.PropertyValue{}, fmt.Errorf("property %q has no value", key)
	}
	v, err := d.value(key, vi, ve, depth+1)
	return key, v, err
}

// value decodes the Value at s[i:end]; key names it in errors.
func (d *decoder) value(key string, i, end, depth int) (resource.PropertyValue, error) {
	if depth > MaxDepth {
		return resource.PropertyValue{}, ErrDepth
	}
	start := i
	var (
		kind    protowire.Number
		num     float64
		boolean bool
		si, se  int
		have    bool
	)
	for i < end {
		n, typ, p, err := d.tag(i, end)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		if have && kindField(n, typ) {
			if d.canonical {
				return resource.PropertyValue{}, errInvalid
			}
			// A second kind: the protobuf runtime validates every one and
			// merges or replaces them; let it, then decode its canonical
			// encoding.
			return d.valueViaProto(key, start, end, depth)
		}
		switch {
		case n == valueNull && typ == protowire.VarintType,
			n == valueBool && typ == protowire.VarintType:
			v, next, err := d.varint(p, end)
			if err != nil {
				return resource.PropertyValue{}, err
			}
			kind, boolean, have, i = n, v != 0, true, next
		case n == valueNumber && typ == protowire.Fixed64Type:
			bits, l := protowire.ConsumeFixed64(d.b[p:end])
			if l < 0 {
				return resource.PropertyValue{}, errInvalid
			}
			kind, num, have, i = n, math.Float64frombits(bits), true, p+l
		case (n == valueString || n == valueStruct || n == valueList) && typ == protowire.BytesType:
			a, b, err := d.lengthPrefixed(p, end)
			if err != nil {
				return resource.PropertyValue{}, err
			}
			kind, si, se, have, i = n, a, b, true, b
		default:
			if i, err = d.skip(n, typ, p, end); err != nil {
				return resource.PropertyValue{}, err
			}
		}
	}
	if !have {
		return resource.PropertyValue{}, fmt.Errorf("property %q has a value of no kind", key)
	}
	switch kind {
	case valueNull:
		return resource.NewNullProperty(), nil
	case valueBool:
		return resource.NewProperty(boolean), nil
	case valueNumber:
		return resource.NewProperty(num), nil
	case valueString:
		s := d.s[si:se]
		if !utf8.ValidString(s) {
			return resource.PropertyValue{}, errors.New("proto: string field contains invalid UTF-8")
		}
		if len(s) == unknownSentLen {
			if v, ok := unknown(s); ok {
				return v, nil
			}
		}
		return resource.NewProperty(s), nil
	case valueList:
		return d.list(key, si, se, depth+1)
	}
	obj, err := d.structAt(si, se, depth+1)
	if err != nil {
		return resource.PropertyValue{}, err
	}
	sig, ok := obj[resource.SigKey]
	if !ok {
		return resource.NewProperty(obj), nil
	}
	return d.special(key, obj, sig, start, end)
}

// kindField reports whether field n of wire type typ in a Value is one of
// the Value's kinds (null, number, string, bool, struct or list).
func kindField(n protowire.Number, typ protowire.Type) bool {
	return (n == valueNull || n == valueBool) && typ == protowire.VarintType ||
		n == valueNumber && typ == protowire.Fixed64Type ||
		(n == valueString || n == valueStruct || n == valueList) && typ == protowire.BytesType
}

func (d *decoder) list(key string, i, end, depth int) (resource.PropertyValue, error) {
	if depth > MaxDepth {
		return resource.PropertyValue{}, ErrDepth
	}
	n := 0
	for k := i; k < end; {
		num, typ, p, err := d.tag(k, end)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		if num == listValues && typ == protowire.BytesType {
			n++
		}
		if k, err = d.skip(num, typ, p, end); err != nil {
			return resource.PropertyValue{}, err
		}
	}
	elems := make([]resource.PropertyValue, 0, n)
	for i < end {
		num, typ, p, err := d.tag(i, end)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		if num != listValues || typ != protowire.BytesType {
			if i, err = d.skip(num, typ, p, end); err != nil {
				return resource.PropertyValue{}, err
			}
			continue
		}
		a, b, err := d.lengthPrefixed(p, end)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		v, err := d.value(key, a, b, depth+1)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		elems = append(elems, v)
		i = b
	}
	return resource.NewProperty(elems), nil
}

// unknown returns the computed value an unknown sentinel stands for.
func unknown(s string) (resource.PropertyValue, bool) {
	var elem resource.PropertyValue
	switch s {
	case plugin.UnknownBoolValue:
		elem = resource.NewProperty(false)
	case plugin.UnknownNumberValue:
		elem = resource.NewProperty(0.0)
	case plugin.UnknownStringValue:
		elem = resource.NewProperty("")
	case plugin.UnknownArrayValue:
		elem = resource.NewProperty([]resource.PropertyValue{})
	case plugin.UnknownAssetValue:
		elem = resource.NewProperty(&asset.Asset{})
	case plugin.UnknownArchiveValue:
		elem = resource.NewProperty(&archive.Archive{})
	case plugin.UnknownObjectValue:
		elem = resource.NewProperty(make(resource.PropertyMap))
	default:
		return resource.PropertyValue{}, false
	}
	return resource.MakeComputed(elem), true
}

// special decodes an object that carries a signature: the value's wire form
// is s[i:end].
func (d *decoder) special(key string, obj resource.PropertyMap, sig resource.PropertyValue, i, end int) (resource.PropertyValue, error) {
	var name string
	if sig.IsString() {
		name = sig.StringValue()
	}
	switch name {
	case resource.SecretSig:
		v, ok := obj["value"]
		if !ok {
			return resource.PropertyValue{}, fmt.Errorf("malformed RPC secret: missing value for %q", key)
		}
		return resource.MakeSecret(v), nil
	case resource.OutputValueSig:
		value, known := obj["value"]
		var secret bool
		if p, ok := obj["secret"]; ok {
			if !p.IsBool() {
				return resource.PropertyValue{}, fmt.Errorf("malformed output value for %q: secret not a bool", key)
			}
			secret = p.BoolValue()
		}
		var deps []resource.URN
		if p, ok := obj["dependencies"]; ok {
			if !p.IsArray() {
				return resource.PropertyValue{}, fmt.Errorf("malformed output value for %q: dependencies not an array", key)
			}
			deps = make([]resource.URN, len(p.ArrayValue()))
			for k, dep := range p.ArrayValue() {
				if !dep.IsString() {
					return resource.PropertyValue{}, fmt.Errorf(
						"malformed output value for %q: element in dependencies not a string", key)
				}
				deps[k] = resource.URN(dep.StringValue())
			}
		}
		return resource.NewProperty(resource.Output{Element: value, Known: known, Secret: secret, Dependencies: deps}), nil
	case resource.ByteStringSig:
		v, ok := obj["value"]
		if !ok {
			return resource.PropertyValue{}, fmt.Errorf("malformed byte string for %q: missing value", key)
		}
		if !v.IsString() {
			return resource.PropertyValue{}, fmt.Errorf("malformed byte string for %q: value is not a string", key)
		}
		b, err := base64.StdEncoding.DecodeString(v.StringValue())
		if err != nil {
			return resource.PropertyValue{}, fmt.Errorf("malformed byte string for %q: value is not valid base64: %w", key, err)
		}
		return resource.NewProperty(string(b)), nil
	case asset.AssetSig, archive.ArchiveSig, resource.ResourceReferenceSig:
		// Rare: let the SDK decode this one value.
		var pb structpb.Value
		if err := proto.Unmarshal(d.b[i:end], &pb); err != nil {
			return resource.PropertyValue{}, err
		}
		v, err := plugin.UnmarshalPropertyValue(resource.PropertyKey(key), &pb, sdkOptions)
		if err != nil {
			return resource.PropertyValue{}, err
		}
		if v == nil {
			return resource.NewNullProperty(), nil
		}
		return *v, nil
	}
	return resource.PropertyValue{}, fmt.Errorf("unrecognized signature '%v' in property map for %q", sig.V, key)
}

// valueViaProto decodes the Value at b[i:end] through the protobuf runtime,
// for encodings the engine never sends (a value with several kinds).
func (d *decoder) valueViaProto(key string, i, end, depth int) (resource.PropertyValue, error) {
	var pb structpb.Value
	if err := (proto.UnmarshalOptions{RecursionLimit: MaxDepth - depth + 1}).Unmarshal(d.b[i:end], &pb); err != nil {
		return resource.PropertyValue{}, err
	}
	b, err := deterministic.Marshal(&pb)
	if err != nil {
		return resource.PropertyValue{}, err
	}
	sub := newDecoder(b)
	sub.canonical = true
	return sub.value(key, 0, len(b), depth)
}

// entryViaProto decodes the Struct entry at b[i:end] through the protobuf
// runtime, for encodings the engine never sends (an entry with several
// values, which the runtime merges).
func (d *decoder) entryViaProto(i, end, depth int) (string, resource.PropertyValue, error) {
	w := protowire.AppendTag(nil, structFields, protowire.BytesType)
	w = protowire.AppendBytes(w, d.b[i:end])
	var pb structpb.Struct
	if err := (proto.UnmarshalOptions{RecursionLimit: MaxDepth - depth + 2}).Unmarshal(w, &pb); err != nil {
		return "", resource.PropertyValue{}, err
	}
	for k, v := range pb.GetFields() {
		b, err := deterministic.Marshal(v)
		if err != nil {
			return "", resource.PropertyValue{}, err
		}
		sub := newDecoder(b)
		sub.canonical = true
		pv, err := sub.value(k, 0, len(b), depth+1)
		return k, pv, err
	}
	return "", resource.PropertyValue{}, errInvalid
}

// deterministic writes maps in key order, so that the canonical encoding of
// a payload, and so the first fault the decoder meets in it, is the same on
// every call.
var deterministic = proto.MarshalOptions{Deterministic: true}
