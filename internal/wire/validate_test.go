package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protowire"
)

// Builders of hand-made wire forms, for shapes the protobuf runtime never
// writes.

// lenField appends field num of b's bytes, length-prefixed.
func lenField(dst []byte, num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(dst, num, protowire.BytesType), b)
}

// wireEntry is a Struct entry (field 1 of a Struct) of key and a Value.
func wireEntry(key string, value []byte) []byte {
	return lenField(nil, 1, lenField(lenField(nil, 1, []byte(key)), 2, value))
}

func wireString(s string) []byte { return lenField(nil, 3, []byte(s)) }
func wireStruct(s []byte) []byte { return lenField(nil, 5, s) }
func wireList(l []byte) []byte   { return lenField(nil, 6, l) }
func wireNumber() []byte {
	return protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), 0x4000000000000000)
}
func wireBool() []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1)
}

// checkVerdict holds Validate to Decode on b and to want (whether b is
// valid), so that a case cannot pass by both being wrong alike.
func checkVerdict(t *testing.T, b []byte, want bool, what string) {
	t.Helper()
	_, err := wire.Decode(b)
	checkValidate(t, b, err)
	if got := wire.Validate(b); (got == nil) != want {
		t.Fatalf("%s: Validate = %v, want valid %v\n%x", what, got, want, b)
	}
}

// Struct entries of every length around the edges of the check's fast path
// (one-byte lengths: an entry of at most 127 bytes), with a bad byte in the
// key or the value at every place, alone and between good entries, so that
// faults sit where the fast path hands over to the general one.
func TestValidateEntryLengths(t *testing.T) {
	t.Parallel()
	good := wireEntry("ok", wireString("fine"))
	long := wireEntry("long", wireString(strings.Repeat("l", 300)))
	for _, k := range []int{0, 1, 7, 8, 9, 16, 32, 60} {
		// Value lengths that put the entry (k+n+6 bytes) at 126, 127, 128
		// and 129 bytes, and short ones.
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 120 - k, 121 - k, 122 - k, 123 - k, 130} {
			if n < 0 {
				continue
			}
			key, val := strings.Repeat("k", k), strings.Repeat("v", n)
			e := wireEntry(key, wireString(val))
			for _, around := range [][2][]byte{{nil, nil}, {good, good}, {long, good}, {good, long}} {
				b := bytes.Join([][]byte{around[0], e, around[1]}, nil)
				checkVerdict(t, b, true, "valid")
				// A bad byte at every place of the key and of the value.
				at := len(around[0]) + bytes.Index(e, []byte(key+"\x12"))
				for p := range k {
					bad := bytes.Clone(b)
					bad[at+p] = 0xff
					checkVerdict(t, bad, false, "bad key byte")
				}
				at = len(around[0]) + len(e) - n
				for p := range n {
					bad := bytes.Clone(b)
					bad[at+p] = 0x80
					checkVerdict(t, bad, false, "bad value byte")
				}
			}
		}
	}
}

// Entries that look like the usual one until their last byte: each must
// leave the fast path for the general one, which judges them as Decode
// does.
func TestValidateUnusualEntries(t *testing.T) {
	t.Parallel()
	key := lenField(nil, 1, []byte("key"))
	str := wireString("value")
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)
	tests := []struct {
		name  string
		entry []byte // the entry's contents
		valid bool
	}{
		{"usual", append(bytes.Clone(key), lenField(nil, 2, str)...), true},
		{"value first", append(lenField(nil, 2, str), key...), true},
		{"no key", lenField(nil, 2, str), true},
		{"no value", bytes.Clone(key), false},
		{"empty value", lenField(bytes.Clone(key), 2, nil), false},
		{"field after the value", append(lenField(bytes.Clone(key), 2, str), unknown...), true},
		{"field before the key", append(bytes.Clone(unknown), lenField(bytes.Clone(key), 2, str)...), true},
		{"value longer than the entry", append(bytes.Clone(key), 0x12, byte(len(str)+1)), false},
		{"bad key after the value", append(lenField(bytes.Clone(key), 2, str), 0x0a, 0x01, 0xff), false},
		{"key after the value", append(lenField(bytes.Clone(key), 2, str), 0x0a, 0x01, 'k'), true},
		{"stray byte after the value", append(lenField(bytes.Clone(key), 2, str), 0x65), false},
		{"key longer than the entry", []byte{0x0a, 0x7f, 'k'}, false},
		{"key of a two-byte length", append(protowire.AppendBytes([]byte{0x0a}, bytes.Repeat([]byte("k"), 130)), lenField(nil, 2, str)...), true},
		{"key of a padded length", append([]byte{0x0a, 0x83, 0x00, 'k', 'e', 'y'}, lenField(nil, 2, str)...), true},
		{"value of a padded length", append(bytes.Clone(key), append([]byte{0x12, 0x87, 0x00}, str...)...), true},
		{"string of a padded length", lenField(bytes.Clone(key), 2, append([]byte{0x1a, 0x85, 0x00}, "value"...)), true},
		{"string with a field after it", lenField(bytes.Clone(key), 2, append(bytes.Clone(str), unknown...)), true},
		{"two kinds", lenField(bytes.Clone(key), 2, append(wireNumber(), str...)), true},
		{"number cut short", lenField(bytes.Clone(key), 2, wireNumber()[:8]), false},
		{"bool of a long varint", lenField(bytes.Clone(key), 2, []byte{0x20, 0x81, 0x00}), true},
		{"bool of a bad varint", lenField(bytes.Clone(key), 2, []byte{0x20, 0x81}), false},
		{"null", lenField(bytes.Clone(key), 2, []byte{0x08, 0x00}), true},
		{"key tag of another type", append([]byte{0x0d, 1, 2, 3, 4}, lenField(nil, 2, str)...), true},
		{"value tag of another type", append(bytes.Clone(key), 0x15, 1, 2, 3, 4), false},
	}
	for _, tt := range tests {
		e := lenField(nil, 1, tt.entry)
		for _, b := range [][]byte{e, append(wireEntry("a", wireNumber()), e...), append(bytes.Clone(e), wireEntry("z", wireBool())...)} {
			// Decode judges the few the table cannot (merged kinds).
			_, err := wire.Decode(b)
			checkValidate(t, b, err)
			verr := wire.Validate(b)
			if (err == nil) != tt.valid || verr != nil && tt.valid && !errors.Is(verr, wire.ErrMerged) {
				t.Errorf("%s: Validate %v, Decode %v, want valid %v\n%x", tt.name, verr, err, tt.valid, b)
			}
		}
		// The same entry cut short anywhere is judged as Decode judges it.
		for n := range len(e) {
			_, err := wire.Decode(e[:n])
			checkValidate(t, e[:n], err)
		}
	}
}

// Values that look like the usual scalars until their last byte, as entry
// values (short and long entries take different paths) and list elements,
// whole and cut short anywhere.
func TestValidateUnusualValues(t *testing.T) {
	t.Parallel()
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)
	tests := []struct {
		name  string
		value []byte
		valid bool
	}{
		{"number", wireNumber(), true},
		{"number cut short", wireNumber()[:8], false},
		{"number with a field after it", append(wireNumber(), unknown...), true},
		{"number with a stray byte after it", append(wireNumber(), 0x65), false},
		{"bool with a stray byte after it", append(wireBool(), 0x65), false},
		{"bool", wireBool(), true},
		{"bool of a long varint", []byte{0x20, 0x81, 0x00}, true},
		{"bool of an unended varint", []byte{0x20, 0x81}, false},
		{"null", []byte{0x08, 0x00}, true},
		{"null of an unended varint", []byte{0x08, 0xff}, false},
		{"string", wireString("short"), true},
		{"empty string", wireString(""), true},
		{"string of a padded length", append([]byte{0x1a, 0x85, 0x00}, "short"...), true},
		{"string longer than the value", []byte{0x1a, 0x06, 'a', 'b', 'c', 'd', 'e'}, false},
		{"string shorter than the value", []byte{0x1a, 0x04, 'a', 'b', 'c', 'd', 'e'}, false},
		{"string with a field after it", append(wireString("short"), unknown...), true},
		{"string, bad byte", wireString("sh\xffrt"), false},
		{"long string", wireString(strings.Repeat("s", 200)), true},
		{"long string, bad byte", wireString(strings.Repeat("s", 199) + "\xc3"), false},
		{"long string longer than the value", wireString(strings.Repeat("s", 200))[:201], false},
		{"string of a three-byte length", append([]byte{0x1a, 0x85, 0x80, 0x00}, "short"...), true},
		{"string of an unended length", []byte{0x1a, 0x85, 0x80}, false},
		// A two-byte length whose first byte, read alone, is the
		// value's size less the tag and that byte.
		{"string of a two-byte length, cut short", append([]byte{0x1a, 0x94, 0x01}, strings.Repeat("s", 147)...), false},
		{"long struct", wireStruct(bytes.Repeat(wireEntry("a", wireNumber()), 10)), true},
		{"long list", wireList(bytes.Repeat(lenField(nil, 1, wireNumber()), 20)), true},
		{"two kinds", append(wireNumber(), wireString("x")...), true},
		{"no kind", nil, false},
		{"only an unknown field", unknown, false},
		{"empty struct", wireStruct(nil), true},
		{"empty list", wireList(nil), true},
		{"struct cut short", wireStruct(wireEntry("a", wireNumber()))[:10], false},
	}
	longKey := strings.Repeat("k", 130)
	for _, tt := range tests {
		for _, b := range [][]byte{
			wireEntry("k", tt.value),
			append(wireEntry("k", tt.value), wireEntry("z", wireNumber())...),
			wireEntry(longKey, tt.value),
			wireEntry("k", wireList(lenField(nil, 1, tt.value))),
			wireEntry("k", wireList(append(lenField(nil, 1, tt.value), lenField(nil, 1, wireBool())...))),
		} {
			_, err := wire.Decode(b)
			checkValidate(t, b, err)
			verr := wire.Validate(b)
			if (err == nil) != tt.valid || verr != nil && tt.valid && !errors.Is(verr, wire.ErrMerged) {
				t.Errorf("%s: Validate %v, Decode %v, want valid %v\n%x", tt.name, verr, err, tt.valid, b)
			}
			for n := range len(b) {
				_, err := wire.Decode(b[:n])
				checkValidate(t, b[:n], err)
			}
		}
		// A list cut short in its last element, inside a longer payload.
		l := wireList(lenField(nil, 1, tt.value))
		l[1]--
		b := append(wireEntry("k", l[:len(l)-1]), wireEntry("z", wireNumber())...)
		_, err := wire.Decode(b)
		checkValidate(t, b, err)
	}
}

// Multi-byte characters, good and bad, at every offset of keys and strings
// of lengths on both sides of the 8-byte blocks the check reads at once.
func TestValidateUTF8AcrossBlocks(t *testing.T) {
	t.Parallel()
	seqs := []string{
		"é", "€", "𝄞", // good: 2, 3 and 4 bytes
		"\xc3", "\xe2\x82", "\xf0\x9d\x84", // cut short
		"\x80", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff", // never valid
	}
	next := wireEntry("next", wireString("after the string"))
	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 140, 301} {
		for _, seq := range seqs {
			for p := 0; p+len(seq) <= n; p++ {
				s := strings.Repeat("a", p) + seq + strings.Repeat("b", n-p-len(seq))
				want := utf8.ValidString(s)
				checkVerdict(t, wireEntry(s, wireString("v")), want, "key "+s)
				checkVerdict(t, append(wireEntry("k", wireString(s)), next...), want, "string "+s)
				checkVerdict(t, append(wireEntry("k", wireList(lenField(nil, 1, wireString(s)))), next...), want, "list "+s)
				// At the very end of the payload, where a block read would
				// go past it.
				checkVerdict(t, wireEntry("k", wireString(s)), want, "last "+s)
			}
		}
	}
}

// nestTo returns a Struct whose innermost Struct, d messages deep, holds
// entries of every usual scalar kind, wrapping it in lists (two messages
// a level) and structs (three) to reach every depth.
func nestTo(d int) []byte {
	inner := bytes.Join([][]byte{wireEntry("n", wireNumber()), wireEntry("s", wireString("x")),
		wireEntry("b", wireBool())}, nil)
	// The innermost struct is a Value's at depth d-1, which is the top
	// struct's entry's value (depth 3) wrapped.
	v := wireStruct(inner)
	for depth := d - 1; depth > 3; {
		if (depth-3)%3 == 0 {
			v = wireStruct(wireEntry("c", v)) // a value three messages up
			depth -= 3
		} else {
			v = wireList(lenField(nil, 1, v)) // a value two messages up
			depth -= 2
		}
	}
	return wireEntry("top", v)
}

// The fast path checks scalars without the calls that count depth: at the
// limit it must refuse exactly what the decoder refuses.
func TestValidateStructDepthLimit(t *testing.T) {
	t.Parallel()
	accepted, refused := 0, 0
	for d := wire.MaxDepth - 5; d <= wire.MaxDepth+1; d++ {
		b := nestTo(d)
		// Entries of a struct at depth d are at d+1, their values at d+2.
		checkVerdict(t, b, d+2 <= wire.MaxDepth, "depth")
		if d+2 <= wire.MaxDepth {
			accepted++
		} else {
			refused++
		}
	}
	if accepted == 0 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: the depths miss the limit", accepted, refused)
	}
}

// A signature key is recognised whichever path its entry takes, and the
// signature object is judged by its other fields wherever they are.
func TestValidateSignatureEntries(t *testing.T) {
	t.Parallel()
	sig := wireString(resource.SecretSig)
	sigFirst := lenField(lenField(nil, 2, sig), 1, []byte(resource.SigKey)) // value, then key: the general path
	value := wireEntry("value", wireString("secret"))
	longValue := wireEntry("value", wireString(strings.Repeat("s", 200)))
	output := wireEntry(resource.SigKey, wireString(resource.OutputValueSig))
	tests := []struct {
		name   string
		fields [][]byte
		err    string
	}{
		{"secret", [][]byte{wireEntry(resource.SigKey, sig), value}, ""},
		{"secret, value first", [][]byte{value, wireEntry(resource.SigKey, sig)}, ""},
		{"secret, long value", [][]byte{wireEntry(resource.SigKey, sig), longValue}, ""},
		{"secret, signature entry unusual", [][]byte{lenField(nil, 1, sigFirst), value}, ""},
		{"secret without value", [][]byte{wireEntry(resource.SigKey, sig)}, `malformed RPC secret: missing value for "p"`},
		{"secret without value, signature entry unusual", [][]byte{lenField(nil, 1, sigFirst)},
			`malformed RPC secret: missing value for "p"`},
		{"long signature", [][]byte{wireEntry(resource.SigKey, wireString(strings.Repeat("x", 200)))},
			"unrecognized signature '" + strings.Repeat("x", 200) + `' in property map for "p"`},
		{"signature repeated, the last wins", [][]byte{wireEntry(resource.SigKey, wireString("nope")),
			wireEntry(resource.SigKey, sig), value}, ""},
		{"value repeated, the last wins", [][]byte{wireEntry(resource.SigKey, sig), value, wireEntry("value", wireNumber())}, ""},
		{"output value", [][]byte{output, wireEntry("secret", wireBool()),
			wireEntry("dependencies", wireList(lenField(nil, 1, wireString("urn:a"))))}, ""},
		{"output value, secret a number", [][]byte{output, wireEntry("secret", wireNumber())},
			`malformed output value for "p": secret not a bool`},
		{"output value, long dependency", [][]byte{output,
			wireEntry("dependencies", wireList(lenField(nil, 1, wireString(strings.Repeat("u", 200)))))}, ""},
		{"output value, dependency a number", [][]byte{output,
			wireEntry("dependencies", wireList(lenField(nil, 1, wireNumber())))},
			`malformed output value for "p": element in dependencies not a string`},
		{"key near the signature key", [][]byte{wireEntry(resource.SigKey[:31]+"e", wireString("x"))}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := bytes.Join(tt.fields, nil)
			for _, b := range [][]byte{
				wireEntry("p", wireStruct(obj)),                             // a property
				wireEntry("p", wireList(lenField(nil, 1, wireStruct(obj)))), // in a list
				wireEntry("p", wireStruct(wireEntry("q", wireString("x")))), // (control: no signature)
				append(wireEntry("p", wireStruct(obj)), wireEntry("z", wireString(strings.Repeat("z", 200)))...),
			} {
				_, err := wire.Decode(b)
				checkValidate(t, b, err)
			}
			err := wire.Validate(wireEntry("p", wireStruct(obj)))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Fatalf("Validate = %q, want %q", got, tt.err)
			}
		})
	}
	// At the top level a signature key is only a key.
	checkVerdict(t, wireEntry(resource.SigKey, sig), true, "top level")
}
