package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/archive"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/wire"
)

// This file holds what a call was asked and what it answered as the account
// shows it (show -v): a value tree built from a call's decoded messages or
// from the property values an automatic log holds, which each view renders
// its own way: as JSON values (-json, the trace), and as one line per
// property path (the text account, the HTML page).

// value is a property value, or a field of a callback's message, as the
// account shows it. A secret holds its value only when -secrets was given.
type value struct {
	kind   valueKind
	text   string   // a string's value, or a number as JSON writes it
	flag   bool     // a bool's value
	keys   []string // an object's keys in order; the fields of an asset, archive or resource reference
	elems  []*value // the values of keys, or an array's elements
	secret *value   // a secret's value; nil when it is hidden
}

type valueKind uint8

const (
	vNull valueKind = iota
	vBool
	vNumber
	vString
	vObject
	vArray
	vSecret
	vUnknown  // a value not known until the resource is created (a preview's)
	vAsset    // fields: hash, path, text, uri
	vArchive  // fields: hash, path, uri, assets
	vResource // a resource reference; fields: urn, id, packageVersion
)

// markers are the names of the marker objects of the kinds that are not
// plain JSON, in -json's form of a value: {"secret": ...}, {"unknown":
// true}, {"asset": {...}}.
var markers = map[valueKind]string{vSecret: "secret", vUnknown: "unknown", vAsset: "asset", vArchive: "archive", vResource: "resource"}

func strValue(s string) *value { return &value{kind: vString, text: s} }

func newObject() *value { return &value{kind: vObject} }

// set adds the key k with x to an object (or marker); a nil x is left out.
func (v *value) set(k string, x *value) *value {
	if x != nil {
		v.keys = append(v.keys, k)
		v.elems = append(v.elems, x)
	}
	return v
}

// setString adds the key k with the string s, unless s is "".
func (v *value) setString(k, s string) *value {
	if s == "" {
		return v
	}
	return v.set(k, strValue(s))
}

// numberValue is f as JSON writes it; a value JSON cannot write (NaN, an
// infinity) is a string.
func numberValue(f float64) *value {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strValue(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return &value{kind: vNumber, text: strconv.FormatFloat(f, 'f', -1, 64)}
}

// fromMessage is a protocol message as the account shows it: its fields
// that are set, by the names of the protocol's JSON mapping, in the order
// the protocol declares them. Property maps (google.protobuf.Struct) are
// property values; bytes that hold a JSON object or array (a migration's
// state) are that JSON; other bytes are base64.
func fromMessage(m protoreflect.Message, secrets bool) *value {
	switch x := m.Interface().(type) {
	case *structpb.Struct:
		return fromStruct(x, secrets)
	case *structpb.Value:
		return fromJSON(x.AsInterface(), secrets)
	case *structpb.ListValue:
		return fromJSON(x.AsSlice(), secrets)
	}
	out := newObject()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			arr := &value{kind: vArray}
			for j := range l.Len() {
				arr.elems = append(arr.elems, fromField(fd, l.Get(j), secrets))
			}
			out.set(fd.JSONName(), arr)
		case fd.IsMap():
			obj := newObject()
			var keys []string
			byKey := map[string]*value{}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				keys = append(keys, k.String())
				byKey[k.String()] = fromField(fd.MapValue(), mv, secrets)
				return true
			})
			slices.Sort(keys)
			for _, k := range keys {
				obj.set(k, byKey[k])
			}
			out.set(fd.JSONName(), obj)
		default:
			out.set(fd.JSONName(), fromField(fd, v, secrets))
		}
	}
	return out
}

func fromField(fd protoreflect.FieldDescriptor, v protoreflect.Value, secrets bool) *value {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return fromMessage(v.Message(), secrets)
	case protoreflect.BoolKind:
		return &value{kind: vBool, flag: v.Bool()}
	case protoreflect.StringKind:
		return strValue(v.String())
	case protoreflect.BytesKind:
		return fromBytes(v.Bytes(), secrets)
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return strValue(string(ev.Name()))
		}
		return &value{kind: vNumber, text: strconv.Itoa(int(v.Enum()))}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return &value{kind: vNumber, text: strconv.FormatInt(v.Int(), 10)}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return &value{kind: vNumber, text: strconv.FormatUint(v.Uint(), 10)}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return numberValue(v.Float())
	}
	return strValue(v.String())
}

// fromBytes is the JSON object or array b holds (a migration's state), or
// else b in base64.
func fromBytes(b []byte, secrets bool) *value {
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if x, err := decodeJSON(t); err == nil {
			return fromJSON(x, secrets)
		}
	}
	return strValue(base64.StdEncoding.EncodeToString(b))
}

// decodeJSON decodes one JSON value, its numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return x, nil
}

// propertyMap converts a Struct to property values by the SDK's rules, as
// replay compares them; false when they refuse it.
func propertyMap(s *structpb.Struct) (m resource.PropertyMap, ok bool) {
	if s == nil {
		return resource.PropertyMap{}, true
	}
	// Assets, archives and resource references go through the SDK's
	// decoder, which trusts its input more than a log deserves.
	defer func() {
		if recover() != nil {
			m, ok = nil, false
		}
	}()
	m, err := wire.FromStruct(s)
	return m, err == nil
}

// fromStruct is a property map: its property values, or where they do not
// convert, its JSON.
func fromStruct(s *structpb.Struct, secrets bool) *value {
	m, ok := propertyMap(s)
	if !ok {
		return fromJSON(s.AsMap(), secrets)
	}
	return fromProperty(resource.NewProperty(m), secrets)
}

// fromProperty is a property value as the account shows it. An output
// value is the value it holds (a secret if it is secret), or unknown.
func fromProperty(v resource.PropertyValue, secrets bool) *value {
	switch {
	case v.IsNull():
		return &value{kind: vNull}
	case v.IsBool():
		return &value{kind: vBool, flag: v.BoolValue()}
	case v.IsNumber():
		return numberValue(v.NumberValue())
	case v.IsString():
		return strValue(v.StringValue())
	case v.IsArray():
		arr := &value{kind: vArray}
		for _, x := range v.ArrayValue() {
			arr.elems = append(arr.elems, fromProperty(x, secrets))
		}
		return arr
	case v.IsObject():
		obj := newObject()
		m := v.ObjectValue()
		for _, k := range m.StableKeys() {
			obj.set(string(k), fromProperty(m[k], secrets))
		}
		return obj
	case v.IsSecret():
		return secretOf(func() *value { return fromProperty(v.SecretValue().Element, secrets) }, secrets)
	case v.IsComputed():
		return &value{kind: vUnknown}
	case v.IsOutput():
		o := v.OutputValue()
		if !o.Known {
			return &value{kind: vUnknown}
		}
		if o.Secret {
			return secretOf(func() *value { return fromProperty(o.Element, secrets) }, secrets)
		}
		return fromProperty(o.Element, secrets)
	case v.IsResourceReference():
		ref := v.ResourceReferenceValue()
		out := &value{kind: vResource}
		out.setString("urn", string(ref.URN))
		if !ref.ID.IsNull() {
			out.set("id", fromProperty(ref.ID, secrets))
		}
		return out.setString("packageVersion", ref.PackageVersion)
	case v.IsAsset():
		return fromAsset(v.AssetValue())
	case v.IsArchive():
		return fromArchive(v.ArchiveValue(), secrets)
	}
	return strValue(v.String())
}

// secretOf is a secret whose value elem gives, hidden unless secrets.
func secretOf(elem func() *value, secrets bool) *value {
	if !secrets {
		return &value{kind: vSecret}
	}
	return &value{kind: vSecret, secret: elem()}
}

func fromAsset(a *asset.Asset) *value {
	out := &value{kind: vAsset}
	if a == nil {
		return out
	}
	return out.setString("hash", a.Hash).setString("path", a.Path).setString("text", a.Text).setString("uri", a.URI)
}

func fromArchive(a *archive.Archive, secrets bool) *value {
	out := &value{kind: vArchive}
	if a == nil {
		return out
	}
	out.setString("hash", a.Hash).setString("path", a.Path).setString("uri", a.URI)
	if len(a.Assets) > 0 {
		assets := newObject()
		for _, k := range slices.Sorted(maps.Keys(a.Assets)) {
			switch x := a.Assets[k].(type) {
			case *asset.Asset:
				assets.set(k, fromAsset(x))
			case *archive.Archive:
				assets.set(k, fromArchive(x, secrets))
			default:
				assets.set(k, fromJSON(x, secrets))
			}
		}
		out.set("assets", assets)
	}
	return out
}

// fromJSON is decoded JSON as the account shows it: a secret envelope
// (a property value's or a checkpoint's) is a secret, an output value the
// value it holds; object keys in order.
func fromJSON(x any, secrets bool) *value {
	switch x := x.(type) {
	case nil:
		return &value{kind: vNull}
	case bool:
		return &value{kind: vBool, flag: x}
	case float64:
		return numberValue(x)
	case json.Number:
		return &value{kind: vNumber, text: x.String()}
	case string:
		return strValue(x)
	case []any:
		arr := &value{kind: vArray}
		for _, e := range x {
			arr.elems = append(arr.elems, fromJSON(e, secrets))
		}
		return arr
	case map[string]any:
		switch x[sig.Key] {
		case sig.Secret:
			return secretOf(func() *value {
				if p, ok := x["plaintext"].(string); ok {
					if inner, err := decodeJSON([]byte(p)); err == nil {
						return fromJSON(inner, secrets)
					}
					return strValue(p)
				}
				if v, ok := x["value"]; ok {
					return fromJSON(v, secrets)
				}
				return plainObject(x, secrets) // only a ciphertext
			}, secrets)
		case sig.OutputValue:
			v, known := x["value"]
			if !known {
				return &value{kind: vUnknown}
			}
			if secret, _ := x["secret"].(bool); secret {
				return secretOf(func() *value { return fromJSON(v, secrets) }, secrets)
			}
			return fromJSON(v, secrets)
		}
		return plainObject(x, secrets)
	}
	return strValue("")
}

// fromPlainJSON is decoded JSON as replay compares JSON that is not
// property values: only a secret envelope is read as what it stands for.
func fromPlainJSON(x any, secrets bool) *value {
	switch x := x.(type) {
	case []any:
		arr := &value{kind: vArray}
		for _, e := range x {
			arr.elems = append(arr.elems, fromPlainJSON(e, secrets))
		}
		return arr
	case map[string]any:
		if x[sig.Key] == sig.Secret {
			return fromJSON(x, secrets)
		}
		obj := newObject()
		for _, k := range slices.Sorted(maps.Keys(x)) {
			obj.set(k, fromPlainJSON(x[k], secrets))
		}
		return obj
	}
	return fromJSON(x, secrets)
}

func plainObject(x map[string]any, secrets bool) *value {
	obj := newObject()
	for _, k := range slices.Sorted(maps.Keys(x)) {
		obj.set(k, fromJSON(x[k], secrets))
	}
	return obj
}

// jsonValue is v as -json prints it: plain JSON for plain values, and a
// marker object for the others: {"secret": "[secret]"} (or {"secret": its
// value} with -secrets), {"unknown": true}, {"asset": {"hash", "path",
// "text", "uri"}}, {"archive": {"hash", "path", "uri", "assets"}},
// {"resource": {"urn", "id", "packageVersion"}}.
func (v *value) jsonValue() any {
	switch v.kind {
	case vNull:
		return nil
	case vBool:
		return v.flag
	case vNumber:
		return json.Number(v.text)
	case vString:
		return v.text
	case vArray:
		out := make([]any, len(v.elems))
		for i, e := range v.elems {
			out[i] = e.jsonValue()
		}
		return out
	case vSecret:
		if v.secret == nil {
			return map[string]any{"secret": hidden}
		}
		return map[string]any{"secret": v.secret.jsonValue()}
	case vUnknown:
		return map[string]any{"unknown": true}
	}
	out := make(map[string]any, len(v.keys))
	for i, k := range v.keys {
		out[k] = v.elems[i].jsonValue()
	}
	if name, ok := markers[v.kind]; ok {
		return map[string]any{name: out}
	}
	return out
}

// rawJSON is v's JSON form, for a field that must tell null from absent;
// nil for a nil v.
func (v *value) rawJSON() json.RawMessage {
	if v == nil {
		return nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v.jsonValue()) != nil {
		return json.RawMessage(`null`)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// inline writes v on one line, as the account writes a changed value:
// strings quoted, objects {"key": value, ...}, a secret "[secret]" (or
// secret(its value) with -secrets), an unknown value "[unknown]", an asset,
// archive or resource reference as asset({...}), archive({...}),
// resource({...}).
func (v *value) inline() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v *value) write(b *strings.Builder) {
	switch v.kind {
	case vNull:
		b.WriteString("null")
	case vBool:
		b.WriteString(strconv.FormatBool(v.flag))
	case vNumber:
		b.WriteString(v.text)
	case vString:
		b.WriteString(strconv.Quote(v.text))
	case vArray:
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte(']')
	case vSecret:
		if v.secret == nil {
			b.WriteString(hidden)
			return
		}
		b.WriteString("secret(")
		v.secret.write(b)
		b.WriteByte(')')
	case vUnknown:
		b.WriteString("[unknown]")
	default:
		name, marked := markers[v.kind]
		if marked {
			b.WriteString(name + "(")
		}
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(k) + ": ")
			v.elems[i].write(b)
		}
		b.WriteByte('}')
		if marked {
			b.WriteByte(')')
		}
	}
}

// field is one line of a request or answer in the text account and the
// HTML page: a property path and the value there.
type field struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// lines is v, an object, as one line per value that is not a plain object
// or array (and per empty one), by property path: options.protect,
// properties.tags.team, oldState[0].outputs.x.
func (v *value) lines() []field {
	var out []field
	var walk func(path string, x *value)
	walk = func(path string, x *value) {
		switch {
		case x.kind == vObject && len(x.keys) > 0:
			for i, k := range x.keys {
				walk(joinPath(path, k), x.elems[i])
			}
		case x.kind == vArray && len(x.elems) > 0:
			for i, e := range x.elems {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		default:
			out = append(out, field{Path: path, Value: x.inline()})
		}
	}
	if v.kind != vObject {
		walk("", v)
		return out
	}
	for i, k := range v.keys {
		walk(joinPath("", k), v.elems[i])
	}
	return out
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// joinPath appends key to a property path as replay.Change writes paths:
// .key for a plain identifier, else ["key"].
func joinPath(path, key string) string {
	if identifier.MatchString(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// index adds v and every value inside it to into, by the paths
// replay.Change gives them under prefix; a secret's value (shown with
// -secrets) is under the secret's path, as replay compares it.
func (v *value) index(prefix string, into map[string]*value) {
	if v == nil {
		return
	}
	if _, ok := into[prefix]; !ok {
		into[prefix] = v
	}
	switch v.kind {
	case vObject:
		for i, k := range v.keys {
			v.elems[i].index(joinPath(prefix, k), into)
		}
	case vArray:
		for i, e := range v.elems {
			e.index(prefix+"["+strconv.Itoa(i)+"]", into)
		}
	case vSecret:
		v.secret.index(prefix, into)
	}
}

// exchange is what a call was asked and what it answered, for show -v.
// Request or Answer is nil where the log does not hold it, and
// RequestMissing or AnswerMissing then says why.
type exchange struct {
	Request, Answer               *value
	RequestMissing, AnswerMissing string
}

// Why a request or an answer is not shown.
const (
	missingFailed   = "none: the call failed"
	missingPending  = "none: the log ends before the call was answered"
	missingUnknown  = "not known: the log does not tell which of its answers is this call's, or has none"
	missingHookReq  = "not in this log: Pulumi's automatic log does not hold a hook's request (its inputs, outputs and options); the engine's gRPC log (PULUMI_DEBUG_GRPC) does"
	missingNoDecode = "the payload does not decode (see the error)"
)

// textLines are the lines the text account prints under a call for its
// request and answer.
func (p *exchange) textLines() []string {
	var out []string
	part := func(name string, v *value, missing string) {
		switch {
		case v == nil:
			out = append(out, name+": "+missing)
		case v.kind == vObject && len(v.keys) == 0:
			out = append(out, name+": {}")
		default:
			out = append(out, name+":")
			fs := v.lines()
			w := 0
			for _, f := range fs {
				w = max(w, width(oneLine(f.Path)))
			}
			for _, f := range fs {
				out = append(out, "  "+pad(oneLine(f.Path), w, false)+"  "+oneLine(f.Value))
			}
		}
	}
	part("request", p.Request, p.RequestMissing)
	part("answer", p.Answer, p.AnswerMissing)
	return out
}

// dropPayloads leaves out what the calls were asked and answered: the
// views show it only with -v.
func dropPayloads(recs []*record) {
	for _, r := range recs {
		r.Payload = nil
	}
}
