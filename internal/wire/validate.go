package wire

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
// secrets and output values) in one pass over the bytes (and a second
// over the fields of each signature object), without allocating. The
// usual shapes of entries and values are checked inline; everything else
// takes a general path that reads any encoding the decoder reads. The rare
// signature objects (byte strings, assets, archives,
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
	ok, _ := c.structAt(0, len(b), 1)
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

// structAt checks the Struct at b[i:end], depth messages deep, and reports
// whether it is well-formed and whether it has an entry keyed by the
// signature key (which makes it a signature object if it is a value).
func (c *checker) structAt(i, end, depth int) (ok, signed bool) {
	if depth > MaxDepth {
		return false, false
	}
	// The fast path checks scalar values itself, two messages down.
	fast := depth+2 <= MaxDepth
	b := c.b[:end]
	for i < end {
		// The usual entry, checked here without a call: every length one
		// byte, the key then the value, nothing else,
		//	0a L 0a K key 12 V value
		// and the value a number, bool, null or short string in its usual
		// form; other values are left to value. Anything else is left to
		// the general path below.
		if fast && i+3 < end && b[i] == structEntryTag && b[i+1] < 0x80 && b[i+2] == entryKeyTag {
			// L < 0x80, so K and V, which fit in it, are below 0x80 too.
			a, e := i+2, i+2+int(b[i+1])
			ka, kb := a+2, a+2+int(b[a+1])
			if kb+2 <= e && e <= end && b[kb] == entryValueTag && int(b[kb+1]) == e-kb-2 {
				if !c.ascii8(ka, kb) && !c.utf8At(ka, kb) {
					return false, false
				}
				if kb-ka == len(resource.SigKey) && c.s[ka:kb] == resource.SigKey {
					signed = true
				}
				// The value, as scalarAt checks it, inline.
				switch vi, n := kb+2, e-kb-2; {
				case n == 9 && b[vi] == numberTag:
				case n == 2 && (b[vi] == boolTag || b[vi] == nullTag) && b[vi+1] < 0x80:
				case n >= 2 && b[vi] == stringTag && int(b[vi+1]) == n-2:
					if !c.ascii8(vi+2, e) && !c.utf8At(vi+2, e) {
						return false, false
					}
				default:
					if !c.value(c.s[ka:kb], vi, e, depth+2) {
						return false, false
					}
				}
				i = e
				continue
			}
		}
		// The general path: any other entry, or any field, or an entry
		// near the depth limit.
		var a, e int
		if b[i] == structEntryTag {
			if a, e = c.length(i+1, end); a < 0 {
				return false, false
			}
		} else {
			num, typ, fa, fb := c.field(i, end)
			if fa < 0 {
				return false, false
			}
			if i = fb; num != structFields || typ != protowire.BytesType {
				continue
			}
			a, e = fa, fb
		}
		i = e
		key, ok := c.entry(a, e, depth+1)
		if !ok {
			return false, false
		}
		if key == resource.SigKey {
			signed = true
		}
	}
	return true, signed
}

// length reads a length prefix at b[i:end] and returns the range of the
// bytes it announces, or -1.
func (c *checker) length(i, end int) (int, int) {
	// One- and two-byte lengths (below 16 KiB) without a call.
	if i+1 < end {
		n, p := int(c.b[i]), i+1
		if n >= 0x80 {
			if c.b[i+1] >= 0x80 {
				return c.longLength(i, end)
			}
			n, p = n&0x7f|int(c.b[i+1])<<7, i+2
		}
		if n > end-p {
			return -1, -1
		}
		return p, p + n
	}
	return c.longLength(i, end)
}

// ascii8 reports whether b[a:end] is at most eight bytes of ASCII, with one
// load. Small enough to be inlined; utf8At judges what it does not, and
// what it reports false for though it is ASCII: an empty string, whose
// mask is the eight bytes after it, and a string near the end of b.
func (c *checker) ascii8(a, end int) bool {
	n := uint(end - a)
	// The shift is below 64, which spares the code for longer ones.
	return n <= 8 && a+8 <= len(c.b) &&
		binary.LittleEndian.Uint64(c.b[a:])&(0x8080808080808080>>((64-8*n)&63)) == 0
}

// text reports whether b[a:end] is valid UTF-8.
func (c *checker) text(a, end int) bool {
	return c.ascii8(a, end) || c.utf8At(a, end)
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
// by far the most common, a word at a time without a call.
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
	// 32 bytes a round, then 8, then the last 8 (which may overlap the
	// ones before): the high bits of all of them or'ed together.
	s := c.b[a:end]
	or := binary.LittleEndian.Uint64(s[len(s)-8:])
	for ; len(s) >= 32; s = s[32:] {
		or |= binary.LittleEndian.Uint64(s) | binary.LittleEndian.Uint64(s[8:]) |
			binary.LittleEndian.Uint64(s[16:]) | binary.LittleEndian.Uint64(s[24:])
	}
	for ; len(s) >= 8; s = s[8:] {
		or |= binary.LittleEndian.Uint64(s)
	}
	if or&high == 0 {
		return true
	}
	return utf8.Valid(c.b[a:end])
}

// entry checks the Struct entry at b[i:end] and returns its key.
func (c *checker) entry(i, end, depth int) (string, bool) {
	if depth > MaxDepth {
		return "", false
	}
	// The usual entry with longer lengths: the key, then the value,
	// nothing else.
	if i < end && c.b[i] == entryKeyTag {
		if ka, kb := c.length(i+1, end); ka >= 0 && kb < end && c.b[kb] == entryValueTag {
			if vi, ve := c.length(kb+1, end); vi >= 0 && ve == end {
				key := c.s[ka:kb]
				if c.text(ka, kb) && (depth < MaxDepth && c.scalarAt(vi, ve) || c.value(key, vi, ve, depth+1)) {
					return key, true
				}
				return "", false
			}
		}
	}
	var key string
	vi, ve, haveValue := 0, 0, false
	for i < end {
		num, typ, a, b := c.field(i, end)
		if a < 0 {
			return "", false
		}
		i = b
		if typ != protowire.BytesType {
			continue
		}
		switch num {
		case entryKey:
			if key = c.s[a:b]; !c.utf8At(a, b) {
				return "", false
			}
		case entryValue:
			if haveValue {
				c.merged = true
				return "", false
			}
			vi, ve, haveValue = a, b, true
		}
	}
	if !haveValue || !c.value(key, vi, ve, depth+1) {
		return "", false
	}
	return key, true
}

// scalarAt reports whether the Value at b[i:end] is a number, bool, null
// or string of at most 127 bytes in its usual form (one field, a one-byte
// length) and valid. When it is not, value judges it: what scalarAt
// refuses may still be valid. It does not count depth: the caller makes
// sure that a value there may be a scalar.
func (c *checker) scalarAt(i, end int) bool {
	switch n := end - i; {
	case n == 9 && c.b[i] == numberTag:
		return true
	case n == 2 && (c.b[i] == boolTag || c.b[i] == nullTag) && c.b[i+1] < 0x80:
		return true
	case n >= 2 && c.b[i] == stringTag && c.b[i+1] < 0x80 && int(c.b[i+1]) == n-2:
		// The length is one byte only if its high bit is clear: a value
		// longer than 129 bytes may have a first length byte equal to n-2.
		return c.text(i+2, end)
	}
	return false
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
				return c.text(a, b)
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
				ok, signed := c.structAt(a, b, depth+1)
				return ok && (!signed || c.special(key, a, b, i, end, depth))
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

// structValue checks the Struct at b[i:end] of the Value at b[vi:ve],
// and the signature object it may be.
func (c *checker) structValue(key string, i, end, vi, ve, depth int) bool {
	ok, signed := c.structAt(i, end, depth+1)
	return ok && (!signed || c.special(key, i, end, vi, ve, depth))
}

// list checks the ListValue at b[i:end]; key names the property it is in.
func (c *checker) list(key string, i, end, depth int) bool {
	if depth > MaxDepth {
		return false
	}
	// The fast path checks scalar values itself, one message down.
	fast := depth+1 <= MaxDepth
	b := c.b[:end]
	for i < end {
		// The usual element, checked here: its tag and length one byte
		// each, and a scalar as scalarAt checks it; other values are left
		// to value, other fields to the general path below.
		if fast && i+1 < end && b[i] == structEntryTag && b[i+1] < 0x80 {
			vi, e := i+2, i+2+int(b[i+1])
			if e > end {
				return false
			}
			switch n := e - vi; {
			case n == 9 && b[vi] == numberTag:
			case n == 2 && (b[vi] == boolTag || b[vi] == nullTag) && b[vi+1] < 0x80:
			case n >= 2 && b[vi] == stringTag && int(b[vi+1]) == n-2:
				if !c.ascii8(vi+2, e) && !c.utf8At(vi+2, e) {
					return false
				}
			default:
				if !c.value(key, vi, e, depth+1) {
					return false
				}
			}
			i = e
			continue
		}
		if b[i] == structEntryTag { // ListValue.values, its tag one byte
			a, e := c.length(i+1, end)
			if a < 0 || !c.value(key, a, e, depth+1) {
				return false
			}
			i = e
			continue
		}
		num, typ, a, e := c.field(i, end)
		if a < 0 {
			return false
		}
		i = e
		if num == listValues && typ == protowire.BytesType && !c.value(key, a, e, depth+1) {
			return false
		}
	}
	return true
}

// signature holds where the fields a signature object is judged by are:
// the value ranges of the last entries (the last one wins, as in a map)
// keyed by the signature key and by the three field names the checks read.
type signature struct {
	sig, value, secret, deps [2]int
	has                      [4]bool
}

// signatureOf finds the fields of the checked Struct at b[i:end] that a
// signature object is judged by.
func (c *checker) signatureOf(i, end int) signature {
	var sp signature
	for i < end {
		num, typ, a, b := c.field(i, end)
		if a < 0 {
			break // not reached: the struct is well-formed
		}
		i = b
		if num != structFields || typ != protowire.BytesType {
			continue
		}
		// The entry's last key and its only value, as entry reads them.
		var key string
		var v [2]int
		for j := a; j < b; {
			n, t, x, y := c.field(j, b)
			if x < 0 {
				break
			}
			if j = y; t != protowire.BytesType {
				continue
			}
			switch n {
			case entryKey:
				key = c.s[x:y]
			case entryValue:
				v = [2]int{x, y}
			}
		}
		switch key {
		case resource.SigKey:
			sp.sig, sp.has[0] = v, true
		case "value":
			sp.value, sp.has[1] = v, true
		case "secret":
			sp.secret, sp.has[2] = v, true
		case "dependencies":
			sp.deps, sp.has[3] = v, true
		}
	}
	return sp
}

// special checks the signature object whose Struct is at b[si:se] and
// whose Value is at b[i:end] the way the decoder's special does: secrets
// and output values here, without allocating; the rarer kinds by decoding
// the value.
func (c *checker) special(key string, si, se, i, end, depth int) bool {
	sp := c.signatureOf(si, se)
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
var ErrMerged = errors.New("wire: repeated fields need a full decode")
