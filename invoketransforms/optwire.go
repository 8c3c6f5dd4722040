package invoketransforms

import (
	"errors"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wire/wirefield"

	"google.golang.org/protobuf/encoding/protowire"
)

// The options travel in every request and every response, so they are read
// and written straight from and to the wire rather than through a
// pulumirpc.TransformInvokeOptions message: decodeOptions accepts, refuses
// and produces what proto.Unmarshal and a field-by-field conversion do, and
// appendOptions writes what the conversion back and proto.Marshal do (the
// tests hold both to the protobuf runtime; export_test.go has the
// conversions).

// Field numbers of TransformInvokeOptions and of its plugin_checksums map
// entries.
const (
	optProvider          = 1
	optPluginDownloadURL = 2
	optVersion           = 3
	optPluginChecksums   = 4
	entryKey             = 1
	entryValue           = 2
)

// errBadOptions says that the options do not decode. protobuf's own wording
// varies between runs, so every refusal says it plainly, in one way.
var errBadOptions = errors.New("options: not a valid TransformInvokeOptions encoding")

// decodeOptions decodes a serialized TransformInvokeOptions into o, which
// must be empty. The strings of o share b, which must never be written
// again; the checksums and the unknown fields are copies. On error, o holds
// what was decoded before it.
//
// As protobuf decodes: the last occurrence of a string field wins, strings
// must be UTF-8, a field of a known number but the wrong wire type is an
// unknown field, and unknown fields are kept in order, each with its tag
// re-encoded in its shortest form.
func decodeOptions(b []byte, o *InvokeOptions) error {
	for len(b) > 0 {
		num, typ, n := wirefield.ConsumeTag(b)
		if n < 0 {
			return errBadOptions
		}
		b = b[n:]
		if num == optPluginChecksums && o.PluginChecksums == nil {
			// protobuf makes the map before it looks at the wire type.
			o.PluginChecksums = map[string][]byte{}
		}
		if typ == protowire.BytesType && num >= optProvider && num <= optPluginChecksums {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errBadOptions
			}
			b = b[m:]
			if num == optPluginChecksums {
				if err := decodeChecksum(v, o.PluginChecksums); err != nil {
					return err
				}
				continue
			}
			if !utf8.Valid(v) {
				return errBadOptions
			}
			switch num {
			case optProvider:
				o.Provider = wirefield.View(v)
			case optPluginDownloadURL:
				o.PluginDownloadURL = wirefield.View(v)
			default:
				o.Version = wirefield.View(v)
			}
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return errBadOptions
		}
		o.unknown = protowire.AppendTag(o.unknown, num, typ)
		o.unknown = append(o.unknown, b[:m]...)
		b = b[m:]
	}
	return nil
}

// decodeChecksum decodes one plugin_checksums map entry into m, as protobuf
// decodes map entries: a missing key is "", a missing value is nil, the last
// occurrence of either wins, and unknown fields are dropped.
func decodeChecksum(b []byte, m map[string][]byte) error {
	var key string
	var value []byte
	for len(b) > 0 {
		num, typ, n := wirefield.ConsumeTag(b)
		if n < 0 {
			return errBadOptions
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == entryKey || num == entryValue) {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errBadOptions
			}
			b = b[n:]
			if num == entryValue {
				value = append([]byte{}, v...)
				continue
			}
			if !utf8.Valid(v) {
				return errBadOptions
			}
			key = wirefield.View(v)
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errBadOptions
		}
		b = b[n:]
	}
	m[key] = value
	return nil
}

// The encoders below run on the call's goroutine, whose stack starts small:
// the checksums, rare and the only map, are handled in functions of their
// own, so that options without them encode in small frames.

// sizeOptions is the size of o's encoding.
func sizeOptions(o *InvokeOptions) int {
	n := wirefield.SizeString(o.Provider) + wirefield.SizeString(o.PluginDownloadURL) + wirefield.SizeString(o.Version)
	if len(o.PluginChecksums) > 0 {
		n += sizeChecksums(o.PluginChecksums)
	}
	return n + len(o.unknown)
}

//go:noinline
func sizeChecksums(m map[string][]byte) int {
	n := 0
	for k, v := range m {
		n += 1 + protowire.SizeBytes(wirefield.SizeEntry(k, v))
	}
	return n
}

// checkOptions reports whether o encodes: its strings, checksum keys
// included, must be UTF-8.
func checkOptions(o *InvokeOptions) error {
	if !utf8.ValidString(o.Provider) || !utf8.ValidString(o.PluginDownloadURL) || !utf8.ValidString(o.Version) {
		return wirefield.ErrUTF8
	}
	if len(o.PluginChecksums) > 0 {
		return checkChecksums(o.PluginChecksums)
	}
	return nil
}

//go:noinline
func checkChecksums(m map[string][]byte) error {
	for k := range m {
		if !utf8.ValidString(k) {
			return wirefield.ErrUTF8
		}
	}
	return nil
}

// appendOptions appends the encoding of o, which checkOptions accepted, to
// b: the fields in order of number, then the unknown fields as received.
func appendOptions(b []byte, o *InvokeOptions) []byte {
	b = wirefield.AppendString(b, optProvider, o.Provider)
	b = wirefield.AppendString(b, optPluginDownloadURL, o.PluginDownloadURL)
	b = wirefield.AppendString(b, optVersion, o.Version)
	if len(o.PluginChecksums) > 0 {
		b = appendChecksums(b, o.PluginChecksums)
	}
	return append(b, o.unknown...)
}

//go:noinline
func appendChecksums(b []byte, m map[string][]byte) []byte {
	for k, v := range m {
		b = wirefield.AppendEntry(b, optPluginChecksums, k, v)
	}
	return b
}
