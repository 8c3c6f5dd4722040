package transforms

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The options codec is held to the protobuf runtime: what decodeOptionsWire
// accepts, proto.Unmarshal accepts and OptionsFromProto turns into the same
// options; whatever it declines goes through the runtime, so the request
// decoder as a whole decides as the runtime does; and appendOptionsWire
// writes what proto.Unmarshal reads back as ToProto's message, refusing what
// proto.Marshal refuses.

// checkDecode decodes b with decodeOptionsWire, and the request holding b
// as its options with decodePayload, and fails t unless both agree with the
// protobuf runtime. It returns the options decodeOptionsWire produced, or
// nil if it declined b.
func checkDecode(t *testing.T, b []byte) *ResourceOptions {
	t.Helper()
	pb := &pulumirpc.TransformResourceOptions{}
	wantErr := proto.Unmarshal(b, pb)
	var want *ResourceOptions
	if wantErr == nil {
		var err error
		if want, err = OptionsFromProto(pb); err != nil {
			wantErr = err
		}
	}

	// The request decoder, whichever way it takes.
	req := protowire.AppendBytes(protowire.AppendTag(nil, reqOptions, protowire.BytesType), b)
	a, err := decodePayload(req, false)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%x: decodePayload: %v; protobuf: %v", b, err, wantErr)
	case err == nil && !reflect.DeepEqual(want, a.Options):
		t.Fatalf("%x: decodePayload gives %s, protobuf %s", b, dump(a.Options), dump(want))
	}

	got := &ResourceOptions{}
	if !decodeOptionsWire(slices.Clone(b), got) {
		return nil
	}
	if wantErr != nil {
		t.Fatalf("%x: decodeOptionsWire accepts what protobuf refuses (%v)", b, wantErr)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%x: decodeOptionsWire gives %s, protobuf %s", b, dump(got), dump(want))
	}
	return got
}

func dump(o *ResourceOptions) string {
	if o == nil {
		return "nil"
	}
	return fmt.Sprintf("%#v (custom timeouts %#v)", *o, o.CustomTimeouts)
}

// checkEncode encodes o, which wireEncodable accepts, with appendOptionsWire
// and with the protobuf runtime, and fails t unless both refuse it, or
// proto.Unmarshal reads the hand encoding back as ToProto's message. With
// at most one entry in each map, whose order cannot differ, the bytes must
// be protobuf's own. The response carrying o is checked too.
func checkEncode(t *testing.T, o *ResourceOptions) {
	t.Helper()
	if !wireEncodable(o) {
		t.Fatalf("%s: not encodable by hand", dump(o))
	}
	pb, err := o.ToProto(true)
	if err != nil {
		t.Fatal(err)
	}
	want, wantErr := proto.Marshal(pb)
	err = checkOptionsWire(o)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: checkOptionsWire: %v; proto.Marshal: %v", dump(o), err, wantErr)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Fatalf("%s: refused with %q, protobuf with %q", dump(o), err, wantErr)
		}
		return
	}
	prefix := []byte{0xee}
	got := appendOptionsWire(slices.Clip(prefix), o)
	if !bytes.Equal(got[:1], prefix) {
		t.Fatalf("%s: appendOptionsWire overwrote what it appends to", dump(o))
	}
	got = got[1:]
	if len(got) != sizeOptionsWire(o) {
		t.Fatalf("%s: appendOptionsWire wrote %d bytes, sizeOptionsWire says %d", dump(o), len(got), sizeOptionsWire(o))
	}
	if len(o.Providers) <= 1 && len(o.PluginChecksums) <= 1 && !bytes.Equal(got, want) {
		t.Fatalf("%s: appendOptionsWire wrote %x, proto.Marshal %x", dump(o), got, want)
	}
	back := &pulumirpc.TransformResourceOptions{}
	if err := proto.Unmarshal(got, back); err != nil {
		t.Fatalf("%s: the encoding %x does not decode: %v", dump(o), got, err)
	}
	if !proto.Equal(back, pb) {
		t.Fatalf("%s: the encoding decodes to %v, want %v", dump(o), back, pb)
	}

	out, err := encodePayload(&Result{Options: o}, true, nil, nil, false)
	if err != nil {
		t.Fatalf("%s: the response does not encode: %v", dump(o), err)
	}
	res := &pulumirpc.TransformResponse{}
	if err := proto.Unmarshal(out, res); err != nil {
		t.Fatalf("%s: the response %x does not decode: %v", dump(o), out, err)
	}
	if res.GetOptions() == nil || !proto.Equal(res.GetOptions(), pb) {
		t.Fatalf("%s: the response's options decode to %v, want %v", dump(o), res.GetOptions(), pb)
	}
}

// Helpers for writing options by hand.
func tag(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
func field(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tag(num, protowire.BytesType), v)
}
func str(num protowire.Number, s string) []byte { return field(num, []byte(s)) }
func varint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(tag(num, protowire.VarintType), v)
}
func cat(bs ...[]byte) []byte { return slices.Concat(bs...) }

func mustMarshalOptions(tb testing.TB, m *pulumirpc.TransformResourceOptions) []byte {
	tb.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// optionCases are encodings of options, valid and not, read by hand (fast)
// or left to protobuf: they seed the fuzz target too.
func optionCases(tb testing.TB) []struct {
	name          string
	b             []byte
	fast, refused bool
} {
	t, f := true, false
	return []struct {
		name          string
		b             []byte
		fast, refused bool
	}{
		{"empty", nil, t, f},
		{"benchmark options", mustMarshalOptions(tb, benchdata.Options()), t, f},
		{"every field read by hand", mustMarshalOptions(tb, &pulumirpc.TransformResourceOptions{
			DependsOn: []string{"urn:a", ""}, Protect: new(true), IgnoreChanges: []string{"x"}, ReplaceOnChanges: []string{"y", "z"},
			Version: "1.0.0", Provider: "urn:p::id", CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "1m", Update: "2m", Delete: "3m", Read: "4m"},
			PluginDownloadUrl: "https://get", RetainOnDelete: new(false), DeletedWith: "urn:d", DeleteBeforeReplace: new(true),
			AdditionalSecretOutputs: []string{"s"}, Providers: map[string]string{"aws": "urn:p::id"}, PluginChecksums: map[string][]byte{"linux": {1}},
			Import: "i-123", HideDiff: []string{"h"}, ReplaceWith: []string{"urn:r"},
		}), t, f},
		{"last string wins", cat(str(optVersion, "1"), str(optProvider, "p"), str(optVersion, "2")), t, f},
		{"lists grow", cat(str(optHideDiff, "a"), str(optVersion, "v"), str(optHideDiff, "b")), t, f},
		{"bools, last wins", cat(varint(optProtect, 1), varint(optRetainOnDelete, 0), varint(optProtect, 0), varint(optDeleteBeforeReplace, 300)), t, f},
		{"bool as a long varint", cat(tag(optProtect, protowire.VarintType), []byte{0x80, 0x80, 0x00}), t, f},
		{"empty custom timeouts", field(optCustomTimeouts, nil), t, f},
		{"custom timeouts merged", cat(field(optCustomTimeouts, cat(str(timeoutUpdate, "1m"), str(timeoutCreate, "1m"))), field(optCustomTimeouts, cat(str(timeoutRead, "2m"), str(timeoutCreate, "3m")))), t, f},
		{"provider entries", cat(field(optProviders, cat(str(1, "a"), str(2, "x"))), field(optProviders, str(1, "b")), field(optProviders, str(2, "y")), field(optProviders, nil)), t, f},
		{"same provider key twice", cat(field(optProviders, cat(str(1, "a"), str(2, "x"))), field(optProviders, cat(str(1, "a"), str(2, "y")))), t, f},
		{"provider entry with unknown field", field(optProviders, cat(str(1, "a"), varint(7, 1), str(2, "x"))), t, f},
		{"provider entry key as varint", field(optProviders, cat(varint(1, 1), str(2, "x"))), t, f},
		{"checksum entries", cat(field(optPluginChecksums, cat(str(1, "a"), field(2, []byte{0xff}))), field(optPluginChecksums, str(1, "b")), field(optPluginChecksums, cat(str(1, "c"), field(2, nil)))), t, f},
		{"provider value not UTF-8", field(optProviders, cat(str(1, "a"), str(2, "\xff"))), f, t},
		{"provider key not UTF-8", field(optProviders, str(1, "\xfe")), f, t},
		{"checksum key not UTF-8", field(optPluginChecksums, str(1, "\xfe")), f, t},
		{"string not UTF-8", str(optVersion, "\xc3"), f, t},
		{"list element not UTF-8", str(optDependsOn, "\xc3"), f, t},
		{"timeout not UTF-8", field(optCustomTimeouts, str(timeoutDelete, "\xc3")), f, t},
		{"string as varint", varint(optVersion, 1), f, f},
		{"string as fixed64", cat(tag(optVersion, protowire.Fixed64Type), []byte{7, 'a', 'b', 'c', 'd', 'e', 'f', 'g'}), f, f},
		{"list as fixed32", cat(tag(optHideDiff, protowire.Fixed32Type), []byte{1, 2, 3, 4}), f, f},
		{"bool as bytes", str(optProtect, "\x01"), f, f},
		{"custom timeouts as varint", varint(optCustomTimeouts, 1), f, f},
		{"providers as varint", varint(optProviders, 1), f, f},
		{"timeout as fixed64", field(optCustomTimeouts, cat(tag(timeoutCreate, protowire.Fixed64Type), []byte{7, 'a', 'b', 'c', 'd', 'e', 'f', 'g'})), f, f},
		{"custom timeouts with unknown field", field(optCustomTimeouts, varint(9, 1)), f, f},
		{"alias", field(optAliases, str(1, "urn:old")), f, f},
		{"hooks", field(optHooks, str(1, "h")), f, f},
		{"replacement trigger", field(optReplacementTrigger, mustMarshalValue(tb, structpb.NewStringValue("x"))), f, f},
		{"unknown field", cat(str(optVersion, "1"), varint(99, 1)), f, f},
		{"field past 2^29-1", cat(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), []byte{1}), f, t},
		{"field 0", []byte{0x02, 0x00}, f, t},
		{"end group", tag(5, protowire.EndGroupType), f, t},
		{"truncated string", []byte{0x2a, 0x05, 'a'}, f, t},
		{"truncated bool", tag(optProtect, protowire.VarintType), f, t},
		{"truncated custom timeouts", cat(tag(optCustomTimeouts, protowire.BytesType), []byte{4, 0x0a, 0x05}), f, t},
		{"truncated provider entry", field(optProviders, []byte{0x0a, 0x05}), f, t},
		{"provider entry field 0", field(optProviders, []byte{0x02, 0x00}), f, t},
		{"provider entry field past 2^29-1", field(optProviders, cat(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), []byte{1})), f, t},
		{"provider entry largest field", field(optProviders, cat(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber)<<3), []byte{1})), t, f},
	}
}

func mustMarshalValue(tb testing.TB, v *structpb.Value) []byte {
	tb.Helper()
	b, err := proto.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestResourceOptionsDecodeAsProtobuf(t *testing.T) {
	t.Parallel()
	for _, tt := range optionCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			if err := proto.Unmarshal(tt.b, &pulumirpc.TransformResourceOptions{}); (err != nil) != tt.refused {
				t.Fatalf("the case is wrong: proto.Unmarshal says %v", err)
			}
			o := checkDecode(t, tt.b)
			if (o != nil) != tt.fast {
				t.Fatalf("read by hand: %v, want %v", o != nil, tt.fast)
			}
			if o != nil {
				checkEncode(t, o)
			}
		})
	}
}

func TestResourceOptionsEncodeAsProtobuf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    *ResourceOptions
	}{
		{"empty", &ResourceOptions{}},
		{"empty lists and maps", &ResourceOptions{DependsOn: []resource.URN{}, HideDiff: []string{}, Providers: map[string]string{}, PluginChecksums: map[string][]byte{}, Aliases: []Alias{}}},
		{"empty elements", &ResourceOptions{DependsOn: []resource.URN{""}, IgnoreChanges: []string{"", "a"}}},
		{"false bools", &ResourceOptions{Protect: new(false), RetainOnDelete: new(false), DeleteBeforeReplace: new(false)}},
		{"empty custom timeouts", &ResourceOptions{CustomTimeouts: &CustomTimeouts{}}},
		{"custom timeouts", &ResourceOptions{CustomTimeouts: &CustomTimeouts{Update: "5m", Read: string(bytes.Repeat([]byte("r"), 200))}}},
		{"maps", &ResourceOptions{Providers: map[string]string{"a": "x", "b": "", "": "z"}, PluginChecksums: map[string][]byte{"a": nil, "b": {}, "c": {1, 2}}}},
		{"string not UTF-8", &ResourceOptions{Import: "\xff"}},
		{"list element not UTF-8", &ResourceOptions{ReplaceWith: []resource.URN{"ok", "\xff"}}},
		{"timeout not UTF-8", &ResourceOptions{CustomTimeouts: &CustomTimeouts{Read: "\xff"}}},
		{"provider key not UTF-8", &ResourceOptions{Providers: map[string]string{"\xff": "x"}}},
		{"provider value not UTF-8", &ResourceOptions{Providers: map[string]string{"a": "\xff"}}},
		{"checksum key not UTF-8", &ResourceOptions{PluginChecksums: map[string][]byte{"\xff": {1}}}},
		{"checksum value not UTF-8", &ResourceOptions{PluginChecksums: map[string][]byte{"a": {0xff}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEncode(t, tt.o)
		})
	}
	// Options that only protobuf writes are left to it.
	for _, o := range []*ResourceOptions{
		{Aliases: []Alias{{URN: "urn:old"}}},
		{Hooks: &HooksBinding{}},
		{ReplacementTrigger: &resource.PropertyValue{}},
		{unknown: varint(99, 1)},
		{CustomTimeouts: &CustomTimeouts{unknown: varint(9, 1)}},
	} {
		if wireEncodable(o) {
			t.Errorf("%s is encoded by hand", dump(o))
		}
	}
}

// FuzzResourceOptionsDecode holds the options decoder to the protobuf
// runtime on arbitrary bytes, and the encoder on whatever it reads.
func FuzzResourceOptionsDecode(f *testing.F) {
	for _, tt := range optionCases(f) {
		f.Add(tt.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if o := checkDecode(t, b); o != nil {
			checkEncode(t, o)
		}
	})
}

// FuzzResourceOptionsEncode holds the options encoder to the protobuf
// runtime on options with arbitrary strings, booleans and map entries.
func FuzzResourceOptionsEncode(f *testing.F) {
	f.Add("urn:a", "1.0.0", "1m", "aws", "urn:p::id", []byte{1}, uint8(7), true)
	f.Add("\xff", "", "", "", "", []byte(nil), uint8(0), false)
	f.Add("", "", "\xc3", "k", "\xfe", []byte{}, uint8(2), true)
	f.Fuzz(func(t *testing.T, s1, s2, s3, k, v string, sum []byte, flags uint8, listed bool) {
		bit := func(i uint) *bool {
			if flags&(1<<i) == 0 {
				return nil
			}
			return new(flags&(1<<(i+3)) != 0)
		}
		o := &ResourceOptions{
			Version: s2, Provider: s1, PluginDownloadURL: s3, DeletedWith: resource.URN(s1), Import: resource.ID(s2),
			Protect: bit(0), RetainOnDelete: bit(1), DeleteBeforeReplace: bit(2),
		}
		if listed {
			o.DependsOn = []resource.URN{resource.URN(s1), resource.URN(s3)}
			o.IgnoreChanges, o.ReplaceOnChanges, o.AdditionalSecretOutputs = []string{s2}, []string{s3, s1}, []string{k}
			o.HideDiff, o.ReplaceWith = []string{v}, []resource.URN{resource.URN(s2)}
			o.CustomTimeouts = &CustomTimeouts{Create: s1, Update: s2, Delete: s3, Read: v}
		}
		if flags&(1<<6) != 0 {
			o.Providers = map[string]string{k: v}
		}
		if flags&(1<<7) != 0 || sum != nil {
			o.PluginChecksums = map[string][]byte{k: sum}
		}
		checkEncode(t, o)
	})
}
