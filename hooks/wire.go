package hooks

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/langhost/callbacks/internal/wire"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Field numbers of ResourceHookRequest and ErrorHookRequest. The first five
// are the same in both.
const (
	reqURN       = 1
	reqID        = 2
	reqName      = 3
	reqType      = 4
	reqNewInputs = 5
	reqOldInputs = 6

	hookNewOutputs = 7
	hookOldOutputs = 8
	hookOldOptions = 9
	hookNewOptions = 10

	errOldOutputs      = 7
	errFailedOperation = 8
	errErrors          = 9
	errOldOptions      = 10
	errNewOptions      = 11
)

// errBadRequest says that the payload is not a valid protobuf encoding. The
// adapter's message names the request already, so this carries no prefix.
var errBadRequest = errors.New("malformed protobuf encoding")

var errUTF8 = errors.New("a string field holds invalid UTF-8")

// lazyMap is a property map of a hook request that stays encoded until it
// is read, and remembers whether the request carried it at all.
type lazyMap struct {
	sent bool
	l    wire.Lazy
}

// get returns the map, decoding it on the first call; nil when it was not
// sent.
func (m *lazyMap) get() resource.PropertyMap {
	if !m.sent {
		return nil
	}
	return m.l.Map()
}

// lazyOptions is an option set of a hook request that stays encoded until
// it is read.
type lazyOptions struct {
	o      *ResourceOptions
	raw    []byte // the encoded options, while unread
	unread bool
	err    error // why raw did not decode when it was read
}

// check checks the encoded options b, as the decode would, and keeps them
// to be decoded on first use. Options that carry a replacement trigger (a
// google.protobuf.Value, which only a decode can judge) are decoded now.
func (l *lazyOptions) check(b []byte) error {
	switch err := checkMessage(b, optionsSpec, 0); {
	case err == nil:
		l.raw, l.unread = b, true
		return nil
	case errors.Is(err, errNeedsDecode):
		l.o, err = decodeOptions(b)
		return err
	default:
		return err
	}
}

func (l *lazyOptions) get() *ResourceOptions {
	if l.unread {
		l.unread = false
		l.o, l.err = decodeOptions(l.raw)
		l.raw = nil
	}
	return l.o
}

func decodeOptions(b []byte) (*ResourceOptions, error) {
	pb := &pulumirpc.ResourceOptions{}
	if err := proto.Unmarshal(b, pb); err != nil {
		// protobuf's own wording varies between runs; say it plainly.
		return nil, errors.New("not a valid ResourceOptions encoding")
	}
	return optionsFromProto(pb)
}

// request is what both hook requests are made of, as found on the wire.
type request struct {
	urn, id, name, typ, failedOp string
	errors                       []string
	maps                         [4]part
	opts                         [2]part
}

// part is an embedded message of a request: its bytes, the concatenation
// of every occurrence (which decodes to their merge, as protobuf merges a
// repeated embedded message), and whether it occurred.
type part struct {
	b     []byte
	sent  bool
	multi bool // it occurred more than once
}

// add adds an occurrence v of a message like m. Protobuf decodes each
// occurrence on its own before merging them, so an occurrence that is not
// well formed is refused even when the concatenation would be; the engine
// never repeats a field, so only then are the occurrences decoded to check.
func (p *part) add(v []byte, m func() proto.Message) error {
	if !p.sent {
		p.b, p.sent = v, true
		return nil
	}
	if !p.multi {
		if proto.Unmarshal(p.b, m()) != nil {
			return errBadRequest
		}
		p.multi = true
	}
	if proto.Unmarshal(v, m()) != nil {
		return errBadRequest
	}
	p.b = append(append([]byte(nil), p.b...), v...)
	return nil
}

func newStruct() proto.Message  { return &structpb.Struct{} }
func newOptions() proto.Message { return &pulumirpc.ResourceOptions{} }

// layout says where a request kind keeps its fields: mapAt[i] and optAt[i]
// are the field numbers of maps[i] and opts[i], 0 when the kind has none.
type layout struct {
	mapAt    [4]protowire.Number
	optAt    [2]protowire.Number
	isError  bool
	mapNames [4]string
}

var (
	hookLayout = layout{
		mapAt:    [4]protowire.Number{reqNewInputs, reqOldInputs, hookNewOutputs, hookOldOutputs},
		optAt:    [2]protowire.Number{hookNewOptions, hookOldOptions},
		mapNames: [4]string{"new_inputs", "old_inputs", "new_outputs", "old_outputs"},
	}
	errorLayout = layout{
		mapAt:    [4]protowire.Number{reqNewInputs, reqOldInputs, 0, errOldOutputs},
		optAt:    [2]protowire.Number{errNewOptions, errOldOptions},
		isError:  true,
		mapNames: [4]string{"new_inputs", "old_inputs", "", "old_outputs"},
	}
)

// scan walks a serialized hook request of the kind lay describes. Strings
// share b when shared is set (b is then never written again). It checks
// the encoding and the strings, not the maps and options.
func scan(b []byte, lay *layout, shared bool, r *request) error {
	str := func(v []byte) (string, error) {
		if !utf8.Valid(v) {
			return "", errUTF8
		}
		if shared && len(v) > 0 {
			return unsafe.String(unsafe.SliceData(v), len(v)), nil
		}
		return string(v), nil
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber { // protobuf refuses both
			return errBadRequest
		}
		b = b[n:]
		if typ != protowire.BytesType {
			// Every field of both requests is length-delimited; protobuf
			// keeps a field with another wire type as an unknown field.
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return errBadRequest
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return errBadRequest
		}
		b = b[m:]
		var err error
		switch num {
		case reqURN:
			r.urn, err = str(v)
		case reqID:
			r.id, err = str(v)
		case reqName:
			r.name, err = str(v)
		case reqType:
			r.typ, err = str(v)
		default:
			switch {
			case lay.isError && num == errFailedOperation:
				r.failedOp, err = str(v)
			case lay.isError && num == errErrors:
				var s string
				if s, err = str(v); err == nil {
					r.errors = append(r.errors, s)
				}
			}
			for i, at := range lay.mapAt {
				if at != 0 && num == at {
					err = r.maps[i].add(v, newStruct)
				}
			}
			for i, at := range lay.optAt {
				if num == at {
					err = r.opts[i].add(v, newOptions)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// check checks r's maps and options into the lazy values, in field order.
func (r *request) check(lay *layout, shared bool, maps [4]*lazyMap, opts [2]*lazyOptions) error {
	for i, p := range r.maps {
		if !p.sent || maps[i] == nil {
			continue
		}
		maps[i].sent = true
		if err := maps[i].l.Check(p.b, shared); err != nil {
			return fmt.Errorf("%s: %w", lay.mapNames[i], err)
		}
	}
	for i, p := range r.opts {
		if !p.sent {
			continue
		}
		if err := opts[i].check(p.b); err != nil {
			return fmt.Errorf("%s: %w", [2]string{"new_options", "old_options"}[i], err)
		}
	}
	return nil
}

// decodePayload decodes a serialized ResourceHookRequest into Args,
// checking the maps and options without decoding them. Even on error, the
// returned Args holds the URN if it was read.
func decodePayload(b []byte, shared bool) (*Args, error) {
	a := &Args{}
	var r request
	err := scan(b, &hookLayout, shared, &r)
	a.URN, a.ID, a.Name, a.Type = resource.URN(r.urn), resource.ID(r.id), r.name, r.typ
	if err != nil {
		return a, err
	}
	return a, r.check(&hookLayout, shared,
		[4]*lazyMap{&a.newInputs, &a.oldInputs, &a.newOutputs, &a.oldOutputs},
		[2]*lazyOptions{&a.newOptions, &a.oldOptions})
}

// decodeErrorPayload decodes a serialized ErrorHookRequest into ErrorArgs,
// like decodePayload.
func decodeErrorPayload(b []byte, shared bool) (*ErrorArgs, error) {
	a := &ErrorArgs{}
	var r request
	err := scan(b, &errorLayout, shared, &r)
	a.URN, a.ID, a.Name, a.Type = resource.URN(r.urn), resource.ID(r.id), r.name, r.typ
	a.FailedOperation, a.Errors = Operation(r.failedOp), r.errors
	if err != nil {
		return a, err
	}
	return a, r.check(&errorLayout, shared,
		[4]*lazyMap{&a.newInputs, &a.oldInputs, nil, &a.oldOutputs},
		[2]*lazyOptions{&a.newOptions, &a.oldOptions})
}

// errNeedsDecode says that a message holds a field only a decode can judge.
var errNeedsDecode = errors.New("needs a decode")

// The kinds of field checkMessage tells apart.
const (
	fieldUnknown = iota
	fieldString
	fieldBytes
	fieldVarint
	fieldFixed32
	fieldFixed64
	fieldMessage
	fieldDecode // only a decode can judge it
)

type fieldSpec struct {
	kind   uint8
	packed bool // a repeated scalar: packed encodings are accepted too
	msg    *msgSpec
}

// msgSpec is what checkMessage needs to know of a message, indexed by field
// number; numbers past the end are unknown fields.
type msgSpec struct {
	fields []fieldSpec
}

// optionsSpec is built from the ResourceOptions descriptor, so that the
// check follows the message as protobuf defines it.
var optionsSpec = specOf((&pulumirpc.ResourceOptions{}).ProtoReflect().Descriptor(), map[protoreflect.FullName]*msgSpec{})

func specOf(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]*msgSpec) *msgSpec {
	if s, ok := seen[md.FullName()]; ok {
		return s
	}
	s := &msgSpec{}
	seen[md.FullName()] = s
	fields := md.Fields()
	last := 0
	for i := range fields.Len() {
		last = max(last, int(fields.Get(i).Number()))
	}
	s.fields = make([]fieldSpec, last+1)
	for i := range fields.Len() {
		fd := fields.Get(i)
		f := &s.fields[fd.Number()]
		switch fd.Kind() {
		case protoreflect.StringKind:
			f.kind = fieldString
			if fd.ParentFile().Syntax() != protoreflect.Proto3 {
				f.kind = fieldDecode // UTF-8 is checked only in proto3
			}
		case protoreflect.BytesKind:
			f.kind = fieldBytes
		case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Int64Kind,
			protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind:
			f.kind = fieldVarint
		case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
			f.kind = fieldFixed32
		case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
			f.kind = fieldFixed64
		case protoreflect.MessageKind:
			if fd.Message().ParentFile().Package() == "google.protobuf" {
				f.kind = fieldDecode // Struct, Value and the like
			} else {
				f.kind, f.msg = fieldMessage, specOf(fd.Message(), seen)
			}
		default:
			f.kind = fieldDecode // groups
		}
		f.packed = fd.IsList() && f.kind >= fieldVarint && f.kind <= fieldFixed64
	}
	return s
}

// checkMessage reports whether proto.Unmarshal would refuse b as the
// message s describes, without building anything: the encoding must be
// well formed and every proto3 string valid UTF-8. A field of a wire type
// its declaration does not have is kept by protobuf as an unknown field,
// and so is only checked for being well formed. It returns errNeedsDecode
// for a field it cannot judge.
func checkMessage(b []byte, s *msgSpec, depth int) error {
	if depth > protowire.DefaultRecursionLimit {
		return errNeedsDecode
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber { // protobuf refuses both
			return errBadRequest
		}
		b = b[n:]
		var f fieldSpec
		if int(num) < len(s.fields) {
			f = s.fields[num]
		}
		switch {
		case f.kind == fieldDecode:
			return errNeedsDecode
		case typ == protowire.BytesType && (f.kind == fieldString || f.kind == fieldBytes || f.kind == fieldMessage || f.packed):
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errBadRequest
			}
			b = b[m:]
			switch {
			case f.kind == fieldString:
				if !utf8.Valid(v) {
					return errUTF8
				}
			case f.kind == fieldMessage:
				if err := checkMessage(v, f.msg, depth+1); err != nil {
					return err
				}
			case f.packed:
				if err := checkPacked(v, f.kind); err != nil {
					return err
				}
			}
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return errBadRequest
			}
			b = b[m:]
		}
	}
	return nil
}

// checkPacked checks a packed run of scalars of the given kind.
func checkPacked(b []byte, kind uint8) error {
	for len(b) > 0 {
		var n int
		switch kind {
		case fieldVarint:
			_, n = protowire.ConsumeVarint(b)
		case fieldFixed32:
			_, n = protowire.ConsumeFixed32(b)
		default:
			_, n = protowire.ConsumeFixed64(b)
		}
		if n < 0 {
			return errBadRequest
		}
		b = b[n:]
	}
	return nil
}
