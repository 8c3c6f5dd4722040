package wire

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
)

// Layout records where a transform request's property map and options
// fields lie in its payload, so that a response that sends both back as
// received can be made from the request's own bytes instead of a copy of
// them (see [Layout.Answer]).
//
// Both requests put the property map and the options in fields of their own
// (TransformRequest 5 and 6, TransformInvokeRequest 2 and 3), and the
// engine encodes them in that order, one after the other; both responses
// carry the same two values in fields 1 and 2. Since a field's encoding is
// its tag followed by its length and bytes, rewriting the two one-byte tags
// turns the request's bytes from the property map's tag to the end of the
// options into the response.
type Layout struct {
	propsTag, propsEnd int // the property map field: its tag's offset, its end
	optsTag, optsEnd   int // the options field: its tag's offset, its end
	optsVal            int // where the options' bytes start
	props, opts        int // how many times each field occurred
}

// Note records a field of the request: its number, the offset of its tag,
// the offset of its value's bytes and the offset of its end. propsNum and
// optsNum are the request's field numbers of the property map and options.
func (l *Layout) Note(num, propsNum, optsNum protowire.Number, tag, val, end int) {
	switch num {
	case propsNum:
		l.propsTag, l.propsEnd = tag, end
		l.props++
	case optsNum:
		l.optsTag, l.optsVal, l.optsEnd = tag, val, end
		l.opts++
	}
}

// Answer returns the response that sends the request's property map as
// received and, if sendOpts is set, the options encoded as opts, made in
// place in payload, the request's bytes. It returns false, having written
// nothing, unless the request held the property map once, and (if sendOpts)
// the options once right after it, encoded byte for byte as opts, each field
// behind a one-byte tag.
//
// When it returns true it has rewritten the one or two tag bytes, so payload
// must belong to the call and nothing may read it as the request again.
// Strings that share payload are not touched: they lie inside values, and
// the tags lie outside every value.
func (l *Layout) Answer(payload []byte, propsNum, optsNum protowire.Number, sendOpts bool, opts []byte) ([]byte, bool) {
	if l.props != 1 || payload[l.propsTag] != tagByte(propsNum) {
		return nil, false
	}
	if !sendOpts {
		payload[l.propsTag] = tagByte(responseProps)
		return payload[l.propsTag:l.propsEnd], true
	}
	if l.opts != 1 || l.optsTag != l.propsEnd || payload[l.optsTag] != tagByte(optsNum) ||
		!bytes.Equal(payload[l.optsVal:l.optsEnd], opts) {
		return nil, false
	}
	payload[l.propsTag] = tagByte(responseProps)
	payload[l.optsTag] = tagByte(responseOptions)
	return payload[l.propsTag:l.optsEnd], true
}

// tagByte is the one-byte tag of a length-delimited field numbered 1-15.
func tagByte(num protowire.Number) byte {
	return byte(protowire.EncodeTag(num, protowire.BytesType))
}
