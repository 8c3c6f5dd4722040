package wireprops

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/encoding/protowire"
)

// Validate reports the error [Decode] would report for b, without building
// the property map: it walks the bytes in the decoder's order and checks
// everything the decoder checks (well-formed fields, valid UTF-8 in keys and
// strings, every entry with a value and every value with a kind, at most
// [MaxDepth] messages deep, and well-formed secrets and output values)
// without allocating. The rare signature objects (byte strings, assets,
// archives, resource references and unknown signatures) are decoded to
// judge them.
//
// It returns [ErrMerged] for an entry with several values or a value with
// several kinds, which the protobuf runtime merges and which only Decode
// judges; the engine never sends those. It exists so that properties that
// may be sent back as received can be checked for a fraction of a
// decode's cost, and a later Decode of them cannot fail.
func Validate(b []byte) error {
	// A view of b as a string, never retained: key checks and error
	// messages read it without copying.
	v := validator{d: decoder{s: unsafe.String(unsafe.SliceData(b), len(b)), b: b}}
	_, err := v.structAt(0, len(b), 1)
	return err
}

// validator walks a payload in the order the decoder does, so that the two
// report the same error for the same bytes.
type validator struct{ d decoder }

// shallow checks that b[i:end] is a sequence of well-formed fields.
func (v *validator) shallow(i, end int) error {
	for i < end {
		num, typ, p, err := v.d.tag(i, end)
		if err != nil {
			return err
		}
		if i, err = v.d.skip(num, typ, p, end); err != nil {
			return err
		}
	}
	return nil
}

// repeated calls each for every length-prefixed field numbered num in the
// message at b[i:end], whose fields shallow has checked.
func (v *validator) repeated(num protowire.Number, i, end int, each func(a, b int) error) error {
	for i < end {
		n, typ, p, err := v.d.tag(i, end)
		if err != nil {
			return err
		}
		if n != num || typ != protowire.BytesType {
			if i, err = v.d.skip(n, typ, p, end); err != nil {
				return err
			}
			continue
		}
		a, b, err := v.d.lengthPrefixed(p, end)
		if err != nil {
			return err
		}
		if err := each(a, b); err != nil {
			return err
		}
		i = b
	}
	return nil
}

// special holds where the fields a signature object is judged by are: the
// value ranges of the last entries (the last one wins, as in a map) keyed
// by the signature key and by the three field names the checks read.
type special struct {
	sig, value, secret, deps [2]int
	has                      [4]bool
}

func (v *validator) structAt(i, end, depth int) (special, error) {
	var sp special
	if depth > MaxDepth {
		return sp, ErrDepth
	}
	if err := v.shallow(i, end); err != nil {
		return sp, err
	}
	err := v.repeated(structFields, i, end, func(a, b int) error {
		key, vi, ve, err := v.entry(a, b, depth+1)
		if err != nil {
			return err
		}
		var at *[2]int
		var n int
		switch key {
		case resource.SigKey:
			at, n = &sp.sig, 0
		case "value":
			at, n = &sp.value, 1
		case "secret":
			at, n = &sp.secret, 2
		case "dependencies":
			at, n = &sp.deps, 3
		default:
			return nil
		}
		*at, sp.has[n] = [2]int{vi, ve}, true
		return nil
	})
	return sp, err
}

func (v *validator) entry(i, end, depth int) (string, int, int, error) {
	if depth > MaxDepth {
		return "", 0, 0, ErrDepth
	}
	var key string
	vi, ve, haveValue := 0, 0, false
	for i < end {
		num, typ, p, err := v.d.tag(i, end)
		if err != nil {
			return "", 0, 0, err
		}
		switch {
		case num == entryKey && typ == protowire.BytesType:
			ki, ke, err := v.d.lengthPrefixed(p, end)
			if err != nil {
				return "", 0, 0, err
			}
			key = v.d.s[ki:ke]
			if !utf8.ValidString(key) {
				return "", 0, 0, errUTF8
			}
			i = ke
		case num == entryValue && typ == protowire.BytesType:
			if haveValue {
				return "", 0, 0, ErrMerged
			}
			if vi, ve, err = v.d.lengthPrefixed(p, end); err != nil {
				return "", 0, 0, err
			}
			haveValue, i = true, ve
		default:
			if i, err = v.d.skip(num, typ, p, end); err != nil {
				return "", 0, 0, err
			}
		}
	}
	if !haveValue {
		return "", 0, 0, fmt.Errorf("property %q has no value", key)
	}
	return key, vi, ve, v.value(key, vi, ve, depth+1)
}

func (v *validator) value(key string, i, end, depth int) error {
	if depth > MaxDepth {
		return ErrDepth
	}
	var kind protowire.Number
	si, se, have, start := 0, 0, false, i
	for i < end {
		n, typ, p, err := v.d.tag(i, end)
		if err != nil {
			return err
		}
		isKind := (n == valueNull || n == valueBool) && typ == protowire.VarintType ||
			n == valueNumber && typ == protowire.Fixed64Type ||
			(n == valueString || n == valueStruct || n == valueList) && typ == protowire.BytesType
		if have && isKind {
			return ErrMerged
		}
		switch {
		case isKind && typ == protowire.BytesType:
			if si, se, err = v.d.lengthPrefixed(p, end); err != nil {
				return err
			}
			kind, have, i = n, true, se
		case isKind && typ == protowire.VarintType:
			if _, i, err = v.d.varint(p, end); err != nil {
				return err
			}
			kind, have = n, true
		case isKind:
			_, l := protowire.ConsumeFixed64(v.d.b[p:end])
			if l < 0 {
				return errInvalid
			}
			kind, have, i = n, true, p+l
		default:
			if i, err = v.d.skip(n, typ, p, end); err != nil {
				return err
			}
		}
	}
	if !have {
		return fmt.Errorf("property %q has a value of no kind", key)
	}
	switch kind {
	case valueString:
		if !utf8.ValidString(v.d.s[si:se]) {
			return errUTF8
		}
	case valueStruct:
		sp, err := v.structAt(si, se, depth+1)
		if err != nil || !sp.has[0] {
			return err
		}
		return v.special(key, sp, start, end, depth)
	case valueList:
		return v.list(key, si, se, depth+1)
	}
	return nil
}

func (v *validator) list(key string, i, end, depth int) error {
	if depth > MaxDepth {
		return ErrDepth
	}
	if err := v.shallow(i, end); err != nil {
		return err
	}
	return v.repeated(listValues, i, end, func(a, b int) error { return v.value(key, a, b, depth+1) })
}

// special checks a signature object the way the decoder's special does:
// secrets and output values here, without allocating; the rarer kinds
// (byte strings, assets, archives, resource references, unknown
// signatures) by decoding the value, so that the error is the decoder's.
func (v *validator) special(key string, sp special, i, end, depth int) error {
	var name string
	if k, a, b := v.kindOf(sp.sig); k == valueString && !isUnknown(v.d.s[a:b]) {
		name = v.d.s[a:b]
	}
	switch name {
	case resource.SecretSig:
		if !sp.has[1] {
			return fmt.Errorf("malformed RPC secret: missing value for %q", key)
		}
		return nil
	case resource.OutputValueSig:
		if k, _, _ := v.kindOf(sp.secret); sp.has[2] && k != valueBool {
			return fmt.Errorf("malformed output value for %q: secret not a bool", key)
		}
		if !sp.has[3] {
			return nil
		}
		k, a, b := v.kindOf(sp.deps)
		if k != valueList {
			return fmt.Errorf("malformed output value for %q: dependencies not an array", key)
		}
		return v.repeated(listValues, a, b, func(ea, eb int) error {
			if k, sa, sb := v.kindOf([2]int{ea, eb}); k != valueString || isUnknown(v.d.s[sa:sb]) {
				return fmt.Errorf("malformed output value for %q: element in dependencies not a string", key)
			}
			return nil
		})
	}
	d := newDecoder(v.d.b[i:end])
	_, err := d.value(key, 0, len(d.s), depth)
	return err
}

// kindOf returns the kind of the validated Value at b[r[0]:r[1]] and, for a
// string, struct or list, the range of its contents.
func (v *validator) kindOf(r [2]int) (protowire.Number, int, int) {
	for i, end := r[0], r[1]; i < end; {
		n, typ, p, err := v.d.tag(i, end)
		if err != nil {
			return 0, 0, 0
		}
		isKind := (n == valueNull || n == valueBool) && typ == protowire.VarintType ||
			n == valueNumber && typ == protowire.Fixed64Type ||
			(n == valueString || n == valueStruct || n == valueList) && typ == protowire.BytesType
		if isKind && typ == protowire.BytesType {
			a, b, _ := v.d.lengthPrefixed(p, end)
			return n, a, b
		}
		if isKind {
			return n, 0, 0
		}
		if i, err = v.d.skip(n, typ, p, end); err != nil {
			return 0, 0, 0
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

var errUTF8 = errors.New("proto: string field contains invalid UTF-8")

// ErrMerged is returned by [Validate] for encodings that only a full decode
// can judge: an entry with several values, or a value with several kinds.
var ErrMerged = errors.New("wireprops: repeated fields need a full decode")
