package wireprops

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"
	"unsafe"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/encoding/protowire"
)

// Validate reports the error [Decode] would report for b, without building
// the property map. It checks everything the decoder checks (well-formed
// fields, valid UTF-8 in keys and strings, every entry with a value and
// every value with a kind, at most [MaxDepth] messages deep, well-formed
// secrets and output values) in one pass over the bytes, without
// allocating. The rare signature objects (byte strings, assets, archives,
// resource references and unknown signatures) are decoded to judge them.
// Only when it finds a fault does it run Decode, for the decoder's own
// message.
//
// It returns [ErrMerged] for an entry with several values, a value with
// several kinds or a key repeated with a faulty earlier entry, which the
// protobuf runtime merges or drops and which only Decode judges; the engine
// never sends those. It exists so that properties that
// may be sent back as received can be checked for a fraction of a
// decode's cost, and a later Decode of them cannot fail.
func Validate(b []byte) error {
	// A view of b as a string, never retained, for UTF-8 checks and key
	// comparisons without copying.
	c := checker{b: b, s: unsafe.String(unsafe.SliceData(b), len(b))}
	ok := c.structAt(0, len(b), 1, nil)
	switch {
	case c.merged:
		return ErrMerged
	case ok:
		return nil
	}
	if _, err := Decode(b); err != nil {
		return err
	}
	// The check refused what the decoder accepts: a key repeated, whose
	// earlier entry the protobuf runtime drops unjudged. Leave it to Decode.
	return ErrMerged
}

// checker walks a payload once. On the first fault it stops and reports
// false; Validate then asks the decoder what the fault is.
type checker struct {
	b      []byte
	s      string // b, as a string
	merged bool   // stopped at an encoding only Decode judges
}

// uvarint reads a varint at b[i:end], returning it and the position after
// it, or -1. One- and two-byte varints (every tag and most lengths) are
// read inline.
func (c *checker) uvarint(i, end int) (uint64, int) {
	if i < end && c.b[i] < 0x80 {
		return uint64(c.b[i]), i + 1
	}
	if i+1 < end && c.b[i+1] < 0x80 {
		return uint64(c.b[i]&0x7f) | uint64(c.b[i+1])<<7, i + 2
	}
	v, n := protowire.ConsumeVarint(c.b[i:end])
	if n < 0 {
		return 0, -1
	}
	return v, i + n
}

// field reads a field at b[i:end]: its number and type, the range of its
// value (for a length-prefixed field, the bytes inside the prefix), or -1.
func (c *checker) field(i, end int) (protowire.Number, protowire.Type, int, int) {
	t, p := c.uvarint(i, end)
	// The field numbers the protobuf runtime accepts, as in the decoder.
	if p < 0 || t>>3 < uint64(protowire.MinValidNumber) || t>>3 > uint64(protowire.MaxValidNumber) {
		return 0, 0, -1, -1
	}
	num, typ := protowire.Number(t>>3), protowire.Type(t&7)
	switch typ {
	case protowire.BytesType:
		n, q := c.uvarint(p, end)
		if q < 0 || n > uint64(end-q) {
			return 0, 0, -1, -1
		}
		return num, typ, q, q + int(n)
	case protowire.VarintType:
		if _, q := c.uvarint(p, end); q >= 0 {
			return num, typ, p, q
		}
		return 0, 0, -1, -1
	}
	n := protowire.ConsumeFieldValue(num, typ, c.b[p:end])
	if n < 0 {
		return 0, 0, -1, -1
	}
	return num, typ, p, p + n
}

// special holds where the fields a signature object is judged by are: the
// value ranges of the last entries (the last one wins, as in a map) keyed
// by the signature key and by the three field names the checks read.
type special struct {
	sig, value, secret, deps [2]int
	has                      [4]bool
}

func (c *checker) structAt(i, end, depth int, sp *special) bool {
	if depth > MaxDepth {
		return false
	}
	for i < end {
		var a, b int
		if c.b[i] == structEntryTag {
			// The usual field: an entry, its tag one byte.
			if n := c.len1(i+1, end); n >= 0 {
				a, b = i+2, i+2+n
			} else if a, b = c.longLength(i+1, end); a < 0 {
				return false
			}
		} else {
			num, typ, fa, fb := c.field(i, end)
			if fa < 0 {
				return false
			}
			if i = fb; num != structFields || typ != protowire.BytesType {
				continue
			}
			a, b = fa, fb
		}
		i = b
		key, vi, ve, ok := c.entry(a, b, depth+1)
		if !ok {
			return false
		}
		if sp == nil || len(key) < len("value") {
			continue
		}
		n := -1
		switch key {
		case resource.SigKey:
			n, sp.sig = 0, [2]int{vi, ve}
		case "value":
			n, sp.value = 1, [2]int{vi, ve}
		case "secret":
			n, sp.secret = 2, [2]int{vi, ve}
		case "dependencies":
			n, sp.deps = 3, [2]int{vi, ve}
		}
		if n >= 0 {
			sp.has[n] = true
		}
	}
	return true
}

// length reads a length prefix at b[i:end] and returns the range of the
// bytes it announces, or -1.
func (c *checker) length(i, end int) (int, int) {
	if n := c.len1(i, end); n >= 0 {
		return i + 1, i + 1 + n
	}
	return c.longLength(i, end)
}

// len1 returns a length prefix at b[i:end] that is one byte long and
// fits, or -1. Small enough to be inlined.
func (c *checker) len1(i, end int) int {
	if i < end {
		if n := int(c.b[i]); n < 0x80 && n < end-i {
			return n
		}
	}
	return -1
}

// ascii8 reports whether b[a:end] is at most eight bytes of ASCII, with one
// load. Small enough to be inlined; utf8At judges what it does not.
func (c *checker) ascii8(a, end int) bool {
	return end-a <= 8 && a+8 <= len(c.b) &&
		binary.LittleEndian.Uint64(c.b[a:])&(0x8080808080808080>>(64-8*uint(end-a))) == 0
}

func (c *checker) longLength(i, end int) (int, int) {
	n, q := c.uvarint(i, end)
	if q < 0 || n > uint64(end-q) {
		return -1, -1
	}
	return q, q + int(n)
}

// One-byte tags of the fields the payloads are made of.
const (
	structEntryTag = structFields<<3 | byte(protowire.BytesType) // Struct.fields, ListValue.values
	entryKeyTag    = entryKey<<3 | byte(protowire.BytesType)
	entryValueTag  = entryValue<<3 | byte(protowire.BytesType)
	nullTag        = valueNull<<3 | byte(protowire.VarintType)
	numberTag      = valueNumber<<3 | byte(protowire.Fixed64Type)
	stringTag      = valueString<<3 | byte(protowire.BytesType)
	boolTag        = valueBool<<3 | byte(protowire.VarintType)
	structTag      = valueStruct<<3 | byte(protowire.BytesType)
	listTag        = valueList<<3 | byte(protowire.BytesType)
)

// utf8At reports whether b[a:end] is valid UTF-8, checking the ASCII case,
// by far the most common, eight bytes at a time without a call.
func (c *checker) utf8At(a, end int) bool {
	const high = 0x8080808080808080
	n := end - a
	if n <= 8 && a+8 <= len(c.b) {
		// One load; the bytes past the string are masked off.
		if binary.LittleEndian.Uint64(c.b[a:])&(high>>(64-8*uint(n))) == 0 {
			return true
		}
		return utf8.Valid(c.b[a:end])
	}
	if n < 8 {
		for i := a; i < end; i++ {
			if c.b[i] >= utf8.RuneSelf {
				return utf8.Valid(c.b[a:end])
			}
		}
		return true
	}
	var or uint64
	for i := a; i+8 <= end; i += 8 {
		or |= binary.LittleEndian.Uint64(c.b[i:])
	}
	if (or|binary.LittleEndian.Uint64(c.b[end-8:]))&high == 0 {
		return true
	}
	return utf8.Valid(c.b[a:end])
}

func (c *checker) entry(i, end, depth int) (string, int, int, bool) {
	if depth > MaxDepth {
		return "", 0, 0, false
	}
	// The usual entry: the key, then the value, nothing else; scalar
	// values are checked here, the others by value.
	if i < end && c.b[i] == entryKeyTag {
		if ka, kb := c.length(i+1, end); ka >= 0 && kb < end && c.b[kb] == entryValueTag {
			if vi, ve := c.length(kb+1, end); vi >= 0 && ve == end {
				key := c.s[ka:kb]
				if !c.ascii8(ka, kb) && !c.utf8At(ka, kb) {
					return "", 0, 0, false
				}
				if depth < MaxDepth {
					switch c.scalar(vi, ve) {
					case scalarValid:
						return key, vi, ve, true
					case scalarInvalid:
						return "", 0, 0, false
					}
				}
				if !c.value(key, vi, ve, depth+1) {
					return "", 0, 0, false
				}
				return key, vi, ve, true
			}
		}
	}
	var key string
	vi, ve, haveValue := 0, 0, false
	for i < end {
		num, typ, a, b := c.field(i, end)
		if a < 0 {
			return "", 0, 0, false
		}
		i = b
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case entryKey:
			if key = c.s[a:b]; !c.utf8At(a, b) {
				return "", 0, 0, false
			}
		case entryValue:
			if haveValue {
				c.merged = true
				return "", 0, 0, false
			}
			vi, ve, haveValue = a, b, true
		}
	}
	if !haveValue || !c.value(key, vi, ve, depth+1) {
		return "", 0, 0, false
	}
	return key, vi, ve, true
}

func (c *checker) value(key string, i, end, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	// The usual value: one kind field, its tag one byte.
	if i < end {
		switch c.b[i] {
		case stringTag:
			if a, b := c.length(i+1, end); a >= 0 && b == end {
				return c.ascii8(a, b) || c.utf8At(a, b)
			}
		case numberTag:
			if i+9 == end {
				return true
			}
		case boolTag, nullTag:
			if i+2 == end && c.b[i+1] < 0x80 {
				return true
			}
		case structTag:
			if a, b := c.length(i+1, end); a >= 0 && b == end {
				return c.structValue(key, a, b, i, end, depth)
			}
		case listTag:
			if a, b := c.length(i+1, end); a >= 0 && b == end {
				return c.list(key, a, b, depth+1)
			}
		}
	}
	var kind protowire.Number
	si, se, have, start := 0, 0, false, i
	for i < end {
		n, typ, a, b := c.field(i, end)
		if a < 0 {
			return false
		}
		i = b
		if !kindField(n, typ) {
			continue
		}
		if have {
			c.merged = true
			return false
		}
		kind, si, se, have = n, a, b, true
	}
	if !have {
		return false
	}
	switch kind {
	case valueString:
		return c.utf8At(si, se)
	case valueStruct:
		return c.structValue(key, si, se, start, end, depth)
	case valueList:
		return c.list(key, si, se, depth+1)
	}
	return true
}

// Verdicts of scalar.
const (
	scalarOther   = iota // not a scalar in the usual form: ask value
	scalarValid          // a valid scalar
	scalarInvalid        // a string that is not UTF-8
)

// scalar checks the Value at b[i:end] if it is a string, number, bool or
// null in the usual form (one field, a one-byte length), which is most
// values, without the call to value; the caller makes sure the value is
// not too deep.
func (c *checker) scalar(i, end int) int {
	if i >= end {
		return scalarOther
	}
	switch c.b[i] {
	case stringTag:
		if n := c.len1(i+1, end); n >= 0 && i+2+n == end {
			if c.ascii8(i+2, end) || c.utf8At(i+2, end) {
				return scalarValid
			}
			return scalarInvalid
		}
	case numberTag:
		if i+9 == end {
			return scalarValid
		}
	case boolTag, nullTag:
		if i+2 == end && c.b[i+1] < 0x80 {
			return scalarValid
		}
	}
	return scalarOther
}

// structValue checks the Struct at b[i:end] of the Value at b[vi:ve],
// and the signature object it may be.
func (c *checker) structValue(key string, i, end, vi, ve, depth int) bool {
	var sp special
	if !c.structAt(i, end, depth+1, &sp) {
		return false
	}
	if !sp.has[0] {
		return true
	}
	return c.special(key, sp, vi, ve, depth)
}

func (c *checker) list(key string, i, end, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	for i < end {
		if c.b[i] == structEntryTag { // ListValue.values, its tag one byte
			a, b := c.length(i+1, end)
			if a < 0 {
				return false
			}
			r := scalarOther
			if depth < MaxDepth {
				r = c.scalar(a, b)
			}
			if r == scalarInvalid || r == scalarOther && !c.value(key, a, b, depth+1) {
				return false
			}
			i = b
			continue
		}
		num, typ, a, b := c.field(i, end)
		if a < 0 {
			return false
		}
		i = b
		if num == listValues && typ == protowire.BytesType && !c.value(key, a, b, depth+1) {
			return false
		}
	}
	return true
}

// special checks a signature object the way the decoder's special does:
// secrets and output values here, without allocating; the rarer kinds by
// decoding the value.
func (c *checker) special(key string, sp special, i, end, depth int) bool {
	var name string
	if k, a, b := c.kindOf(sp.sig); k == valueString && !isUnknown(c.s[a:b]) {
		name = c.s[a:b]
	}
	switch name {
	case resource.SecretSig:
		return sp.has[1]
	case resource.OutputValueSig:
		if k, _, _ := c.kindOf(sp.secret); sp.has[2] && k != valueBool {
			return false
		}
		if !sp.has[3] {
			return true
		}
		k, i, end := c.kindOf(sp.deps)
		if k != valueList {
			return false
		}
		for i < end {
			num, typ, a, b := c.field(i, end)
			i = b
			if num != listValues || typ != protowire.BytesType {
				continue
			}
			if k, sa, sb := c.kindOf([2]int{a, b}); k != valueString || isUnknown(c.s[sa:sb]) {
				return false
			}
		}
		return true
	}
	d := newDecoder(c.b[i:end])
	_, err := d.value(key, 0, len(d.s), depth)
	return err == nil
}

// kindOf returns the kind of the checked Value at b[r[0]:r[1]] and, for a
// string, struct or list, the range of its contents.
func (c *checker) kindOf(r [2]int) (protowire.Number, int, int) {
	for i, end := r[0], r[1]; i < end; {
		n, typ, a, b := c.field(i, end)
		if a < 0 {
			return 0, 0, 0
		}
		i = b
		if kindField(n, typ) {
			return n, a, b
		}
	}
	return 0, 0, 0
}

// isUnknown reports whether s is one of the sentinels that stand for an
// unknown value, which the decoder turns into a computed value.
func isUnknown(s string) bool {
	if len(s) != unknownSentLen {
		return false
	}
	switch s {
	case plugin.UnknownBoolValue, plugin.UnknownNumberValue, plugin.UnknownStringValue,
		plugin.UnknownArrayValue, plugin.UnknownAssetValue, plugin.UnknownArchiveValue,
		plugin.UnknownObjectValue:
		return true
	}
	return false
}

// ErrMerged is returned by [Validate] for encodings that only a full decode
// can judge: an entry with several values, a value with several kinds, or
// a repeated key.
var ErrMerged = errors.New("wireprops: repeated fields need a full decode")
