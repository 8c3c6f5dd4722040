package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/wire"
)

// Change is one value a call changed: at Path, Old became New.
//
// Paths start with what changed: "properties.tags.team" and
// "options.protect" for a resource transform, "args.x" for an invoke
// transform, "state[0].outputs.x" (the index in the new state, or in the
// old one for a resource the migration removed) and "successors[URN]" for a
// state migration, "retry" and "error" for hooks. A key that is not a plain
// identifier is quoted: properties["a.b"]; an index is in brackets:
// properties.items[0]. [IgnorePaths] takes paths in the same form.
//
// Old and New are the values rendered in a JSON-like form (strings quoted);
// "" means absent. A secret value is "[secret]" unless ShowSecrets was
// asked for (then secret("…") where it is not a secret on both sides); two
// different secrets are "[secret]" and "[another secret]"; an unknown value
// is "[unknown]".
type Change struct {
	Path     string
	Old, New string
}

// Secrets says whether [Call.Changes] shows secret values. The zero value
// is HideSecrets.
type Secrets int

const (
	// HideSecrets shows every secret value as "[secret]".
	HideSecrets Secrets = iota
	// ShowSecrets shows secret values in full, as secret("…").
	ShowSecrets
)

// Changes returns what the call changed: the properties (then the options)
// a transform changed, each in path order (an option at its zero value
// counts as absent, and an output value as the value it holds; old is the
// request, new the response), the state a migration changed, an error
// hook's retry decision (always one Change, "retry"), a hook's refusal
// ("error"). A failed call, or payloads that do not decode, changed
// nothing. Secret values are shown as "[secret]" unless show is
// ShowSecrets.
func (c *Call) Changes(show Secrets) []Change {
	secrets := show == ShowSecrets
	if c.Err != "" {
		return nil
	}
	req, res, err := c.Messages()
	if err != nil || res == nil {
		return nil
	}
	row := rowOf(c.Kind)
	if row.changes != nil {
		return row.changes(res)
	}
	return diffResponses(req, identity(row, req), res, secrets)
}

// identity is the answer to req that changes nothing.
func identity(row *kindRow, req proto.Message) proto.Message {
	if row.identity != nil {
		return row.identity(req)
	}
	return row.res.New().Interface()
}

// Outcome is how a call ended, in a word, as [Call.Outcome] sums it up.
type Outcome string

// The outcomes of a call. A Pending call is OutcomeUnanswered, a call the
// engine got an error from is OutcomeFailed; otherwise the word depends on
// the kind.
const (
	// OutcomeUnanswered: the log holds no answer to the call (Pending).
	OutcomeUnanswered Outcome = "unanswered"
	// OutcomeFailed: the engine got an error, or an error hook answered
	// with one, or the payloads do not decode.
	OutcomeFailed Outcome = "failed"
	// OutcomeChanged: a transform changed its properties or options.
	OutcomeChanged Outcome = "changed"
	// OutcomeUnchanged: a transform or a state migration changed nothing.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeOK: a resource hook let the step go on.
	OutcomeOK Outcome = "ok"
	// OutcomeRefused: a resource hook refused the step.
	OutcomeRefused Outcome = "refused"
	// OutcomeRetry: an error hook asked for the failed step again.
	OutcomeRetry Outcome = "retry"
	// OutcomeNoRetry: an error hook let the failure stand.
	OutcomeNoRetry Outcome = "no retry"
	// OutcomeMigrated: a state migration changed the state.
	OutcomeMigrated Outcome = "migrated"
)

// Outcome sums the call up in a word, and the message that goes with it:
//   - OutcomeUnanswered for a Pending call, which the log holds no answer to;
//   - OutcomeFailed and the error, for a call the engine got an error from;
//   - OutcomeChanged or OutcomeUnchanged for a transform;
//   - OutcomeRefused and the hook's message, or OutcomeOK, for a resource
//     hook;
//   - OutcomeRetry or OutcomeNoRetry for an error hook (OutcomeFailed and
//     its message if it answered with an error);
//   - OutcomeMigrated or OutcomeUnchanged for a state migration.
func (c *Call) Outcome() (word Outcome, message string) {
	if c.Pending {
		return OutcomeUnanswered, ""
	}
	if c.Err != "" {
		return OutcomeFailed, c.Err
	}
	_, res, err := c.Messages()
	if err != nil {
		return OutcomeFailed, err.Error()
	}
	if res == nil {
		return OutcomeFailed, ""
	}
	row := rowOf(c.Kind)
	switch {
	case row.outcome != nil:
		return row.outcome(res)
	case len(c.Changes(HideSecrets)) == 0:
		return OutcomeUnchanged, ""
	}
	return row.changed, ""
}

// diffResponses compares two responses a and b of the same kind, answers to
// req: a transform's properties and options (a field a response leaves out
// keeps the request's), a migration's new state and successors, a hook's
// error and retry decision. Replaying uses it for "recorded answer against
// current answer"; Changes, with a response that changes nothing as a.
func diffResponses(req, a, b proto.Message, secrets bool) []Change {
	d := &differ{secrets: secrets}
	if row := rowOfRequest(req); row != nil {
		row.diff(d, req, a, b)
	}
	return d.out
}

func orBytes(b, dflt []byte) []byte {
	if len(b) == 0 {
		return dflt
	}
	return b
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

type differ struct {
	secrets bool
	out     []Change
}

func (d *differ) scalar(path, a, b string) {
	if a != b {
		d.out = append(d.out, Change{Path: path, Old: a, New: b})
	}
}

// properties converts a protobuf Struct into the SDK's property values, by
// the rules of the SDK's plugin.UnmarshalProperties with secrets, unknowns,
// resource references and output values kept, in time linear in its size at
// any depth; a Struct those rules refuse is compared as plain JSON instead.
func properties(s *structpb.Struct) (m resource.PropertyMap, ok bool) {
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
	if err != nil {
		return nil, false
	}
	return m, true
}

func (d *differ) structs(path string, a, b *structpb.Struct) {
	pa, okA := properties(a)
	pb, okB := properties(b)
	if okA && okB {
		d.propertyMaps(&propPath{root: path, index: -1}, pa, pb)
		return
	}
	d.json(path, a.AsMap(), b.AsMap())
}

// propPath is a property's path as the differ descends, written out only
// for a change: writing out every prefix would take time quadratic in the
// depth.
type propPath struct {
	parent *propPath
	root   string // the path of the root, which has no parent
	key    string
	index  int // an array index, or -1 for key
}

func (p *propPath) child(key string) *propPath { return &propPath{parent: p, key: key, index: -1} }
func (p *propPath) at(i int) *propPath         { return &propPath{parent: p, index: i} }

func (p *propPath) String() string {
	var segs []*propPath
	q := p
	for ; q.parent != nil; q = q.parent {
		segs = append(segs, q)
	}
	var b strings.Builder
	b.WriteString(q.root)
	for i := len(segs) - 1; i >= 0; i-- {
		if q := segs[i]; q.index >= 0 {
			b.WriteString("[" + strconv.Itoa(q.index) + "]")
		} else {
			b.WriteString(joinPath("", q.key))
		}
	}
	return b.String()
}

func (d *differ) propertyMaps(path *propPath, a, b resource.PropertyMap) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, string(k))
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, string(k))
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		va, inA := a[resource.PropertyKey(k)]
		vb, inB := b[resource.PropertyKey(k)]
		p := path.child(k)
		switch {
		case !inA:
			d.out = append(d.out, Change{Path: p.String(), New: d.render(vb)})
		case !inB:
			d.out = append(d.out, Change{Path: p.String(), Old: d.render(va)})
		default:
			d.property(p, va, vb)
		}
	}
}

func (d *differ) property(path *propPath, a, b resource.PropertyValue) {
	a, b = plain(a), plain(b)
	if d.secrets {
		// Shown in full: a secret and its value differ only in the mark.
		if a.IsSecret() && b.IsSecret() {
			d.property(path, a.SecretValue().Element, b.SecretValue().Element)
			return
		}
	}
	switch {
	case a.IsObject() && b.IsObject():
		d.propertyMaps(path, a.ObjectValue(), b.ObjectValue())
	case a.IsArray() && b.IsArray():
		xa, xb := a.ArrayValue(), b.ArrayValue()
		for i := range max(len(xa), len(xb)) {
			p := path.at(i)
			switch {
			case i >= len(xa):
				d.out = append(d.out, Change{Path: p.String(), New: d.render(xb[i])})
			case i >= len(xb):
				d.out = append(d.out, Change{Path: p.String(), Old: d.render(xa[i])})
			default:
				d.property(p, xa[i], xb[i])
			}
		}
	case a.DeepEquals(b):
	default:
		ra, rb := d.render(a), d.render(b)
		if ra == rb && !d.secrets {
			// Two different secrets: say so without showing either.
			ra, rb = "[secret]", "[another secret]"
		}
		d.out = append(d.out, Change{Path: path.String(), Old: ra, New: rb})
	}
}

// plain returns a known output value as the value it holds (a secret if it
// is secret) and an unknown one as a computed value: an SDK sends a secret
// as an output value and gets it back as a secret, which is no change.
func plain(v resource.PropertyValue) resource.PropertyValue {
	if !v.IsOutput() {
		return v
	}
	o := v.OutputValue()
	if !o.Known {
		return resource.MakeComputed(resource.NewProperty(""))
	}
	if o.Secret {
		return resource.MakeSecret(o.Element)
	}
	return o.Element
}

// render writes a property value in a JSON-like form.
func (d *differ) render(v resource.PropertyValue) string {
	var b strings.Builder
	d.write(&b, v)
	return b.String()
}

func (d *differ) write(b *strings.Builder, v resource.PropertyValue) {
	switch {
	case v.IsNull():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.BoolValue()))
	case v.IsNumber():
		b.WriteString(strconv.FormatFloat(v.NumberValue(), 'f', -1, 64))
	case v.IsString():
		b.WriteString(strconv.Quote(v.StringValue()))
	case v.IsArray():
		b.WriteByte('[')
		for i, x := range v.ArrayValue() {
			if i > 0 {
				b.WriteString(", ")
			}
			d.write(b, x)
		}
		b.WriteByte(']')
	case v.IsObject():
		m := v.ObjectValue()
		b.WriteByte('{')
		for i, k := range m.StableKeys() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(string(k)))
			b.WriteString(": ")
			d.write(b, m[k])
		}
		b.WriteByte('}')
	case v.IsSecret():
		if !d.secrets {
			b.WriteString("[secret]")
			return
		}
		b.WriteString("secret(")
		d.write(b, v.SecretValue().Element)
		b.WriteByte(')')
	case v.IsComputed():
		b.WriteString("[unknown]")
	case v.IsOutput():
		o := v.OutputValue()
		switch {
		case o.Secret && !d.secrets:
			b.WriteString("[secret]")
		case !o.Known:
			b.WriteString("[unknown]")
		default:
			d.write(b, o.Element)
		}
	case v.IsResourceReference():
		fmt.Fprintf(b, "resource(%s)", v.ResourceReferenceValue().URN)
	case v.IsAsset():
		fmt.Fprintf(b, "asset(%s)", v.AssetValue().Hash)
	case v.IsArchive():
		fmt.Fprintf(b, "archive(%s)", v.ArchiveValue().Hash)
	default:
		b.WriteString(v.String())
	}
}

// options compares two option messages field by field, through their JSON
// form, so every field the protocol adds is compared too.
func (d *differ) options(path string, a, b proto.Message) {
	d.json(path, messageMap(a), messageMap(b))
}

func messageMap(m proto.Message) map[string]any {
	if m == nil || !m.ProtoReflect().IsValid() {
		return map[string]any{}
	}
	bs, err := protojson.Marshal(m)
	if err != nil {
		return map[string]any{}
	}
	var out map[string]any
	if json.Unmarshal(bs, &out) != nil {
		return map[string]any{}
	}
	for k, v := range out {
		if isZero(v) {
			delete(out, k)
		}
	}
	return out
}

// isZero reports whether an option is at its zero value, which counts as
// absent: an SDK sets protect: false where the request left it out.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// json compares decoded JSON values; secret envelopes are shown as
// "[secret]" unless secrets were asked for.
func (d *differ) json(path string, a, b any) {
	if ma, ok := a.(map[string]any); ok && !isSecretEnvelope(ma) {
		if mb, ok := b.(map[string]any); ok && !isSecretEnvelope(mb) {
			keys := make([]string, 0, len(ma)+len(mb))
			for k := range ma {
				keys = append(keys, k)
			}
			for k := range mb {
				if _, ok := ma[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				va, inA := ma[k]
				vb, inB := mb[k]
				p := joinPath(path, k)
				switch {
				case !inA:
					d.out = append(d.out, Change{Path: p, New: d.renderJSON(vb)})
				case !inB:
					d.out = append(d.out, Change{Path: p, Old: d.renderJSON(va)})
				default:
					d.json(p, va, vb)
				}
			}
			return
		}
	}
	if xa, ok := a.([]any); ok {
		if xb, ok := b.([]any); ok {
			for i := range max(len(xa), len(xb)) {
				p := path + "[" + strconv.Itoa(i) + "]"
				switch {
				case i >= len(xa):
					d.out = append(d.out, Change{Path: p, New: d.renderJSON(xb[i])})
				case i >= len(xb):
					d.out = append(d.out, Change{Path: p, Old: d.renderJSON(xa[i])})
				default:
					d.json(p, xa[i], xb[i])
				}
			}
			return
		}
	}
	ra, rb := d.renderJSON(a), d.renderJSON(b)
	if ra == rb {
		if jsonEqual(a, b) {
			return
		}
		ra, rb = "[secret]", "[another secret]"
	}
	d.out = append(d.out, Change{Path: path, Old: ra, New: rb})
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func (d *differ) renderJSON(v any) string {
	if !d.secrets {
		v = redactJSON(v)
	}
	bs, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.ReplaceAll(string(bs), `"\u003csecret\u003e"`, "[secret]")
}

// redactJSON returns v with every secret envelope replaced.
func redactJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if isSecretEnvelope(v) {
			return "<secret>"
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = redactJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactJSON(x)
		}
		return out
	}
	return v
}

// states compares two migration states (JSON arrays of checkpoint
// resources), resources matched by URN.
func (d *differ) states(a, b []byte) {
	ra, errA := decodeState(a)
	rb, errB := decodeState(b)
	if errA != nil || errB != nil {
		if !bytes.Equal(a, b) {
			d.out = append(d.out, Change{Path: "state", Old: d.stateText(a), New: d.stateText(b)})
		}
		return
	}
	old := map[string]int{}
	for i, r := range ra {
		if u, ok := r["urn"].(string); ok {
			old[u] = i
		}
	}
	kept := map[int]bool{}
	for i, r := range rb {
		p := "state[" + strconv.Itoa(i) + "]"
		u, _ := r["urn"].(string)
		j, ok := old[u]
		if !ok {
			d.out = append(d.out, Change{Path: p, New: d.renderJSON(r)})
			continue
		}
		kept[j] = true
		d.json(p, ra[j], r)
	}
	for j, r := range ra {
		if !kept[j] {
			d.out = append(d.out, Change{Path: "state[" + strconv.Itoa(j) + "]", Old: d.renderJSON(r)})
		}
	}
}

func (d *differ) stateText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return "[not JSON]"
	}
	return d.renderJSON(v)
}

func decodeState(b []byte) ([]map[string]any, error) {
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

func (d *differ) successors(a, b map[string]string) {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		d.scalar("successors["+k+"]", quoteOrEmpty(a[k]), quoteOrEmpty(b[k]))
	}
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

func joinPath(path, key string) string {
	if identifier.MatchString(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}
