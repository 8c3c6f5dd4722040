package transforms

import (
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wire/wirefield"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protowire"
)

// Most resource options the engine sends are strings, lists of strings,
// booleans, custom timeouts and string maps. Those are read and written
// straight from and to the wire here, as proto.Unmarshal followed by
// optionsFromProto and proto.Marshal of toProto do (the tests hold both to
// the protobuf runtime). Everything else — aliases, hooks, a replacement
// trigger, fields of newer engines, and any encoding that is not plainly
// valid — goes through the protobuf runtime as before, so that what it
// accepts, refuses and produces stays its own.

// Field numbers of TransformResourceOptions, of its custom timeouts and of
// map entries.
const (
	optDependsOn               = 1
	optProtect                 = 2
	optIgnoreChanges           = 3
	optReplaceOnChanges        = 4
	optVersion                 = 5
	optAliases                 = 6
	optProvider                = 7
	optCustomTimeouts          = 8
	optPluginDownloadURL       = 9
	optRetainOnDelete          = 10
	optDeletedWith             = 11
	optDeleteBeforeReplace     = 12
	optAdditionalSecretOutputs = 13
	optProviders               = 14
	optPluginChecksums         = 15
	optHooks                   = 16
	optImport                  = 17
	optHideDiff                = 18
	optReplaceWith             = 19
	optReplacementTrigger      = 20
	timeoutCreate              = 1
	timeoutUpdate              = 2
	timeoutDelete              = 3
	timeoutRead                = 4
	entryKey                   = 1
	entryValue                 = 2
)

// decodeOptionsWire decodes a serialized TransformResourceOptions into o,
// which must be empty, if it holds nothing but the fields it reads, each
// with its own wire type and validly encoded; it returns false otherwise,
// leaving o in any state, and the caller asks the protobuf runtime. The
// strings of o share b, which must never be written again; checksums are
// copies.
//
// As protobuf decodes: the last occurrence of a singular field wins, lists
// grow with each occurrence, custom timeouts given twice are merged, map
// entries decode with missing keys and values zero and the last one for a
// key winning, and unknown fields inside map entries are dropped.
func decodeOptionsWire(b []byte, o *ResourceOptions) bool {
	for len(b) > 0 {
		num, typ, n := wirefield.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case optProtect, optRetainOnDelete, optDeleteBeforeReplace:
			if typ != protowire.VarintType {
				return false
			}
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return false
			}
			b = b[n:]
			p := &o.Protect
			if num == optRetainOnDelete {
				p = &o.RetainOnDelete
			} else if num == optDeleteBeforeReplace {
				p = &o.DeleteBeforeReplace
			}
			if *p == nil {
				*p = new(bool)
			}
			**p = protowire.DecodeBool(v)
			continue
		case optAliases, optHooks, optReplacementTrigger:
			return false
		}
		if typ != protowire.BytesType || num > optReplaceWith {
			return false
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case optCustomTimeouts:
			if o.CustomTimeouts == nil {
				o.CustomTimeouts = &CustomTimeouts{}
			}
			if !decodeTimeouts(v, o.CustomTimeouts) {
				return false
			}
			continue
		case optProviders:
			if o.Providers == nil {
				o.Providers = map[string]string{}
			}
			k, s, ok := decodeEntry(v, false)
			if !ok {
				return false
			}
			o.Providers[k] = wirefield.View(s)
			continue
		case optPluginChecksums:
			if o.PluginChecksums == nil {
				o.PluginChecksums = map[string][]byte{}
			}
			k, s, ok := decodeEntry(v, true)
			if !ok {
				return false
			}
			o.PluginChecksums[k] = s
			continue
		}
		if !utf8.Valid(v) {
			return false
		}
		s := wirefield.View(v)
		switch num {
		case optDependsOn:
			o.DependsOn = append(o.DependsOn, resource.URN(s))
		case optIgnoreChanges:
			o.IgnoreChanges = append(o.IgnoreChanges, s)
		case optReplaceOnChanges:
			o.ReplaceOnChanges = append(o.ReplaceOnChanges, s)
		case optVersion:
			o.Version = s
		case optProvider:
			o.Provider = s
		case optPluginDownloadURL:
			o.PluginDownloadURL = s
		case optDeletedWith:
			o.DeletedWith = resource.URN(s)
		case optAdditionalSecretOutputs:
			o.AdditionalSecretOutputs = append(o.AdditionalSecretOutputs, s)
		case optImport:
			o.Import = resource.ID(s)
		case optHideDiff:
			o.HideDiff = append(o.HideDiff, s)
		default: // optReplaceWith
			o.ReplaceWith = append(o.ReplaceWith, resource.URN(s))
		}
	}
	return true
}

// decodeTimeouts decodes custom timeouts into ct, merging them with what ct
// holds, if they hold nothing but their four strings.
func decodeTimeouts(b []byte, ct *CustomTimeouts) bool {
	for len(b) > 0 {
		num, typ, n := wirefield.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < timeoutCreate || num > timeoutRead {
			return false
		}
		b = b[n:]
		s, m := wirefield.ConsumeString(b)
		if m < 0 {
			return false
		}
		b = b[m:]
		switch num {
		case timeoutCreate:
			ct.Create = s
		case timeoutUpdate:
			ct.Update = s
		case timeoutDelete:
			ct.Delete = s
		default:
			ct.Read = s
		}
	}
	return true
}

// decodeEntry decodes a map entry whose key is a string and whose value is
// a string or, with bytes, a byte string, which is then a copy (and
// non-nil when present, as protobuf makes it). Fields other than the key
// and the value are skipped, as protobuf skips them.
func decodeEntry(b []byte, bytes bool) (key string, value []byte, ok bool) {
	for len(b) > 0 {
		num, typ, n := wirefield.ConsumeTag(b)
		if n < 0 {
			return "", nil, false
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == entryKey || num == entryValue) {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 || (!(bytes && num == entryValue) && !utf8.Valid(v)) {
				return "", nil, false
			}
			b = b[m:]
			switch {
			case num == entryKey:
				key = wirefield.View(v)
			case bytes:
				value = append([]byte{}, v...)
			default:
				value = v
			}
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return "", nil, false
		}
		b = b[m:]
	}
	return key, value, true
}

// wireEncodable reports whether o holds nothing but the fields that
// appendOptionsWire writes; the others go through the protobuf runtime.
func wireEncodable(o *ResourceOptions) bool {
	return len(o.Aliases) == 0 && o.Hooks == nil && o.ReplacementTrigger == nil && len(o.unknown) == 0 &&
		(o.CustomTimeouts == nil || len(o.CustomTimeouts.unknown) == 0)
}

// checkOptionsWire reports whether o, which wireEncodable accepted, encodes:
// its strings must be UTF-8.
func checkOptionsWire(o *ResourceOptions) error {
	ok := validStrings(o.DependsOn) && validStrings(o.IgnoreChanges) && validStrings(o.ReplaceOnChanges) &&
		utf8.ValidString(o.Version) && utf8.ValidString(o.Provider) && utf8.ValidString(o.PluginDownloadURL) &&
		utf8.ValidString(string(o.DeletedWith)) && validStrings(o.AdditionalSecretOutputs) &&
		utf8.ValidString(string(o.Import)) && validStrings(o.HideDiff) && validStrings(o.ReplaceWith)
	if ct := o.CustomTimeouts; ct != nil {
		ok = ok && utf8.ValidString(ct.Create) && utf8.ValidString(ct.Update) && utf8.ValidString(ct.Delete) && utf8.ValidString(ct.Read)
	}
	if !ok || len(o.Providers) > 0 && !validProviders(o.Providers) || len(o.PluginChecksums) > 0 && !validChecksums(o.PluginChecksums) {
		return wirefield.ErrUTF8
	}
	return nil
}

// The maps are rare, and iterating them takes a large frame on the call's
// small stack: they are handled in functions of their own.

//go:noinline
func validProviders(m map[string]string) bool {
	for k, v := range m {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

//go:noinline
func validChecksums(m map[string][]byte) bool {
	for k := range m {
		if !utf8.ValidString(k) {
			return false
		}
	}
	return true
}

func validStrings[S ~string](ss []S) bool {
	for _, s := range ss {
		if !utf8.ValidString(string(s)) {
			return false
		}
	}
	return true
}

// appendOptionsWire appends the encoding of o, which wireEncodable and
// checkOptionsWire accepted, to b: the fields in order of number, as
// protobuf writes them.
func appendOptionsWire(b []byte, o *ResourceOptions) []byte {
	b = appendStrings(b, optDependsOn, o.DependsOn)
	b = appendBool(b, optProtect, o.Protect)
	b = appendStrings(b, optIgnoreChanges, o.IgnoreChanges)
	b = appendStrings(b, optReplaceOnChanges, o.ReplaceOnChanges)
	b = wirefield.AppendString(b, optVersion, o.Version)
	b = wirefield.AppendString(b, optProvider, o.Provider)
	if ct := o.CustomTimeouts; ct != nil {
		b = protowire.AppendTag(b, optCustomTimeouts, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(wirefield.SizeString(ct.Create)+wirefield.SizeString(ct.Update)+wirefield.SizeString(ct.Delete)+wirefield.SizeString(ct.Read)))
		b = wirefield.AppendString(b, timeoutCreate, ct.Create)
		b = wirefield.AppendString(b, timeoutUpdate, ct.Update)
		b = wirefield.AppendString(b, timeoutDelete, ct.Delete)
		b = wirefield.AppendString(b, timeoutRead, ct.Read)
	}
	b = wirefield.AppendString(b, optPluginDownloadURL, o.PluginDownloadURL)
	b = appendBool(b, optRetainOnDelete, o.RetainOnDelete)
	b = wirefield.AppendString(b, optDeletedWith, o.DeletedWith)
	b = appendBool(b, optDeleteBeforeReplace, o.DeleteBeforeReplace)
	b = appendStrings(b, optAdditionalSecretOutputs, o.AdditionalSecretOutputs)
	if len(o.Providers) > 0 {
		b = appendProviders(b, o.Providers)
	}
	if len(o.PluginChecksums) > 0 {
		b = appendChecksums(b, o.PluginChecksums)
	}
	b = wirefield.AppendString(b, optImport, o.Import)
	b = appendStrings(b, optHideDiff, o.HideDiff)
	return appendStrings(b, optReplaceWith, o.ReplaceWith)
}

//go:noinline
func appendProviders(b []byte, m map[string]string) []byte {
	for k, v := range m {
		b = wirefield.AppendEntry(b, optProviders, k, []byte(v))
	}
	return b
}

//go:noinline
func appendChecksums(b []byte, m map[string][]byte) []byte {
	for k, v := range m {
		b = wirefield.AppendEntry(b, optPluginChecksums, k, v)
	}
	return b
}

// sizeOptionsWire is the size of the encoding appendOptionsWire writes.
func sizeOptionsWire(o *ResourceOptions) int {
	n := sizeStrings(optDependsOn, o.DependsOn) + sizeBool(o.Protect) + sizeStrings(optIgnoreChanges, o.IgnoreChanges) +
		sizeStrings(optReplaceOnChanges, o.ReplaceOnChanges) + wirefield.SizeString(o.Version) + wirefield.SizeString(o.Provider) +
		wirefield.SizeString(o.PluginDownloadURL) + sizeBool(o.RetainOnDelete) + wirefield.SizeString(string(o.DeletedWith)) +
		sizeBool(o.DeleteBeforeReplace) + sizeStrings(optAdditionalSecretOutputs, o.AdditionalSecretOutputs) +
		sizeStrings(optHideDiff, o.HideDiff) + sizeStrings(optReplaceWith, o.ReplaceWith)
	if o.Import != "" {
		n += protowire.SizeTag(optImport) + protowire.SizeBytes(len(o.Import))
	}
	if ct := o.CustomTimeouts; ct != nil {
		n += 1 + protowire.SizeBytes(wirefield.SizeString(ct.Create)+wirefield.SizeString(ct.Update)+wirefield.SizeString(ct.Delete)+wirefield.SizeString(ct.Read))
	}
	if len(o.Providers) > 0 || len(o.PluginChecksums) > 0 {
		n += sizeMaps(o)
	}
	return n
}

//go:noinline
func sizeMaps(o *ResourceOptions) int {
	n := 0
	for k, v := range o.Providers {
		n += 1 + protowire.SizeBytes(1+protowire.SizeBytes(len(k))+1+protowire.SizeBytes(len(v)))
	}
	for k, v := range o.PluginChecksums {
		n += 1 + protowire.SizeBytes(1+protowire.SizeBytes(len(k))+1+protowire.SizeBytes(len(v)))
	}
	return n
}

// sizeStrings is the size of a repeated string field's encoding.
func sizeStrings[S ~string](num protowire.Number, ss []S) int {
	n := 0
	for _, s := range ss {
		n += protowire.SizeTag(num) + protowire.SizeBytes(len(s))
	}
	return n
}

// sizeBool is the size of an optional boolean field's encoding (all of
// them have one-byte tags).
func sizeBool(v *bool) int {
	if v == nil {
		return 0
	}
	return 2
}

// appendStrings appends a repeated string field: every element, empty ones
// included.
func appendStrings[S ~string](b []byte, num protowire.Number, ss []S) []byte {
	for _, s := range ss {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendString(b, string(s))
	}
	return b
}

// appendBool appends an optional boolean field when it is set.
func appendBool(b []byte, num protowire.Number, v *bool) []byte {
	if v == nil {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, protowire.EncodeBool(*v))
}
