package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	bigfloat "math/big"
	"slices"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// The fixture convention's known changes: a conforming program's functions
// make these, and only for these requests, so that every other request
// still gets the identity answer.
const (
	// changeName is the name of the resource a resource transform changes,
	// and changeToken the function whose invoke an invoke transform changes:
	// they add changeKey and change one option.
	changeName  = "lossless"
	changeToken = "conform:index:lossless"
	changeKey   = "conformAdded"
	changeValue = "added by the transform"
	// changeVersion is the version an invoke transform sets.
	changeVersion = "7.0.0"
	// refuseName is the resource a resource hook refuses, with refusal.
	refuseName = "refuse-me"
	refusal    = "conform: refused refuse-me"
	// A migration sets versionKey from 1 to 2 on every resource whose
	// outputs have it at 1, returns the JSON array under returnKey (and the
	// successors under successorsKey) verbatim when the first resource's
	// outputs have it, fails with the text under failKey, and leaves any
	// other state alone (no new state).
	versionKey    = "conformVersion"
	returnKey     = "conformReturn"
	successorsKey = "conformSuccessors"
	failKey       = "conformFail"
)

// The value shapes a lossy runtime breaks, sent in the change requests and
// in the migrations' state: a leading byte order mark (which JavaScript's
// TextDecoder strips by default), negative zero (which JSON.stringify
// writes as 0), and the integers around 2^53, where a double stops being
// exact (in JSON text, 2^53+1 survives only a decoder that keeps numbers
// as text).
const (
	bomString = "\ufeffstarts with a byte order mark"
	bomOnly   = "\ufeff"
)

// shapeKeys are the property keys of the value shapes.
var shapeKeys = []string{"bom", "bomOnly", "bomInList", "negativeZero", "negativeZeroInList", "maxSafe", "twoTo53", "twoTo53Next", "minSafe"}

func isShapeKey(k string) bool { return slices.Contains(shapeKeys, k) }

// shapeProperties returns the value shapes as protobuf values (doubles:
// 2^53+1 is not a double, so its neighbours are 2^53-1, 2^53 and 2^53+2).
func shapeProperties() map[string]*structpb.Value {
	list := func(vs ...*structpb.Value) *structpb.Value {
		return structpb.NewListValue(&structpb.ListValue{Values: vs})
	}
	return map[string]*structpb.Value{
		"bom":                structpb.NewStringValue(bomString),
		"bomOnly":            structpb.NewStringValue(bomOnly),
		"bomInList":          list(structpb.NewStringValue(bomString)),
		"negativeZero":       structpb.NewNumberValue(math.Copysign(0, -1)),
		"negativeZeroInList": list(structpb.NewNumberValue(math.Copysign(0, -1))),
		"maxSafe":            structpb.NewNumberValue(1<<53 - 1),
		"twoTo53":            structpb.NewNumberValue(1 << 53),
		"twoTo53Next":        structpb.NewNumberValue(1<<53 + 2),
		"minSafe":            structpb.NewNumberValue(-(1<<53 - 1)),
	}
}

// shapeJSON is the value shapes as JSON text, for migrations: here 2^53+1
// is exact text, and -0 is "-0".
const shapeJSON = `"bom":"\ufeffstarts with a byte order mark","bomOnly":"\ufeff","bomInList":["\ufeffstarts with a byte order mark"],` +
	`"negativeZero":-0,"negativeZeroInList":[-0],"maxSafe":9007199254740991,"twoTo53":9007199254740992,` +
	`"twoTo53Next":9007199254740993,"minSafe":-9007199254740991`

// Unknown fields: numbers no revision of the protocol uses, which the kit
// adds to the options and requests of the change requests. A server must
// send the options' back byte for byte: the engine replaces a resource's
// options wholesale with a transform's, so a field a newer engine sends and
// an older server drops is lost for the resource.
func unknownFields(tag string) protoreflect.RawFields {
	var b []byte
	b = protowire.AppendTag(b, 9001, protowire.BytesType)
	b = protowire.AppendString(b, "conform-unknown-"+tag)
	b = protowire.AppendTag(b, 9002, protowire.VarintType)
	b = protowire.AppendVarint(b, 150)
	b = protowire.AppendTag(b, 9003, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 0x0102030405060708)
	return b
}

func withUnknown[M proto.Message](m M, tag string) M {
	m.ProtoReflect().SetUnknown(unknownFields(tag))
	return m
}

// addUnknown puts unknown fields into an options message: at its top
// level and in its nested messages that are set.
func addUnknown(m proto.Message) {
	r := m.ProtoReflect()
	r.SetUnknown(unknownFields("options"))
	fields := r.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() || !r.Has(fd) {
			continue
		}
		if fd.Message().FullName() == "google.protobuf.Value" {
			continue // a value, not an option message
		}
		r.Mutable(fd).Message().SetUnknown(unknownFields(string(fd.Name())))
	}
}

// unknownLost names the option messages whose unknown fields did not come
// back byte for byte.
func unknownLost(sent, got proto.Message) []string {
	var out []string
	rs, rg := sent.ProtoReflect(), got.ProtoReflect()
	name := string(rs.Descriptor().Name())
	if !bytes.Equal(rs.GetUnknown(), rg.GetUnknown()) {
		out = append(out, describeUnknown(name, rs.GetUnknown(), rg.GetUnknown()))
	}
	fields := rs.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() || !rs.Has(fd) {
			continue
		}
		us := rs.Get(fd).Message().GetUnknown()
		if len(us) == 0 {
			continue
		}
		var ug []byte
		if rg.Has(fd) {
			ug = rg.Get(fd).Message().GetUnknown()
		}
		if !bytes.Equal(us, ug) {
			out = append(out, describeUnknown(string(fd.Name()), us, ug))
		}
	}
	return out
}

func describeUnknown(where string, sent, got []byte) string {
	if len(got) == 0 {
		return fmt.Sprintf("%s: the unknown fields (%x) were dropped", where, sent)
	}
	return fmt.Sprintf("%s: unknown fields sent %x, got %x", where, sent, got)
}

// numberText returns a JSON number in a canonical exact form: "1.0" and "1"
// are one number, "-0" is not "0", and 9007199254740993 is not
// 9007199254740992.
func numberText(n json.Number) string {
	f, _, err := bigfloat.ParseFloat(string(n), 10, 512, bigfloat.ToNearestEven)
	if err != nil {
		return string(n)
	}
	return f.Text('g', -1)
}

// decodeJSON decodes JSON keeping numbers as text.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// diffJSON names the paths on which two decoded JSON values differ, with
// numbers compared exactly and strings byte for byte.
func diffJSON(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: sent an object, got %s", path, jsonShort(got)))
			return
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range w {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, path+"."+k+" dropped")
				continue
			}
			diffJSON(path+"."+k, w[k], gv, out)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*out = append(*out, path+"."+k+" added")
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: sent %s, got %s", path, jsonShort(want), jsonShort(got)))
			return
		}
		for i := range w {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || numberText(w) != numberText(g) {
			*out = append(*out, fmt.Sprintf("%s: sent %s, got %s", path, w, jsonShort(got)))
		}
	default:
		if fmt.Sprintf("%T %#v", want, want) != fmt.Sprintf("%T %#v", got, got) {
			*out = append(*out, fmt.Sprintf("%s: sent %s, got %s", path, jsonShort(want), jsonShort(got)))
		}
	}
}

func jsonShort(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := strings.TrimSpace(b.String())
	s = strings.ReplaceAll(s, "\ufeff", `\ufeff`)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// changeRequest builds the request of kind k to which a conforming
// program's function answers with a known change; with unknown, the
// request and its options carry unknown fields.
func (c *checker) changeRequest(unknown bool) proto.Message {
	props := func() *structpb.Struct {
		f := shapeProperties()
		f["conformKeep"] = structpb.NewStringValue("kept as sent")
		return &structpb.Struct{Fields: f}
	}
	var req proto.Message
	switch c.cb.Kind {
	case kindResourceTransform:
		r := &pulumirpc.TransformRequest{Type: resType, Name: changeName, Custom: true, Parent: urnParent,
			Properties: props(), Options: everyResourceTransformOption()}
		if unknown {
			addUnknown(r.Options)
		}
		req = r
	case kindInvokeTransform:
		r := &pulumirpc.TransformInvokeRequest{Token: changeToken, Args: props(), Options: everyInvokeOption()}
		if unknown {
			addUnknown(r.Options)
		}
		req = r
	case kindResourceHook:
		urn := strings.TrimSuffix(urnResource, resName) + refuseName
		r := &pulumirpc.ResourceHookRequest{Urn: urn, Id: "refuse-id", Name: refuseName, Type: resType,
			NewInputs: props(), OldInputs: props(), NewOutputs: props(), OldOutputs: props(),
			NewOptions: everyResourceOption(), OldOptions: everyResourceOption()}
		if unknown {
			addUnknown(r.NewOptions)
			addUnknown(r.OldOptions)
		}
		req = r
	case kindErrorHook:
		r := &pulumirpc.ErrorHookRequest{Urn: urnResource, Id: "bucket-id", Name: resName, Type: resType,
			NewInputs: props(), OldInputs: props(), OldOutputs: props(), FailedOperation: "update",
			Errors: []string{"throttled (1)"}, NewOptions: everyResourceOption(), OldOptions: everyResourceOption()}
		if unknown {
			addUnknown(r.NewOptions)
			addUnknown(r.OldOptions)
		}
		req = r
	case kindStateMigration:
		req = &pulumirpc.StateMigrationRequest{Urn: c.cb.URN, OldState: c.migrationState(migrationChange)}
	}
	if unknown {
		withUnknown(req, "request")
	}
	return req
}

// changeVerdict is what the answer to a change request shows.
type changeVerdict struct {
	// missing says the function's result did not arrive at all.
	missing string
	// changes lists what differs from the known change (shapes and unknown
	// fields aside); shapes the value shapes that did not come back exactly;
	// unknown the unknown fields that did not come back byte for byte.
	changes, shapes, unknown []string
}

// judgeChange judges the answer (or error) to a change request.
func (c *checker) judgeChange(req proto.Message, resp []byte, callErr error) changeVerdict {
	var v changeVerdict
	if callErr != nil && c.cb.Kind != kindResourceHook {
		v.missing = "the call failed: " + describe(callErr)
		return v
	}
	switch c.cb.Kind {
	case kindResourceTransform:
		sent := req.(*pulumirpc.TransformRequest)
		var got pulumirpc.TransformResponse
		if err := proto.Unmarshal(resp, &got); err != nil {
			v.missing = "the TransformResponse does not decode: " + err.Error()
			return v
		}
		if got.Properties == nil && got.Options == nil {
			v.missing = fmt.Sprintf("the answer carries neither properties nor options, but the function added %q and set retain_on_delete", changeKey)
			return v
		}
		want := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for k, val := range sent.GetProperties().GetFields() {
			want.Fields[k] = val
		}
		want.Fields[changeKey] = structpb.NewStringValue(changeValue)
		v.split(got.Properties, want, "properties: ")
		wantOpts := proto.Clone(sent.GetOptions()).(*pulumirpc.TransformResourceOptions)
		wantOpts.RetainOnDelete = boolp(true)
		v.options(wantOpts, got.Options, "retain_on_delete")
	case kindInvokeTransform:
		sent := req.(*pulumirpc.TransformInvokeRequest)
		var got pulumirpc.TransformInvokeResponse
		if err := proto.Unmarshal(resp, &got); err != nil {
			v.missing = "the TransformInvokeResponse does not decode: " + err.Error()
			return v
		}
		if got.Args == nil && got.Options == nil {
			v.missing = fmt.Sprintf("the answer carries neither arguments nor options, but the function added %q and set version", changeKey)
			return v
		}
		want := &structpb.Struct{Fields: map[string]*structpb.Value{}}
		for k, val := range sent.GetArgs().GetFields() {
			want.Fields[k] = val
		}
		want.Fields[changeKey] = structpb.NewStringValue(changeValue)
		v.split(got.Args, want, "args: ")
		wantOpts := proto.Clone(sent.GetOptions()).(*pulumirpc.TransformInvokeOptions)
		wantOpts.Version = changeVersion
		v.options(wantOpts, got.Options, "version")
	case kindResourceHook:
		if callErr != nil {
			if strings.Contains(statusMessage(callErr), refusal) {
				return v // refused, as a call error: the engine fails the step either way
			}
			v.missing = fmt.Sprintf("the call failed with %s, not with the function's error %q", describe(callErr), refusal)
			return v
		}
		var got pulumirpc.ResourceHookResponse
		if err := proto.Unmarshal(resp, &got); err != nil {
			v.missing = "the ResourceHookResponse does not decode: " + err.Error()
			return v
		}
		switch {
		case got.Error == "":
			v.missing = fmt.Sprintf("the hook answered success, but the function refused %s with %q", refuseName, refusal)
		case !strings.Contains(got.Error, refusal):
			v.changes = append(v.changes, fmt.Sprintf("error %q does not carry the function's %q", got.Error, refusal))
		}
	case kindErrorHook:
		var got pulumirpc.ErrorHookResponse
		if err := proto.Unmarshal(resp, &got); err != nil {
			v.missing = "the ErrorHookResponse does not decode: " + err.Error()
			return v
		}
		switch {
		case got.Error != "":
			v.changes = append(v.changes, "the error hook failed: "+got.Error)
		case !got.Retry:
			v.missing = "the answer says no retry, but the function asked to retry after the first error"
		}
	case kindStateMigration:
		var got pulumirpc.StateMigrationResponse
		if err := proto.Unmarshal(resp, &got); err != nil {
			v.missing = "the StateMigrationResponse does not decode: " + err.Error()
			return v
		}
		if len(got.NewState) == 0 {
			v.missing = fmt.Sprintf("the answer carries no new state, but the function set %s to 2", versionKey)
			return v
		}
		if len(got.Successors) > 0 {
			v.changes = append(v.changes, fmt.Sprintf("successors added: %v", got.Successors))
		}
		gotState, err := decodeJSON(got.NewState)
		if err != nil {
			v.changes = append(v.changes, "the new state is not JSON: "+err.Error())
			return v
		}
		wantState, err := decodeJSON(c.migrationState(migrationChanged))
		if err != nil {
			panic(err)
		}
		var diffs []string
		diffJSON("state", wantState, gotState, &diffs)
		for _, d := range diffs {
			if shapePath(d) {
				v.shapes = append(v.shapes, d)
			} else {
				v.changes = append(v.changes, d)
			}
		}
	}
	return v
}

// shapePath reports whether a difference is about a value shape.
func shapePath(d string) bool {
	for _, k := range shapeKeys {
		if strings.Contains(d, "."+k+" ") || strings.Contains(d, "."+k+":") || strings.Contains(d, "."+k+"[") {
			return true
		}
	}
	return false
}

// split compares the returned properties with want, the value shapes apart.
func (v *changeVerdict) split(got, want *structpb.Struct, prefix string) {
	if got == nil {
		v.changes = append(v.changes, prefix+"none returned, but the function returned them with "+changeKey)
		v.shapes = append(v.shapes, prefix+"none returned")
		return
	}
	for _, d := range diffStructs(want, got) {
		key, _, _ := strings.Cut(d, " ")
		key = strings.TrimSuffix(key, ":")
		if isShapeKey(key) {
			v.shapes = append(v.shapes, prefix+d)
		} else {
			v.changes = append(v.changes, prefix+d)
		}
	}
}

// options compares the returned options with want, field by field, then
// their unknown fields.
func (v *changeVerdict) options(want, got proto.Message, changed string) {
	if got == nil || !got.ProtoReflect().IsValid() {
		v.changes = append(v.changes, "options: none returned, but the function changed "+changed)
		v.unknown = append(v.unknown, "options: none returned")
		return
	}
	v.changes = append(v.changes, prefixed("options: ", diffKnown(want, got))...)
	v.unknown = append(v.unknown, prefixed("options: ", unknownLost(want, got))...)
}

// diffKnown names the known fields on which two messages differ, unknown
// fields (nested ones too) aside.
func diffKnown(want, got proto.Message) []string {
	w, g := proto.Clone(want), proto.Clone(got)
	dropUnknown(w.ProtoReflect())
	dropUnknown(g.ProtoReflect())
	return diffMessages(w, g)
}

func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			for i := 0; i < val.List().Len(); i++ {
				dropUnknown(val.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			val.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				dropUnknown(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Kind() == protoreflect.MessageKind:
			dropUnknown(val.Message())
		}
		return true
	})
}
