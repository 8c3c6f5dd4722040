package wire

import (
	"bytes"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Field is a property map field of a request: a google.protobuf.Struct
// field, which [DecodeRequest] checks and keeps encoded in Into instead of
// decoding.
type Field struct {
	Num  protowire.Number
	Into *Lazy
}

// Message is a callback request of any kind as it arrived. DecodeRequest fills in
// the request's generated message, except its property maps, which stay
// encoded in their Lazy until read; EncodeReply answers it.
type Message struct {
	payload []byte
	owned   bool // payload belongs to the call and is never written again

	// Where the first Field lay, if it occurred exactly once with a
	// one-byte tag: a response that sends it back unread may be made in
	// the payload itself (see EncodeReply).
	first              *Lazy
	firstTag, firstEnd int
}

// DecodeRequest decodes payload, a serialized request, into pb, except for the
// given fields: those are property maps, which are checked now (so a
// request whose maps would not decode is refused before any function
// runs) and decoded when read. As protobuf does, a field that occurs more
// than once is merged, and a field of the wrong wire type is an unknown
// field of pb. With owned, payload belongs to the call and is never written
// again, so decoded strings may share it.
func DecodeRequest(payload []byte, owned bool, pb proto.Message, fields ...Field) (*Message, error) {
	msg := &Message{payload: payload, owned: owned}
	var maps [4][]byte // up to four maps per request, as ResourceHookRequest has
	var count [4]int
	if len(fields) > len(maps) {
		panic("wire: more property map fields than a request has")
	}
	rest := 0 // where the run of other fields that ends at off began
	for off := 0; off < len(payload); {
		num, typ, n := protowire.ConsumeTag(payload[off:])
		if n < 0 {
			return msg, malformed(pb)
		}
		m := protowire.ConsumeFieldValue(num, typ, payload[off+n:])
		if m < 0 {
			return msg, malformed(pb)
		}
		i := fieldIndex(fields, num, typ)
		if i < 0 {
			off += n + m
			continue
		}
		if err := unmarshal(payload[rest:off], pb); err != nil {
			return msg, err
		}
		v, _ := protowire.ConsumeBytes(payload[off+n:])
		if count[i] == 0 {
			maps[i] = v
		} else {
			// The concatenation of two Struct encodings decodes to their
			// merge, as protobuf merges a repeated embedded message. But
			// protobuf decodes each occurrence on its own first, so each
			// must be well formed alone. The engine never repeats a
			// field: only then are the occurrences decoded to check.
			if count[i] == 1 && proto.Unmarshal(maps[i], &structpb.Struct{}) != nil || proto.Unmarshal(v, &structpb.Struct{}) != nil {
				return msg, malformed(pb)
			}
			maps[i] = append(append([]byte(nil), maps[i]...), v...)
		}
		count[i]++
		if i == 0 {
			msg.firstTag, msg.firstEnd = off, off+n+m
			if count[i] == 1 && n == 1 {
				msg.first = fields[0].Into
			} else {
				msg.first = nil
			}
		}
		off += n + m
		rest = off
	}
	if err := unmarshal(payload[rest:], pb); err != nil {
		return msg, err
	}
	for i, f := range fields {
		if count[i] == 0 {
			continue
		}
		if err := f.Into.Check(maps[i], owned || count[i] > 1); err != nil {
			return msg, fmt.Errorf("%s: %w", pb.ProtoReflect().Descriptor().Fields().ByNumber(f.Num).Name(), err)
		}
	}
	return msg, nil
}

func fieldIndex(fields []Field, num protowire.Number, typ protowire.Type) int {
	if typ != protowire.BytesType {
		return -1
	}
	for i, f := range fields {
		if f.Num == num {
			return i
		}
	}
	return -1
}

// unmarshal merges b, a run of whole fields of pb's encoding, into pb.
func unmarshal(b []byte, pb proto.Message) error {
	if len(b) == 0 {
		return nil
	}
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, pb); err != nil {
		return malformed(pb)
	}
	return nil
}

// malformed is the error for a request that is not a valid encoding of pb's
// message. protobuf's own wording varies between runs; this says it plainly.
func malformed(pb proto.Message) error {
	return fmt.Errorf("not a valid %s encoding", pb.ProtoReflect().Descriptor().FullName())
}

// Reply is a response to encode: a property map field, then the response's
// other fields.
type Reply struct {
	Num   protowire.Number     // the property map's field number
	Props resource.PropertyMap // the map to send
	From  *Lazy                // when Props is nil, the map to send as it is: its bytes while unread; nil sends no map
	Rest  proto.Message        // the response's other fields; nil for none
}

// EncodeReply encodes r. acceptsByteStrings chooses how byte strings in the map
// are sent (see Encode's keepBytes). msg is the request (nil outside a
// call): a reply that sends the request's first map back unread, followed
// by fields that encode as the ones that followed it in the request, is
// made in the request's own bytes when they belong to the call, which
// saves copying what may be hundreds of megabytes.
func (msg *Message) EncodeReply(r Reply, acceptsByteStrings bool) ([]byte, error) {
	var rest []byte
	if r.Rest != nil {
		var err error
		if rest, err = proto.Marshal(r.Rest); err != nil {
			return nil, err
		}
	}
	props, raw, send := r.Props, []byte(nil), r.Props != nil
	if !send && r.From != nil {
		send = true
		if b, unread := r.From.Unread(); unread {
			raw = b
		} else {
			props = r.From.Map()
		}
	}
	if props == nil && raw != nil {
		if out, ok := msg.inPlace(r, rest); ok {
			return out, nil
		}
	}
	if props == nil {
		out := make([]byte, 0, protowire.SizeTag(r.Num)+protowire.SizeBytes(len(raw))+len(rest))
		if send {
			out = protowire.AppendTag(out, r.Num, protowire.BytesType)
			out = protowire.AppendBytes(out, raw)
		}
		return append(out, rest...), nil
	}
	sizeHint := 0
	if msg != nil {
		sizeHint = len(msg.payload)
	}
	w := NewWriter(32 + len(rest) + sizeHint)
	w.PrependBytes(rest)
	mark := w.Len()
	if err := Encode(w, props, acceptsByteStrings); err != nil {
		return nil, err
	}
	w.PrependMessageField(r.Num, mark)
	return w.Bytes(), nil
}

// inPlace makes r's response in the request's bytes: r sends the request's
// first map unread, and rest, the response's other fields, is what followed
// that map in the request but for the first byte (the tag of the field
// that follows, whose number may differ between request and response). The
// map's tag and that byte are rewritten, and the response is the slice of
// the payload from the map to the end of rest.
func (msg *Message) inPlace(r Reply, rest []byte) ([]byte, bool) {
	if msg == nil || !msg.owned || msg.first == nil || r.From != msg.first {
		return nil, false
	}
	tag := protowire.AppendTag(nil, r.Num, protowire.BytesType)
	end := msg.firstEnd + len(rest)
	if len(tag) != 1 || end > len(msg.payload) {
		return nil, false
	}
	if len(rest) > 0 {
		follow := msg.payload[msg.firstEnd:end]
		if !bytes.Equal(follow[1:], rest[1:]) {
			return nil, false
		}
		follow[0] = rest[0]
	}
	msg.payload[msg.firstTag] = tag[0]
	return msg.payload[msg.firstTag:end], true
}

// FieldNum is the number of the field of m's message named name, which
// must exist.
func FieldNum(m proto.Message, name protoreflect.Name) protowire.Number {
	f := m.ProtoReflect().Descriptor().Fields().ByName(name)
	if f == nil {
		panic(fmt.Sprintf("wire: %s has no field %s", m.ProtoReflect().Descriptor().FullName(), name))
	}
	return f.Number()
}
