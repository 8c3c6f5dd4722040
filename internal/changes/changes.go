// Package changes works out what a callback call changed, by property
// path: two property maps (a transform's properties or arguments), two
// option messages, two migration states (JSON arrays of checkpoint
// resources), two successor maps. The module's records of calls and
// replay's Call.Changes both say it through this package, so the two
// agree path for path and value for value.
//
// Paths are properties.tags.team, options.protect, args.x,
// state[0].outputs.x, successors[URN]: a key that is not a plain identifier
// is quoted (properties["a.b"]), an index is in brackets. Values are
// written in a JSON-like form, strings quoted. A secret, and anything
// inside one, is "[secret]", two different secrets are "[secret]" and
// "[another secret]", unless secrets are shown: then a secret value is
// secret(…) and two secrets are compared by what they hold. An unknown
// value is "[unknown]". A Set works in time linear in the values' size, at
// any depth, and within its bounds.
package changes

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The signatures of Pulumi's property values (sdk go/common/resource/sig).
const (
	sigKey        = "4dabf18193072939515e22adb298388d"
	sigSecret     = "1b47061264138c4ac30d75fd1eb44270"
	sigOutput     = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
	sigByteString = "803fd3297a5875dc03ca845dda5d2a98"
	sigAsset      = "c44067f5952c0a294b673a41bacd8c17"
	sigArchive    = "0def7320c3a5731c473e5ecbe6d01bc7"
	sigResource   = "5cf8f73096256a8f31e491e813e4eb8e"
)

// unknowns are the sentinels of a value not known until the resource
// exists (a preview's), one per type.
var unknowns = map[string]bool{
	"1c4a061d-8072-4f0a-a4cb-0ff528b18fe7": true, "3eeb2bf0-c639-47a8-9e75-3b44932eb421": true,
	"04da6b54-80e4-46f7-96ec-b56ff0331ba9": true, "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2": true,
	"030794c1-ac77-496b-92df-f27374a8bd58": true, "e48ece36-62e2-4504-bad9-02848725956a": true,
	"dd056dcd-154b-4c76-9bd3-c8f88648b5ff": true,
}

// The words of a value a change does not show.
const (
	hiddenSecret = "[secret]"
	otherSecret  = "[another secret]"
	unknownWord  = "[unknown]"
)

// Change is one value a call changed: at Path, Old became New, each
// written short ("" is absent).
type Change struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Bounds bound what a Set keeps; a zero field bounds nothing.
type Bounds struct {
	Changes int // changes at most; the rest are counted
	Text    int // bytes of their paths and values at most; the rest are counted
	Value   int // bytes of one path, old or new value, cut beyond
}

// Set is what a call changed: the changes that fit its bounds, in the
// order they were found, and the count of those left out.
type Set struct {
	bounds  Bounds
	show    bool
	out     []Change
	text    int
	leftOut int
}

// New returns an empty Set, bounded by b, that shows secret values if
// showSecrets.
func New(b Bounds, showSecrets bool) *Set {
	for _, f := range []*int{&b.Changes, &b.Text, &b.Value} {
		if *f <= 0 {
			*f = math.MaxInt - 1
		}
	}
	return &Set{bounds: b, show: showSecrets}
}

// Changes returns the changes kept, and how many the bounds left out.
func (s *Set) Changes() ([]Change, int) { return s.out, s.leftOut }

// add keeps a change, if it fits; old and new render the values, and are
// called only then.
func (s *Set) add(path *node, old, new func() string) {
	if len(s.out) >= s.bounds.Changes || s.text >= s.bounds.Text {
		s.leftOut++
		return
	}
	c := Change{Path: clip(path.String(), s.bounds.Value)}
	if old != nil {
		c.Old = old()
	}
	if new != nil {
		c.New = new()
	}
	n := len(c.Path) + len(c.Old) + len(c.New)
	if s.text+n > s.bounds.Text {
		s.leftOut++
		s.text = s.bounds.Text // what follows would not fit either
		return
	}
	s.text += n
	s.out = append(s.out, c)
}

// Scalar adds a change at path from a to b, values already written, if
// they differ.
func (s *Set) Scalar(path, a, b string) {
	if a != b {
		s.add(&node{root: path, index: -1}, s.literal(a), s.literal(b))
	}
}

// literal returns the function that writes v clipped, nil for "".
func (s *Set) literal(v string) func() string {
	if v == "" {
		return nil
	}
	return func() string { return clip(v, s.bounds.Value) }
}

// Successors compares a migration's successors, URN by URN.
func (s *Set) Successors(a, b map[string]string) {
	for _, k := range union(a, b) {
		s.Scalar("successors["+k+"]", quoted(a[k]), quoted(b[k]))
	}
}

func quoted(v string) string {
	if v == "" {
		return ""
	}
	return strconv.Quote(v)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// node is a property's path as the differ descends, written out only for
// a change that is kept: writing out every prefix would take time
// quadratic in the depth.
type node struct {
	parent *node
	root   string // the path of a node without parent
	key    string
	index  int // an array index, or -1 for key
}

func (p *node) child(key string) *node { return &node{parent: p, key: key, index: -1} }
func (p *node) at(i int) *node         { return &node{parent: p, index: i} }

func (p *node) String() string {
	var segs []*node
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
			b.WriteString(joinKey("", q.key))
		}
	}
	return b.String()
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// joinKey appends key to path: .key for a plain identifier, else ["key"].
func joinKey(path, key string) string {
	if identifier.MatchString(key) {
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

// The kinds of property value the differ tells apart.
type pkind uint8

const (
	pPlain   pkind = iota // null, bool, number, string, list, object
	pSecret               // a secret, or a known output value marked secret
	pUnknown              // an unknown value, or an output value not known
	pSpecial              // an asset, an archive or a resource reference
	pBad                  // an object with a signature the protocol does not have, or malformed
)

// classify says what a property value stands for. A secret or a known
// output value gives the value inside it; a byte string gives its bytes
// as a string value.
func classify(v *structpb.Value) (pkind, *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if unknowns[k.StringValue] {
			return pUnknown, nil
		}
	case *structpb.Value_StructValue:
		f := k.StructValue.GetFields()
		sv, ok := f[sigKey]
		if !ok {
			return pPlain, v
		}
		switch sv.GetStringValue() {
		case sigSecret:
			if inner, ok := f["value"]; ok {
				return pSecret, inner
			}
		case sigOutput:
			secret, marked := f["secret"]
			if _, isBool := secret.GetKind().(*structpb.Value_BoolValue); marked && !isBool {
				return pBad, nil
			}
			if deps, ok := f["dependencies"]; ok && !stringList(deps) {
				return pBad, nil
			}
			inner, known := f["value"]
			switch {
			case !known:
				return pUnknown, nil
			case secret.GetBoolValue():
				return pSecret, inner
			}
			return classify(inner)
		case sigByteString:
			if b64, ok := f["value"].GetKind().(*structpb.Value_StringValue); ok {
				if raw, err := base64.StdEncoding.DecodeString(b64.StringValue); err == nil {
					return pPlain, structpb.NewStringValue(string(raw))
				}
			}
		case sigAsset, sigArchive, sigResource:
			return pSpecial, v
		}
		return pBad, nil
	case nil:
		return pBad, nil
	}
	return pPlain, v
}

func stringList(v *structpb.Value) bool {
	l, ok := v.GetKind().(*structpb.Value_ListValue)
	if !ok {
		return false
	}
	for _, e := range l.ListValue.GetValues() {
		if _, ok := e.GetKind().(*structpb.Value_StringValue); !ok {
			return false
		}
	}
	return true
}

// wellFormedValue reports whether v, and every value inside it, is one
// the protocol has: replay then compares it as property values, else as
// plain JSON.
func wellFormedValue(v *structpb.Value) bool {
	k, inner := classify(v)
	switch k {
	case pBad:
		return false
	case pSecret:
		return wellFormedValue(inner)
	case pPlain:
		switch x := inner.GetKind().(type) {
		case *structpb.Value_ListValue:
			for _, e := range x.ListValue.GetValues() {
				if !wellFormedValue(e) {
					return false
				}
			}
		case *structpb.Value_StructValue:
			for _, e := range x.StructValue.GetFields() {
				if !wellFormedValue(e) {
					return false
				}
			}
		}
	}
	return true
}

// Structs compares two property maps (nil is empty) under the path root:
// as property values, or as plain JSON (secrets still hidden) when either
// holds a value the protocol does not. Output values compare as what they
// hold, any two unknown values are equal. A map that is itself a secret's
// envelope is taken for a secret.
func (s *Set) Structs(root string, a, b *structpb.Struct) {
	path := &node{root: root, index: -1}
	va, vb := structpb.NewStructValue(a), structpb.NewStructValue(b)
	if wellFormedValue(va) && wellFormedValue(vb) {
		s.value(path, va, vb)
		return
	}
	s.json(path, a.AsMap(), b.AsMap())
}

// union returns the keys of a and b, in order.
func union[V, W any](a map[string]V, b map[string]W) []string {
	keys := slices.Collect(mapKeys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (s *Set) fields(path *node, a, b map[string]*structpb.Value) {
	for _, k := range union(a, b) {
		va, inA := a[k]
		vb, inB := b[k]
		switch {
		case !inA:
			s.add(path.child(k), nil, s.render(vb))
		case !inB:
			s.add(path.child(k), s.render(va), nil)
		default:
			s.value(path.child(k), va, vb)
		}
	}
}

func (s *Set) value(path *node, a, b *structpb.Value) {
	ka, ia := classify(a)
	kb, ib := classify(b)
	if s.show && ka == pSecret && kb == pSecret {
		// Shown: two secrets differ in what they hold.
		s.value(path, ia, ib)
		return
	}
	if ka == pPlain && kb == pPlain {
		if oa, ok := ia.GetKind().(*structpb.Value_StructValue); ok {
			if ob, ok := ib.GetKind().(*structpb.Value_StructValue); ok {
				s.fields(path, oa.StructValue.GetFields(), ob.StructValue.GetFields())
				return
			}
		}
		if la, ok := ia.GetKind().(*structpb.Value_ListValue); ok {
			if lb, ok := ib.GetKind().(*structpb.Value_ListValue); ok {
				xa, xb := la.ListValue.GetValues(), lb.ListValue.GetValues()
				for i := range max(len(xa), len(xb)) {
					switch {
					case i >= len(xa):
						s.add(path.at(i), nil, s.render(xb[i]))
					case i >= len(xb):
						s.add(path.at(i), s.render(xa[i]), nil)
					default:
						s.value(path.at(i), xa[i], xb[i])
					}
				}
				return
			}
		}
	}
	if equal(a, b) {
		return
	}
	if ka == pSecret && kb == pSecret {
		// Two different secrets: say so without showing either.
		s.add(path, func() string { return hiddenSecret }, func() string { return otherSecret })
		return
	}
	s.add(path, s.render(a), s.render(b))
}

// equal reports whether two property values are the same value: output
// values compare as what they hold, and any two unknown values are equal.
func equal(a, b *structpb.Value) bool {
	ka, ia := classify(a)
	kb, ib := classify(b)
	if ka != kb {
		return false
	}
	switch ka {
	case pSecret:
		return equal(ia, ib)
	case pUnknown:
		return true
	case pSpecial, pBad:
		return proto.Equal(a, b)
	}
	switch x := ia.GetKind().(type) {
	case *structpb.Value_ListValue:
		y, ok := ib.GetKind().(*structpb.Value_ListValue)
		if !ok || len(x.ListValue.GetValues()) != len(y.ListValue.GetValues()) {
			return false
		}
		for i, e := range x.ListValue.GetValues() {
			if !equal(e, y.ListValue.GetValues()[i]) {
				return false
			}
		}
		return true
	case *structpb.Value_StructValue:
		y, ok := ib.GetKind().(*structpb.Value_StructValue)
		if !ok || len(x.StructValue.GetFields()) != len(y.StructValue.GetFields()) {
			return false
		}
		for k, e := range x.StructValue.GetFields() {
			f, ok := y.StructValue.GetFields()[k]
			if !ok || !equal(e, f) {
				return false
			}
		}
		return true
	}
	return proto.Equal(ia, ib)
}

// render returns the function that writes v short.
func (s *Set) render(v *structpb.Value) func() string {
	return func() string {
		w := &limited{max: s.bounds.Value, show: s.show}
		writeValue(w, v)
		return w.String()
	}
}

// limited is a builder that keeps what fits its bound, and marks the cut:
// rendering a large value stops once it is longer than the bound.
type limited struct {
	b    strings.Builder
	max  int
	show bool // secret values
}

func (w *limited) full() bool { return w.b.Len() > w.max }

func (w *limited) WriteString(s string) {
	if w.full() {
		return
	}
	w.b.WriteString(s[:min(len(s), w.max+1-w.b.Len())])
}

func (w *limited) String() string { return clip(w.b.String(), w.max) }

// writeValue writes a property value in a JSON-like form: strings quoted,
// objects with their keys in order, a secret as [secret], an unknown value
// as [unknown], an asset or archive by its hash, a resource reference by
// its URN.
func writeValue(w *limited, v *structpb.Value) {
	if w.full() {
		return
	}
	k, inner := classify(v)
	switch k {
	case pSecret:
		if !w.show {
			w.WriteString(hiddenSecret)
			return
		}
		w.WriteString("secret(")
		writeValue(w, inner)
		w.WriteString(")")
		return
	case pUnknown:
		w.WriteString(unknownWord)
		return
	case pSpecial:
		f := v.GetStructValue().GetFields()
		switch f[sigKey].GetStringValue() {
		case sigResource:
			w.WriteString("resource(" + f["urn"].GetStringValue() + ")")
		case sigAsset:
			w.WriteString("asset(" + f["hash"].GetStringValue() + ")")
		default:
			w.WriteString("archive(" + f["hash"].GetStringValue() + ")")
		}
		return
	case pBad:
		writeJSON(w, v.AsInterface())
		return
	}
	switch x := inner.GetKind().(type) {
	case *structpb.Value_NullValue:
		w.WriteString("null")
	case *structpb.Value_BoolValue:
		w.WriteString(strconv.FormatBool(x.BoolValue))
	case *structpb.Value_NumberValue:
		w.WriteString(strconv.FormatFloat(x.NumberValue, 'f', -1, 64))
	case *structpb.Value_StringValue:
		w.WriteString(strconv.Quote(x.StringValue))
	case *structpb.Value_ListValue:
		w.WriteString("[")
		for i, e := range x.ListValue.GetValues() {
			if i > 0 {
				w.WriteString(", ")
			}
			writeValue(w, e)
			if w.full() {
				return
			}
		}
		w.WriteString("]")
	case *structpb.Value_StructValue:
		f := x.StructValue.GetFields()
		w.WriteString("{")
		for i, k := range slices.Sorted(mapKeys(f)) {
			if i > 0 {
				w.WriteString(", ")
			}
			w.WriteString(strconv.Quote(k) + ": ")
			writeValue(w, f[k])
			if w.full() {
				return
			}
		}
		w.WriteString("}")
	}
}

// isSecret reports whether a decoded JSON object is a secret: a property
// value's envelope ({sig: secret, "value": …}), a checkpoint's ({sig:
// secret, "plaintext" or "ciphertext": …}), or an output value that is not
// plainly marked as no secret.
func isSecret(m map[string]any) bool {
	switch m[sigKey] {
	case sigSecret:
		return true
	case sigOutput:
		s, present := m["secret"]
		return present && s != false
	}
	return false
}

// Redact returns decoded JSON v, changed in place, with the value of every
// secret inside it replaced: a secret is {sig: secret, "value":
// "[secret]"}, an unknown output value marked secret {sig: output,
// "secret": true}.
func Redact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if isSecret(x) {
			if _, known := x["value"]; x[sigKey] == sigOutput && !known {
				return map[string]any{sigKey: sigOutput, "secret": true}
			}
			return map[string]any{sigKey: sigSecret, "value": hiddenSecret}
		}
		for k, e := range x {
			x[k] = Redact(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = Redact(e)
		}
		return x
	}
	return v
}

// Options compares two option messages (nil is empty) under the path root,
// field by field, through the protocol's JSON form, so that every field the
// protocol adds is compared too.
func (s *Set) Options(root string, a, b proto.Message) {
	s.json(&node{root: root, index: -1}, OptionMap(a), OptionMap(b))
}

// OptionMap returns the protocol's JSON form of an option message, decoded,
// without the fields at their zero value: an SDK sets protect: false where
// the request left it out, which is no change.
func OptionMap(m proto.Message) map[string]any {
	out := map[string]any{}
	if m == nil || !m.ProtoReflect().IsValid() {
		return out
	}
	b, err := protojson.Marshal(m)
	if err != nil || json.Unmarshal(b, &out) != nil {
		return map[string]any{}
	}
	for k, v := range out {
		if zero(v) {
			delete(out, k)
		}
	}
	return out
}

func zero(v any) bool {
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

// json compares two decoded JSON values, a secret envelope as a secret.
func (s *Set) json(path *node, a, b any) {
	if ma, ok := a.(map[string]any); ok && !isSecret(ma) {
		if mb, ok := b.(map[string]any); ok && !isSecret(mb) {
			for _, k := range union(ma, mb) {
				va, inA := ma[k]
				vb, inB := mb[k]
				switch {
				case !inA:
					s.add(path.child(k), nil, s.renderJSON(vb))
				case !inB:
					s.add(path.child(k), s.renderJSON(va), nil)
				default:
					s.json(path.child(k), va, vb)
				}
			}
			return
		}
	}
	if xa, ok := a.([]any); ok {
		if xb, ok := b.([]any); ok {
			for i := range max(len(xa), len(xb)) {
				switch {
				case i >= len(xa):
					s.add(path.at(i), nil, s.renderJSON(xb[i]))
				case i >= len(xb):
					s.add(path.at(i), s.renderJSON(xa[i]), nil)
				default:
					s.json(path.at(i), xa[i], xb[i])
				}
			}
			return
		}
	}
	if jsonEqual(a, b) {
		return
	}
	if !s.show && secretJSON(a) && secretJSON(b) {
		s.add(path, func() string { return hiddenSecret }, func() string { return otherSecret })
		return
	}
	s.add(path, s.renderJSON(a), s.renderJSON(b))
}

func secretJSON(v any) bool {
	m, ok := v.(map[string]any)
	return ok && isSecret(m)
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func (s *Set) renderJSON(v any) func() string {
	return func() string {
		w := &limited{max: s.bounds.Value, show: s.show}
		writeJSON(w, v)
		return w.String()
	}
}

// writeJSON writes decoded JSON compactly, keys in order, a secret
// envelope as [secret].
func writeJSON(w *limited, v any) {
	if w.full() {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		if isSecret(x) && !w.show {
			w.WriteString(hiddenSecret)
			return
		}
		w.WriteString("{")
		for i, k := range slices.Sorted(mapKeys(x)) {
			if i > 0 {
				w.WriteString(",")
			}
			writeScalar(w, k)
			w.WriteString(":")
			writeJSON(w, x[k])
			if w.full() {
				return
			}
		}
		w.WriteString("}")
	case []any:
		w.WriteString("[")
		for i, e := range x {
			if i > 0 {
				w.WriteString(",")
			}
			writeJSON(w, e)
			if w.full() {
				return
			}
		}
		w.WriteString("]")
	default:
		writeScalar(w, x)
	}
}

func writeScalar(w *limited, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		w.WriteString("null")
		return
	}
	w.WriteString(string(b))
}

// States compares two migration states (JSON arrays of checkpoint
// resources), resources matched by URN: each resource of the new state at
// its index there, one the new state lacks at its index in the old. A
// state that is not such an array is compared whole, at "state".
func (s *Set) States(a, b []byte) {
	ra, errA := decodeState(a)
	rb, errB := decodeState(b)
	if errA != nil || errB != nil {
		if !bytes.Equal(a, b) {
			s.add(&node{root: "state", index: -1}, s.stateText(a), s.stateText(b))
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
		p := &node{root: "state[" + strconv.Itoa(i) + "]", index: -1}
		u, _ := r["urn"].(string)
		j, ok := old[u]
		if !ok {
			s.add(p, nil, s.renderJSON(r))
			continue
		}
		kept[j] = true
		s.json(p, ra[j], r)
	}
	for j, r := range ra {
		if !kept[j] {
			s.add(&node{root: "state[" + strconv.Itoa(j) + "]", index: -1}, s.renderJSON(r), nil)
		}
	}
}

// stateText is a state that is not an array of resources, written short;
// nil for none.
func (s *Set) stateText(b []byte) func() string {
	if len(b) == 0 {
		return nil
	}
	return func() string {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return "[not JSON]"
		}
		w := &limited{max: s.bounds.Value, show: s.show}
		writeJSON(w, v)
		return w.String()
	}
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
