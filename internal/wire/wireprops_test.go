package wire_test

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

var keep = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true, KeepOutputValues: true, KeepByteString: true}

func reference(b []byte) (m resource.PropertyMap, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	var s structpb.Struct
	if err := proto.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return plugin.UnmarshalProperties(&s, keep)
}

func encode(t testing.TB, m resource.PropertyMap, keepBytes bool) ([]byte, error) {
	w := wire.NewWriter(16)
	if err := wire.Encode(w, m, keepBytes); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

func payloads() map[string]*structpb.Struct {
	out := map[string]*structpb.Struct{}
	for _, s := range benchdata.Sizes {
		out[s] = benchdata.Properties(s)
	}
	out["engine"] = benchdata.EngineTransformRequest().GetProperties()
	out["deep"] = benchdata.DeepTransformRequest(300).GetProperties()
	return out
}

func TestDecodeMatchesSDK(t *testing.T) {
	for name, s := range payloads() {
		b, _ := proto.Marshal(s)
		want, err := reference(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: decoded maps differ", name)
		}
	}
}

func TestEncodeMatchesSDK(t *testing.T) {
	for name, s := range payloads() {
		m, err := plugin.UnmarshalProperties(s, keep)
		if err != nil {
			t.Fatal(err)
		}
		b, err := encode(t, m, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got structpb.Struct
		if err := proto.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := plugin.MarshalProperties(m, keep)
		if !proto.Equal(want, &got) {
			t.Errorf("%s: encoded structs differ", name)
		}
	}
}

// randomValue builds every kind of property value the typed API can hold.
func randomValue(r *rand.Rand, depth int) resource.PropertyValue {
	n := 14
	if depth > 4 {
		n = 6
	}
	switch r.IntN(n) {
	case 0:
		return resource.NewNullProperty()
	case 1:
		return resource.NewProperty(r.IntN(2) == 0)
	case 2:
		return resource.NewProperty(r.NormFloat64() * 1e6)
	case 3:
		return resource.NewProperty(fmt.Sprintf("s-%d", r.IntN(1000)))
	case 4:
		return resource.NewProperty(string([]byte{0xff, 0xfe, byte(r.IntN(256))}))
	case 5:
		return resource.NewProperty("")
	case 6:
		return resource.NewProperty(randomMap(r, depth+1))
	case 7:
		a := make([]resource.PropertyValue, r.IntN(4))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return resource.NewProperty(a)
	case 8:
		return resource.MakeSecret(randomValue(r, depth+1))
	case 9:
		elems := []resource.PropertyValue{resource.NewProperty(""), resource.NewProperty(1.0), resource.NewProperty(true),
			resource.NewProperty([]resource.PropertyValue{}), resource.NewProperty(resource.PropertyMap{})}
		return resource.MakeComputed(elems[r.IntN(len(elems))])
	case 10:
		o := resource.Output{Known: r.IntN(2) == 0, Secret: r.IntN(2) == 0}
		if o.Known {
			o.Element = randomValue(r, depth+1)
		}
		for range r.IntN(3) {
			o.Dependencies = append(o.Dependencies, resource.URN(fmt.Sprintf("urn:pulumi:s::p::t::n%d", r.IntN(9))))
		}
		return resource.NewProperty(o)
	case 11:
		return resource.MakeCustomResourceReference("urn:pulumi:s::p::aws:s3/bucket:Bucket::b", "id-1", "6.0.0")
	case 12:
		a, _ := asset.FromText("hello")
		return resource.NewProperty(a)
	default:
		return resource.MakeComponentResourceReference("urn:pulumi:s::p::my:comp:C::c", "")
	}
}

func randomMap(r *rand.Rand, depth int) resource.PropertyMap {
	m := resource.PropertyMap{}
	for range r.IntN(5) {
		m[resource.PropertyKey(fmt.Sprintf("k%d", r.IntN(20)))] = randomValue(r, depth)
	}
	return m
}

// Every kind of value survives both directions exactly as the SDK's own
// functions treat it.
func TestRandomMapsMatchSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 3000 {
		m := randomMap(r, 0)
		for _, keepBytes := range []bool{true, false} {
			opts := keep
			opts.KeepByteString = keepBytes
			want, wantErr := plugin.MarshalProperties(m, opts)
			b, err := encode(t, m, keepBytes)
			if (wantErr == nil) != (err == nil) {
				t.Fatalf("%d: encode errors differ: SDK %v, here %v", i, wantErr, err)
			}
			if err != nil {
				continue
			}
			var got structpb.Struct
			if err := proto.Unmarshal(b, &got); err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			if !proto.Equal(want, &got) {
				t.Fatalf("%d: encoded structs differ\nwant %v\ngot  %v", i, want, &got)
			}
			wantMap, err := reference(b)
			if err != nil {
				t.Fatal(err)
			}
			gotMap, err := wire.Decode(b)
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			if !reflect.DeepEqual(wantMap, gotMap) {
				t.Fatalf("%d: decoded maps differ\nwant %v\ngot  %v", i, wantMap, gotMap)
			}
		}
	}
}

// TestDepthIsLimitedLikeProtobuf holds Decode's depth limit to protobuf's,
// which is where the SDK's path refuses a deep payload: proto.Unmarshal
// into a Struct. (The SDK's conversion after it, plugin.UnmarshalProperties,
// has no limit of its own, and takes time quadratic in the depth.)
func TestDepthIsLimitedLikeProtobuf(t *testing.T) {
	for _, depth := range []int{3000, 3332, 3333, 3334, 5000, 100000} {
		b, _ := proto.Marshal(benchdata.DeepTransformRequest(depth).GetProperties())
		refErr := proto.Unmarshal(b, &structpb.Struct{})
		_, err := wire.Decode(b)
		t.Logf("depth %d: SDK %v, here %v", depth, refErr, err)
		if (refErr == nil) != (err == nil) && depth != 3333 && depth != 3334 {
			t.Errorf("depth %d: SDK %v, here %v", depth, refErr, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range payloads() {
		b, _ := proto.Marshal(s)
		if len(b) < 10000 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := reference(b)
		got, err := wire.Decode(b)
		checkValidate(t, b, err)
		if wantErr == nil && err != nil {
			t.Fatalf("SDK decodes, here: %v", err)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) && !sameOnTheWire(want, got) {
			t.Fatalf("decoded maps differ\nwant %v\ngot  %v", want, got)
		}
		if wantErr != nil && err == nil {
			t.Logf("SDK fails (%v), here it decodes", wantErr)
		}
	})
}

// TestMutatedPayloads flips, cuts and splices bytes of the payloads: the
// decoder never panics, and whatever the SDK path decodes it decodes the
// same.
func TestMutatedPayloads(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// The seeds in the order of their names, so that every run tries the
	// same mutations (FuzzDecode is the place for new ones).
	var seeds [][]byte
	ps := payloads()
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		if name == "large" || name == "deep" {
			continue
		}
		b, _ := proto.Marshal(ps[name])
		seeds = append(seeds, b)
	}
	agree, refused := 0, 0
	for i := range 100000 {
		b := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		for range 1 + r.IntN(3) {
			switch p := r.IntN(len(b)); r.IntN(4) {
			case 0:
				b[p] ^= 1 << r.IntN(8)
			case 1:
				b[p] = byte(r.IntN(256))
			case 2:
				b = b[:p]
			default:
				b = append(b[:p:p], b[min(len(b), p+r.IntN(8)):]...)
			}
			if len(b) == 0 {
				b = []byte{0}
			}
		}
		want, wantErr := reference(b)
		got, err := wire.Decode(b)
		checkValidate(t, b, err)
		switch {
		case wantErr == nil && err != nil:
			t.Fatalf("%d: SDK decodes, here: %v", i, err)
		case wantErr == nil && !reflect.DeepEqual(want, got):
			t.Fatalf("%d: decoded maps differ", i)
		case wantErr == nil:
			agree++
		case err != nil:
			refused++
		default:
			t.Logf("%d: SDK fails (%v), here it decodes", i, wantErr)
			diagnose(t, b, "struct")
		}
	}
	t.Logf("%d decoded alike, %d refused by both", agree, refused)
}

// checkValidate holds Validate to Decode: both accept the same bytes and
// refuse the same bytes with the same message, except for the merged
// encodings Validate leaves to Decode.
func checkValidate(t *testing.T, b []byte, decodeErr error) {
	t.Helper()
	err := wire.Validate(b)
	switch {
	case errors.Is(err, wire.ErrMerged):
	case decodeErr == nil && err != nil:
		t.Fatalf("Decode accepts, Validate refuses: %v\n%x", err, b)
	case decodeErr != nil && err == nil:
		t.Fatalf("Validate accepts, Decode refuses: %v\n%x", decodeErr, b)
	case decodeErr != nil && err.Error() != decodeErr.Error():
		t.Fatalf("both refuse, differently:\nValidate %v\nDecode   %v\n%x", err, decodeErr, b)
	}
	// What passes the check may be sent back unread: the engine's protobuf
	// runtime must be able to parse it.
	if err == nil {
		if perr := proto.Unmarshal(b, &structpb.Struct{}); perr != nil {
			t.Fatalf("Validate accepts bytes the protobuf runtime refuses: %v\n%x", perr, b)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	valid := func(m map[string]any) []byte {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := proto.Marshal(s)
		return b
	}
	entry := func(key string, value []byte) []byte {
		e := protowire.AppendTag(nil, 1, protowire.BytesType)
		e = protowire.AppendString(e, key)
		if value != nil {
			e = protowire.AppendTag(e, 2, protowire.BytesType)
			e = protowire.AppendBytes(e, value)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e)
	}
	str := func(s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), s)
	}
	tests := []struct {
		name string
		b    []byte
		want string // "" for valid
	}{
		{"empty", nil, ""},
		{"nested", valid(map[string]any{"a": map[string]any{"b": []any{1.0, "x", true, nil}}}), ""},
		{"secret signature", valid(map[string]any{"s": map[string]any{
			"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": "x"}}), ""},
		{"output value", valid(map[string]any{"o": map[string]any{resource.SigKey: resource.OutputValueSig,
			"value": "x", "secret": true, "dependencies": []any{"urn:a"}}}), ""},
		{"secret without value", valid(map[string]any{"s": map[string]any{resource.SigKey: resource.SecretSig}}),
			`malformed RPC secret: missing value for "s"`},
		{"output value secret not bool", valid(map[string]any{"o": map[string]any{resource.SigKey: resource.OutputValueSig,
			"secret": "yes"}}), `malformed output value for "o": secret not a bool`},
		{"output value dependencies not a list", valid(map[string]any{"o": map[string]any{resource.SigKey: resource.OutputValueSig,
			"dependencies": plugin.UnknownArrayValue}}), `malformed output value for "o": dependencies not an array`},
		{"output value dependency not a string", valid(map[string]any{"o": map[string]any{resource.SigKey: resource.OutputValueSig,
			"dependencies": []any{"urn:a", plugin.UnknownStringValue}}}), `malformed output value for "o": element in dependencies not a string`},
		{"byte string not base64", valid(map[string]any{"b": map[string]any{resource.SigKey: resource.ByteStringSig,
			"value": "%%%"}}), `malformed byte string for "b": value is not valid base64: illegal base64 data at input byte 0`},
		{"unrecognized signature", valid(map[string]any{"u": map[string]any{resource.SigKey: "nope"}}),
			`unrecognized signature 'nope' in property map for "u"`},
		{"signature in a list", valid(map[string]any{"l": []any{map[string]any{resource.SigKey: resource.SecretSig}}}),
			`malformed RPC secret: missing value for "l"`},
		{"truncated", valid(map[string]any{"a": "bcd"})[:5], "proto: cannot parse invalid wire-format data"},
		{"bad utf-8 key", entry("\xff", str("x")), "proto: string field contains invalid UTF-8"},
		{"bad utf-8 value", entry("k", str("\xff")), "proto: string field contains invalid UTF-8"},
		{"no value", entry("k", nil), `property "k" has no value`},
		{"no kind", entry("k", []byte{}), `property "k" has a value of no kind`},
		{"two kinds", entry("k", append(str("a"), str("b")...)), wire.ErrMerged.Error()},
		// The protobuf runtime keeps the last entry for a key without
		// judging the earlier ones; the check leaves that to Decode.
		{"key repeated after a faulty entry", append(entry("k", nil), entry("k", str("x"))...), wire.ErrMerged.Error()},
		{"key repeated before a faulty entry", append(entry("k", str("x")), entry("k", nil)...), `property "k" has a value of no kind`},
		{"too deep", func() []byte {
			b, _ := proto.Marshal(benchdata.DeepTransformRequest(4000).GetProperties())
			return b
		}(), wire.ErrDepth.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := wire.Validate(tt.b)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("Validate = %q, want %q", got, tt.want)
			}
			m, decodeErr := wire.Decode(tt.b)
			checkValidate(t, tt.b, decodeErr)
			want, refErr := reference(tt.b)
			if (refErr == nil) != (decodeErr == nil) || refErr == nil && !reflect.DeepEqual(want, m) {
				t.Fatalf("Decode %v (%v), SDK %v (%v)", m, decodeErr, want, refErr)
			}
		})
	}
}

// Validate is worth having only if it is much cheaper than a decode.
func TestValidateDoesNotAllocate(t *testing.T) {
	medium, _ := proto.Marshal(benchdata.Properties("medium"))
	engine, _ := proto.Marshal(benchdata.EngineTransformRequest().GetProperties())
	for name, b := range map[string][]byte{"medium": medium, "engine": engine} {
		if err := wire.Validate(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := testing.AllocsPerRun(20, func() { _ = wire.Validate(b) }); n != 0 {
			t.Errorf("Validate allocates %v times on the %s payload", n, name)
		}
	}
}

// diagnose finds the top-level fields the protobuf runtime refuses.
func diagnose(t *testing.T, b []byte, what string) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Logf("  %s: bad tag %x", what, b)
			return
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Logf("  %s: field %d type %d bad value: %x", what, num, typ, b[:min(len(b), 40)])
			return
		}
		var ss structpb.Struct
		if err := proto.Unmarshal(b[:n+m], &ss); err != nil {
			t.Logf("  %s: field %d type %d refused: %v: %x", what, num, typ, err, b[:n+m])
		}
		b = b[n+m:]
	}
}

// Field numbers at the edges of what a tag can hold: Validate, Decode and
// the protobuf runtime must draw the line in the same place, or properties
// sent back unread could be bytes the engine cannot parse.
func TestValidateFieldNumbers(t *testing.T) {
	t.Parallel()
	for _, num := range []uint64{0, 1, 1<<29 - 1, 1 << 29, 1<<31 - 1, 1 << 31, 1<<61 - 1} {
		b := protowire.AppendVarint(nil, num<<3|uint64(protowire.VarintType))
		b = protowire.AppendVarint(b, 1)
		_, err := wire.Decode(b)
		checkValidate(t, b, err)
		_, refErr := reference(b)
		if (err == nil) != (refErr == nil) {
			t.Errorf("field %d: Decode %v, protobuf runtime %v", num, err, refErr)
		}
	}
}

// DecodeShared decodes exactly as Decode does, its strings sharing the input.
func TestDecodeSharedLikeDecode(t *testing.T) {
	t.Parallel()
	for name, s := range payloads() {
		b, _ := proto.Marshal(s)
		want, wantErr := wire.Decode(b)
		got, err := wire.DecodeShared(b)
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: DecodeShared %v, Decode %v", name, err, wantErr)
		}
	}
	b, _ := proto.Marshal(payloads()["medium"])
	m, err := wire.DecodeShared(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range m {
		if v.IsString() && len(v.StringValue()) > 0 {
			s := v.StringValue()
			p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
			start := uintptr(unsafe.Pointer(&b[0]))
			if p < start || p >= start+uintptr(len(b)) {
				t.Fatalf("string %q is a copy, not a part of the input", s)
			}
			return
		}
	}
	t.Fatal("no string property in the medium payload")
}

// Scalars at the depth limit, in lists and in entries, are judged by the
// check as by the decoder (the check reads common scalars without the call
// that counts depth, so it counts them itself).
func TestValidateScalarsAtDepthLimit(t *testing.T) {
	t.Parallel()
	num := protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 1)
	str := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "x")
	wrap := func(v []byte, levels int) []byte {
		for range levels {
			l := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v) // ListValue
			v = protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), l)  // Value
		}
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k")
		e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), v)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e) // Struct
	}
	refused := 0
	for _, scalar := range [][]byte{num, str} {
		for levels := (wire.MaxDepth-3)/2 - 2; levels <= (wire.MaxDepth-3)/2+2; levels++ {
			b := wrap(scalar, levels)
			_, err := wire.Decode(b)
			checkValidate(t, b, err)
			if err != nil {
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("no payload reached the depth limit")
	}
}

// A value no property value may hold is an error that names the property
// and says what to write instead, at any depth and on both paths; the SDK
// would panic.
func TestEncodeRefusesGoValuesWithNoWireForm(t *testing.T) {
	tests := []struct {
		name string
		m    resource.PropertyMap
		want string
	}{
		{"int", resource.PropertyMap{"length": {V: 3}},
			`the value of property "length" is 3 (type int), which a property value cannot hold: a number is a float64: resource.NewProperty(float64(3)) or resource.NewNumberProperty(3)`},
		{"nested in a secret list", resource.PropertyMap{"tags": resource.MakeSecret(resource.NewProperty([]resource.PropertyValue{{V: uint8(1)}}))},
			`the value of property "tags" is 1 (type uint8)`},
		{"map in an object", resource.PropertyMap{"o": resource.NewProperty(resource.PropertyMap{"m": {V: map[string]any{"a": 1}}})},
			`the value of property "m" is map[a:1] (type map[string]interface {}), which a property value cannot hold: build values with resource.NewProperty, or resource.NewPropertyValue for plain Go values`},
		{"resource reference ID", resource.PropertyMap{"ref": resource.NewProperty(resource.ResourceReference{URN: "urn:pulumi:s::p::t::n", ID: resource.PropertyValue{V: 7}})},
			`the value of property "ref" is 7 (type int)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := encode(t, tt.m, true)
			var ive *wire.InvalidValueError
			if !errors.As(err, &ive) {
				t.Fatalf("Encode: got %v, want an *InvalidValueError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Encode: got %q, want it to contain %q", err, tt.want)
			}
			if _, err := wire.MarshalStruct(tt.m, true); !errors.As(err, &ive) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("MarshalStruct: got %v, want %q", err, tt.want)
			}
		})
	}
}
