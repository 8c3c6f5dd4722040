package wire

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Writer builds a protobuf message back to front: a field's length is known
// when its contents are written, so nested messages need no size pass and
// encoding stays linear at any depth. Its zero value is ready to use.
type Writer struct {
	buf []byte // the message is buf[off:]
	off int
}

// NewWriter returns a writer with room for about n bytes.
func NewWriter(n int) *Writer {
	b := make([]byte, n)
	return &Writer{buf: b, off: n}
}

// Len is the number of bytes written so far.
func (w *Writer) Len() int { return len(w.buf) - w.off }

// Bytes returns the message written so far.
func (w *Writer) Bytes() []byte { return w.buf[w.off:] }

func (w *Writer) reserve(n int) {
	if w.off >= n {
		return
	}
	used := len(w.buf) - w.off
	size := max(2*len(w.buf), used+n, 64)
	nb := make([]byte, size)
	copy(nb[size-used:], w.buf[w.off:])
	w.buf, w.off = nb, size-used
}

func (w *Writer) prependString(s string) {
	w.reserve(len(s))
	w.off -= len(s)
	copy(w.buf[w.off:], s)
}

// PrependBytes writes b before what is written.
func (w *Writer) PrependBytes(b []byte) {
	w.reserve(len(b))
	w.off -= len(b)
	copy(w.buf[w.off:], b)
}

// PrependVarint writes v before what is written.
func (w *Writer) PrependVarint(v uint64) {
	n := protowire.SizeVarint(v)
	w.reserve(n)
	w.off -= n
	i := w.off
	for v >= 0x80 {
		w.buf[i] = byte(v) | 0x80
		v >>= 7
		i++
	}
	w.buf[i] = byte(v)
}

// PrependTag writes a field tag before what is written.
func (w *Writer) PrependTag(num protowire.Number, typ protowire.Type) {
	w.PrependVarint(protowire.EncodeTag(num, typ))
}

// PrependMessageField turns everything written since mark (a Len) into
// field num of type bytes.
func (w *Writer) PrependMessageField(num protowire.Number, mark int) {
	w.PrependVarint(uint64(w.Len() - mark))
	w.PrependTag(num, protowire.BytesType)
}

func (w *Writer) stringField(num protowire.Number, s string) {
	w.prependString(s)
	w.PrependVarint(uint64(len(s)))
	w.PrependTag(num, protowire.BytesType)
}

// encoder writes property values as google.protobuf.Value messages.
type encoder struct {
	w         *Writer
	keepBytes bool
}

// Encode appends the wire form of m as a google.protobuf.Struct (its
// contents, without a tag or length) in front of what w holds. Strings that
// are not valid UTF-8 become byte-string envelopes if keepBytes is set and
// are an error otherwise.
func Encode(w *Writer, m resource.PropertyMap, keepBytes bool) error {
	e := encoder{w: w, keepBytes: keepBytes}
	return e.object(m)
}

func (e *encoder) object(m resource.PropertyMap) error {
	for k, v := range m {
		mark := e.w.Len()
		vmark := mark
		if err := e.value(string(k), v); err != nil {
			return err
		}
		e.w.PrependMessageField(entryValue, vmark)
		if err := e.key(string(k)); err != nil {
			return err
		}
		e.w.PrependMessageField(structFields, mark)
	}
	return nil
}

func (e *encoder) key(k string) error {
	if !utf8.ValidString(k) {
		return fmt.Errorf("property key %q is not valid UTF-8", k)
	}
	e.w.stringField(entryKey, k)
	return nil
}

// entry writes one map entry of a struct whose value is written by v.
func (e *encoder) stringEntry(k, s string) {
	mark := e.w.Len()
	e.w.stringField(valueString, s)
	e.w.PrependMessageField(entryValue, mark)
	e.w.stringField(entryKey, k)
	e.w.PrependMessageField(structFields, mark)
}

// valueEntry writes the entry k of an envelope (a secret's, an output's)
// whose value v belongs to the property named prop.
func (e *encoder) valueEntry(k string, v resource.PropertyValue, prop string) error {
	mark := e.w.Len()
	if err := e.value(prop, v); err != nil {
		return err
	}
	e.w.PrependMessageField(entryValue, mark)
	e.w.stringField(entryKey, k)
	e.w.PrependMessageField(structFields, mark)
	return nil
}

// value writes the contents of a google.protobuf.Value for v.
func (e *encoder) value(key string, v resource.PropertyValue) error {
	w := e.w
	switch x := v.V.(type) {
	case nil:
		w.PrependVarint(0)
		w.PrependTag(valueNull, protowire.VarintType)
	case bool:
		b := uint64(0)
		if x {
			b = 1
		}
		w.PrependVarint(b)
		w.PrependTag(valueBool, protowire.VarintType)
	case float64:
		w.reserve(8)
		w.off -= 8
		bits := math.Float64bits(x)
		for k := range 8 {
			w.buf[w.off+k] = byte(bits >> (8 * k))
		}
		w.PrependTag(valueNumber, protowire.Fixed64Type)
	case string:
		if !utf8.ValidString(x) {
			if !e.keepBytes {
				return fmt.Errorf(
					"the value of property %q is a string that contains non-UTF8 bytes, which the receiver does not support", key)
			}
			mark := w.Len()
			e.stringEntry("value", base64.StdEncoding.EncodeToString([]byte(x)))
			e.stringEntry(resource.SigKey, resource.ByteStringSig)
			w.PrependMessageField(valueStruct, mark)
			return nil
		}
		w.stringField(valueString, x)
	case []resource.PropertyValue:
		mark := w.Len()
		for i := len(x) - 1; i >= 0; i-- {
			emark := w.Len()
			if err := e.value(key, x[i]); err != nil {
				return err
			}
			w.PrependMessageField(listValues, emark)
		}
		w.PrependMessageField(valueList, mark)
	case resource.PropertyMap:
		mark := w.Len()
		if err := e.object(x); err != nil {
			return err
		}
		w.PrependMessageField(valueStruct, mark)
	case *resource.Secret:
		mark := w.Len()
		if err := e.valueEntry("value", x.Element, key); err != nil {
			return err
		}
		e.stringEntry(resource.SigKey, resource.SecretSig)
		w.PrependMessageField(valueStruct, mark)
	case resource.Computed:
		s, ok := unknownSentinel(x.Element)
		if !ok {
			w.PrependVarint(0)
			w.PrependTag(valueNull, protowire.VarintType)
			return nil
		}
		w.stringField(valueString, s)
	case resource.Output:
		mark := w.Len()
		if len(x.Dependencies) > 0 {
			deps := make([]resource.PropertyValue, len(x.Dependencies))
			for i, d := range x.Dependencies {
				deps[i] = resource.NewProperty(string(d))
			}
			if err := e.valueEntry("dependencies", resource.NewProperty(deps), key); err != nil {
				return err
			}
		}
		if x.Secret {
			if err := e.valueEntry("secret", resource.NewProperty(true), key); err != nil {
				return err
			}
		}
		if x.Known {
			if err := e.valueEntry("value", x.Element, key); err != nil {
				return err
			}
		}
		e.stringEntry(resource.SigKey, resource.OutputValueSig)
		w.PrependMessageField(valueStruct, mark)
	case *resource.Asset, *resource.Archive, resource.ResourceReference:
		// Rare, so let the SDK encode this one value.
		if err := checkValue(key, v); err != nil {
			return err
		}
		opts := sdkOptions
		opts.KeepByteString = e.keepBytes
		pb, err := plugin.MarshalPropertyValue(resource.PropertyKey(key), v, opts)
		if err != nil {
			return err
		}
		if pb == nil {
			return errors.New("unexpected property value")
		}
		b, err := proto.Marshal(pb)
		if err != nil {
			return err
		}
		w.PrependBytes(b)
	default:
		return &InvalidValueError{Key: key, Value: v.V}
	}
	return nil
}

// unknownSentinel returns the sentinel string for an unknown value whose
// eventual value looks like elem, as the SDK's marshalling chooses it.
func unknownSentinel(elem resource.PropertyValue) (string, bool) {
	switch x := elem.V.(type) {
	case bool:
		return plugin.UnknownBoolValue, true
	case float64:
		return plugin.UnknownNumberValue, true
	case string:
		return plugin.UnknownStringValue, true
	case []resource.PropertyValue:
		return plugin.UnknownArrayValue, true
	case resource.PropertyMap:
		return plugin.UnknownObjectValue, true
	case resource.Computed:
		return unknownSentinel(x.Element)
	case resource.Output:
		return unknownSentinel(x.Element)
	}
	if elem.IsAsset() {
		return plugin.UnknownAssetValue, true
	}
	if elem.IsArchive() {
		return plugin.UnknownArchiveValue, true
	}
	return "", false
}
