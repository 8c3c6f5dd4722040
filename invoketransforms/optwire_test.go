package invoketransforms

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The options codec is held to the protobuf runtime, which the adapter used
// before it had one: decodeOptions must accept, refuse and produce what
// proto.Unmarshal followed by OptionsFromProto does, and appendOptions must
// write what proto.Unmarshal reads back as ToProto's message, refusing what
// proto.Marshal refuses.

// optionsDiff describes how got differs from want, or is "" when they are
// the same, telling a nil map or slice from an empty one.
func optionsDiff(want, got *InvokeOptions) string {
	var d []string
	if want.Provider != got.Provider {
		d = append(d, fmt.Sprintf("provider %q, want %q", got.Provider, want.Provider))
	}
	if want.PluginDownloadURL != got.PluginDownloadURL {
		d = append(d, fmt.Sprintf("plugin_download_url %q, want %q", got.PluginDownloadURL, want.PluginDownloadURL))
	}
	if want.Version != got.Version {
		d = append(d, fmt.Sprintf("version %q, want %q", got.Version, want.Version))
	}
	if (want.PluginChecksums == nil) != (got.PluginChecksums == nil) {
		d = append(d, fmt.Sprintf("plugin_checksums nil: %v, want %v", got.PluginChecksums == nil, want.PluginChecksums == nil))
	}
	if !maps.EqualFunc(want.PluginChecksums, got.PluginChecksums, func(w, g []byte) bool {
		return (w == nil) == (g == nil) && bytes.Equal(w, g)
	}) {
		d = append(d, fmt.Sprintf("plugin_checksums %#v, want %#v", got.PluginChecksums, want.PluginChecksums))
	}
	if !bytes.Equal(want.unknown, got.unknown) {
		d = append(d, fmt.Sprintf("unknown fields %x, want %x", got.unknown, want.unknown))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

// checkDecode decodes b with decodeOptions and with the protobuf runtime
// and fails t unless both give the same verdict and the same options. It
// returns the options, or nil if b is refused.
func checkDecode(t *testing.T, b []byte) *InvokeOptions {
	t.Helper()
	pb := &pulumirpc.TransformInvokeOptions{}
	wantErr := proto.Unmarshal(b, pb)
	got := &InvokeOptions{}
	// A copy, so that the strings decoded from it share nothing with b.
	err := decodeOptions(slices.Clone(b), got)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%x: decodeOptions: %v; proto.Unmarshal: %v", b, err, wantErr)
	case err != nil && !errors.Is(err, errBadOptions):
		t.Fatalf("%x: refused with %v, want %v", b, err, errBadOptions)
	case err != nil:
		return nil
	}
	if d := optionsDiff(OptionsFromProto(pb), got); d != "" {
		t.Fatalf("%x: decodeOptions differs from proto.Unmarshal: %s", b, d)
	}
	return got
}

// checkEncode encodes o with appendOptions and with the protobuf runtime
// and fails t unless both refuse it, or proto.Unmarshal reads the hand
// encoding back as ToProto's message. With at most one checksum, whose
// order cannot differ, the bytes must be protobuf's own.
func checkEncode(t *testing.T, o *InvokeOptions) {
	t.Helper()
	want, wantErr := proto.Marshal(o.ToProto())
	err := checkOptions(o)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%+v: checkOptions: %v; proto.Marshal: %v", o, err, wantErr)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Fatalf("%+v: refused with %q, protobuf with %q", o, err, wantErr)
		}
		return
	}
	size := sizeOptions(o)
	prefix := []byte{0xee}
	got := appendOptions(slices.Clip(prefix), o)
	if !bytes.Equal(got[:len(prefix)], prefix) {
		t.Fatalf("%+v: appendOptions overwrote what it appends to", o)
	}
	got = got[len(prefix):]
	if len(got) != size {
		t.Fatalf("%+v: appendOptions wrote %d bytes, sizeOptions says %d", o, len(got), size)
	}
	if len(o.PluginChecksums) <= 1 && !bytes.Equal(got, want) {
		t.Fatalf("%+v: appendOptions wrote %x, proto.Marshal %x", o, got, want)
	}
	pb := &pulumirpc.TransformInvokeOptions{}
	if err := proto.Unmarshal(got, pb); err != nil {
		t.Fatalf("%+v: the encoding %x does not decode: %v", o, got, err)
	}
	if !proto.Equal(pb, o.ToProto()) {
		t.Fatalf("%+v: the encoding decodes to %v, want %v", o, pb, o.ToProto())
	}
}

// checkResponse encodes a response carrying o, with arguments sent as
// received and with arguments encoded from a map, and fails t unless the
// response's options decode to ToProto's message.
func checkResponse(t *testing.T, o *InvokeOptions) {
	t.Helper()
	for _, res := range []*Result{{Options: o}, {Options: o, Args: resource.PropertyMap{"k": resource.NewProperty("v")}}} {
		out, err := encodePayload(res, true, nil, nil, false)
		if err != nil {
			t.Fatalf("%+v: the response does not encode: %v", o, err)
		}
		pb := &pulumirpc.TransformInvokeResponse{}
		if err := proto.Unmarshal(out, pb); err != nil {
			t.Fatalf("%+v: the response %x does not decode: %v", o, out, err)
		}
		if pb.GetOptions() == nil || !proto.Equal(pb.GetOptions(), o.ToProto()) {
			t.Fatalf("%+v: the response's options decode to %v, want %v", o, pb.GetOptions(), o.ToProto())
		}
	}
}

// checkRoundTrip checks that the options decoded from b (if it decodes)
// encode as protobuf would, and are sent in a response as they should be,
// both as decoded and once changed.
func checkRoundTrip(t *testing.T, b []byte) {
	t.Helper()
	o := checkDecode(t, b)
	if o == nil {
		return
	}
	checkEncode(t, o)
	checkResponse(t, o)
	o.Version += "."
	checkResponse(t, o)
}

// Helpers for writing options by hand.
func tag(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
func field(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tag(num, protowire.BytesType), v)
}
func cat(bs ...[]byte) []byte { return slices.Concat(bs...) }

// optionCases are encodings of options, valid and not, that reach every
// rule of decoding: they seed the fuzz target too.
var optionCases = []struct {
	name    string
	b       []byte
	refused bool
}{
	{"empty", nil, false},
	{"every field", cat(field(1, []byte("urn::id")), field(2, []byte("https://get")), field(3, []byte("6.0.0")),
		field(4, cat(field(1, []byte("linux-amd64")), field(2, []byte{0xde, 0xad})))), false},
	{"empty strings", cat(field(1, nil), field(2, nil), field(3, nil)), false},
	{"last string wins", cat(field(1, []byte("a")), field(3, []byte("v")), field(1, []byte("b"))), false},
	{"provider not UTF-8", field(1, []byte{0xff}), true},
	{"url not UTF-8", field(2, []byte("a\xc3")), true},
	{"version not UTF-8 then valid", cat(field(3, []byte{0xc0, 0x80}), field(3, []byte("ok"))), true},
	{"string field as varint", cat(tag(1, protowire.VarintType), []byte{7}), false},
	{"string field as fixed32", cat(tag(3, protowire.Fixed32Type), []byte{1, 2, 3, 4}), false},
	{"checksums", cat(field(4, cat(field(1, []byte("a")), field(2, []byte{1}))), field(4, cat(field(1, []byte("b")), field(2, []byte{2, 3})))), false},
	{"checksum without value", field(4, field(1, []byte("a"))), false},
	{"checksum with empty value", field(4, cat(field(1, []byte("a")), field(2, nil))), false},
	{"checksum without key", field(4, field(2, []byte{9})), false},
	{"empty checksum entry", field(4, nil), false},
	{"checksum key and value twice", field(4, cat(field(1, []byte("a")), field(2, []byte{1}), field(1, []byte("b")), field(2, []byte{2}))), false},
	{"same checksum key twice", cat(field(4, cat(field(1, []byte("a")), field(2, []byte{1}))), field(4, cat(field(1, []byte("a")), field(2, []byte{2})))), false},
	{"checksum entry with unknown field", field(4, cat(field(1, []byte("a")), tag(9, protowire.VarintType), []byte{1}, field(2, []byte{3}))), false},
	{"checksum key as varint", field(4, cat(tag(1, protowire.VarintType), []byte{1}, field(2, []byte{3}))), false},
	{"checksum value as fixed64", field(4, cat(field(1, []byte("a")), tag(2, protowire.Fixed64Type), make([]byte, 8))), false},
	{"checksum key not UTF-8", field(4, field(1, []byte{0xfe})), true},
	{"checksum value not UTF-8", field(4, cat(field(1, []byte("a")), field(2, []byte{0xfe}))), false},
	{"checksum key not UTF-8 then valid", field(4, cat(field(1, []byte{0xfe}), field(1, []byte("a")))), true},
	{"checksums as varint", cat(tag(4, protowire.VarintType), []byte{1}), false},
	{"checksum entry truncated", field(4, cat(tag(1, protowire.BytesType), []byte{5, 'a'})), true},
	{"checksum entry field 0", field(4, []byte{0x02, 0x00}), true},
	{"checksum entry field past 2^29-1", field(4, cat(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), []byte{0})), true},
	{"checksum entry end group", field(4, tag(3, protowire.EndGroupType)), true},
	{"checksum entry group", field(4, cat(tag(3, protowire.StartGroupType), tag(1, protowire.VarintType), []byte{1}, tag(3, protowire.EndGroupType), field(1, []byte("k")))), false},
	{"unknown varint", cat(field(1, []byte("p")), tag(5, protowire.VarintType), []byte{0x96, 0x01}), false},
	{"unknown of every type", cat(tag(5, protowire.VarintType), []byte{1}, tag(6, protowire.Fixed32Type), []byte{1, 2, 3, 4},
		tag(7, protowire.Fixed64Type), make([]byte, 8), field(8, []byte("x")), tag(9, protowire.StartGroupType),
		tag(1, protowire.VarintType), []byte{1}, tag(9, protowire.EndGroupType)), false},
	{"unknown fields keep their order", cat(tag(9, protowire.VarintType), []byte{1}, field(1, []byte("p")), tag(5, protowire.VarintType), []byte{2}), false},
	{"unknown with a long tag", cat([]byte{0xa8, 0x80, 0x00}, []byte{1}), false},
	{"provider with a long tag", cat([]byte{0x8a, 0x00}, protowire.AppendString(nil, "p")), false},
	{"largest field number", cat(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber)<<3), []byte{1}), false},
	{"field number past 2^29-1", cat(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), []byte{1}), true},
	{"field number 0", []byte{0x02, 0x00}, true},
	{"end group", tag(5, protowire.EndGroupType), true},
	{"unterminated group", cat(tag(5, protowire.StartGroupType), tag(1, protowire.VarintType), []byte{1}), true},
	{"mismatched group end", cat(tag(5, protowire.StartGroupType), tag(6, protowire.EndGroupType)), true},
	{"wire type 6", []byte{0x0e}, true},
	{"wire type 7", []byte{0x0f}, true},
	{"truncated length", []byte{0x0a, 0x05, 'a'}, true},
	{"truncated tag", []byte{0x80}, true},
	{"tag overflows", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, true},
	{"truncated varint", cat(tag(5, protowire.VarintType), []byte{0x80}), true},
	{"truncated fixed32", cat(tag(5, protowire.Fixed32Type), []byte{1}), true},
}

func TestOptionsDecodeAsProtobuf(t *testing.T) {
	t.Parallel()
	for _, tt := range optionCases {
		t.Run(tt.name, func(t *testing.T) {
			if err := proto.Unmarshal(tt.b, &pulumirpc.TransformInvokeOptions{}); (err != nil) != tt.refused {
				t.Fatalf("the case is wrong: proto.Unmarshal says %v", err)
			}
			checkRoundTrip(t, tt.b)
		})
	}
}

func TestOptionsEncodeAsProtobuf(t *testing.T) {
	t.Parallel()
	withUnknown := checkDecode(t, cat(field(1, []byte("p")), tag(7, protowire.VarintType), []byte{1}, field(9, []byte("x"))))
	tests := []struct {
		name string
		o    *InvokeOptions
	}{
		{"empty", &InvokeOptions{}},
		{"every field", &InvokeOptions{Provider: "urn::id", PluginDownloadURL: "https://get", Version: "6.0.0",
			PluginChecksums: map[string][]byte{"linux-amd64": {0xde, 0xad}}}},
		{"many checksums", &InvokeOptions{PluginChecksums: map[string][]byte{"a": {1}, "b": nil, "c": {}, "": {2}, "é": make([]byte, 300)}}},
		{"empty checksums", &InvokeOptions{PluginChecksums: map[string][]byte{}}},
		{"nil checksum", &InvokeOptions{PluginChecksums: map[string][]byte{"a": nil}}},
		{"long strings", &InvokeOptions{Provider: string(bytes.Repeat([]byte("p"), 200)), Version: string(bytes.Repeat([]byte("v"), 20000))}},
		{"unknown fields", withUnknown},
		{"provider not UTF-8", &InvokeOptions{Provider: "\xff"}},
		{"url not UTF-8", &InvokeOptions{PluginDownloadURL: "a\xc3"}},
		{"version not UTF-8", &InvokeOptions{Version: "\xc0\x80"}},
		{"checksum key not UTF-8", &InvokeOptions{PluginChecksums: map[string][]byte{"ok": nil, "\xfe": {1}}}},
		{"checksum value not UTF-8", &InvokeOptions{PluginChecksums: map[string][]byte{"ok": {0xfe}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEncode(t, tt.o)
		})
	}
}

// FuzzOptionsDecode holds decodeOptions to the protobuf runtime on
// arbitrary bytes, and appendOptions and the response's options on
// whatever decodes.
func FuzzOptionsDecode(f *testing.F) {
	for _, tt := range optionCases {
		f.Add(tt.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRoundTrip(t, b)
	})
}

// FuzzOptionsEncode holds appendOptions to the protobuf runtime on options
// with arbitrary strings, checksums and unknown fields (those of the
// options that unknown decodes to, if it does).
func FuzzOptionsEncode(f *testing.F) {
	f.Add("urn::id", "https://get", "6.0.0", "linux-amd64", []byte{0xde, 0xad}, "k2", []byte(nil), []byte(nil))
	f.Add("\xff", "", "", "", []byte{}, "", []byte{}, cat(tag(7, protowire.VarintType), []byte{1}))
	f.Add("", "", "", "\xfe", []byte{1}, "a", []byte{2}, []byte{})
	f.Fuzz(func(t *testing.T, provider, url, version, k1 string, v1 []byte, k2 string, v2, unknown []byte) {
		o := &InvokeOptions{Provider: provider, PluginDownloadURL: url, Version: version}
		if len(unknown) > 0 {
			pb := &pulumirpc.TransformInvokeOptions{}
			if proto.Unmarshal(unknown, pb) == nil {
				o.unknown = OptionsFromProto(pb).unknown
			}
		}
		if k1 != "" || v1 != nil {
			o.PluginChecksums = map[string][]byte{k1: v1}
			if k2 != "" {
				o.PluginChecksums[k2] = v2
			}
		}
		checkEncode(t, o)
	})
}
