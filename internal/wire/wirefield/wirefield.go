// Package wirefield reads and writes the fields of option messages straight
// from and to the wire, as the protobuf runtime does, for the option codecs
// of transforms and invoketransforms.
package wirefield

import (
	"errors"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of a map entry.
const (
	entryKey   = 1
	entryValue = 2
)

// ErrUTF8 is why options whose strings are not valid UTF-8 do not encode:
// the messages are proto3, whose strings must be UTF-8. The wording is the
// protobuf runtime's.
var ErrUTF8 = errors.New("string field contains invalid UTF-8")

// View returns b as a string without copying it; b must never be written
// again.
func View(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// ConsumeTag reads a field's tag as the protobuf runtime does, refusing
// field numbers outside 1..2^29-1 (protowire.ConsumeTag lets larger ones
// through).
func ConsumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && num > protowire.MaxValidNumber {
		return 0, 0, -1
	}
	return num, typ, n
}

// ConsumeString reads a length-delimited UTF-8 string, a view of b.
func ConsumeString(b []byte) (string, int) {
	v, n := protowire.ConsumeBytes(b)
	if n < 0 || !utf8.Valid(v) {
		return "", -1
	}
	return View(v), n
}

// SizeString is the size of a proto3 string field numbered 1-15 holding s:
// nothing for "", which is not sent.
func SizeString(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

// AppendString appends a proto3 string field, leaving out "".
func AppendString[S ~string](b []byte, num protowire.Number, s S) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, string(s))
}

// SizeEntry is the size of a map entry's message of key k and value v
// numbered 1-15, without its own tag and length.
func SizeEntry(k string, v []byte) int {
	return 1 + protowire.SizeBytes(len(k)) + 1 + protowire.SizeBytes(len(v))
}

// AppendEntry appends a map entry field numbered num, of key k and value v.
func AppendEntry(b []byte, num protowire.Number, k string, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(SizeEntry(k, v)))
	b = protowire.AppendTag(b, entryKey, protowire.BytesType)
	b = protowire.AppendString(b, k)
	b = protowire.AppendTag(b, entryValue, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
