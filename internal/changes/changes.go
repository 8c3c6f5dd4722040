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
// "[another secret]", unless secrets are shown: then a secret property
// value is secret(…), two secret property values are compared by what
// they hold, and a secret in plain JSON (options, states) is written as it
// is. An unknown value is "[unknown]". A Set works in time linear in the
// values' size, at any depth, and within its bounds.
package changes

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
	c := Change{Path: Clip(path.String(), s.bounds.Value)}
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
	return func() string { return Clip(v, s.bounds.Value) }
}

// Successors compares a migration's successors, URN by URN.
func (s *Set) Successors(a, b map[string]string) {
	quoted := func(v string) string {
		if v == "" {
			return ""
		}
		return strconv.Quote(v)
	}
	for _, k := range union(a, b) {
		s.Scalar("successors["+k+"]", quoted(a[k]), quoted(b[k]))
	}
}

// union returns the keys of a and b, in order.
func union[V, W any](a map[string]V, b map[string]W) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// Clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func Clip(s string, n int) string {
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

func (p *node) String() string {
	var segs []*node
	q := p
	for ; q.parent != nil; q = q.parent {
		segs = append(segs, q)
	}
	var b strings.Builder
	b.WriteString(q.root)
	for i := len(segs) - 1; i >= 0; i-- {
		switch q := segs[i]; {
		case q.index >= 0:
			b.WriteString("[" + strconv.Itoa(q.index) + "]")
		case identifier.MatchString(q.key):
			b.WriteString("." + q.key)
		default:
			b.WriteString("[" + strconv.Quote(q.key) + "]")
		}
	}
	return b.String()
}

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// The kinds of value the differ tells apart. Compared as plain JSON, a
// value is a secret or plain.
type pkind uint8

const (
	pPlain   pkind = iota // null, bool, number, string, list, object
	pSecret               // a secret, or a known output value marked secret
	pUnknown              // an unknown value, or an output value not known
	pSpecial              // an asset, an archive or a resource reference
	pBad                  // an object with a signature the protocol does not have, or malformed
)

// classify says what a property value (in its structpb form's JSON) stands
// for. A secret or a known output value gives the value inside it; a byte
// string gives its bytes as a string value.
func classify(v any) (pkind, any) {
	switch x := v.(type) {
	case string:
		if unknowns[x] {
			return pUnknown, nil
		}
	case map[string]any:
		sv, ok := x[sigKey]
		if !ok {
			return pPlain, v
		}
		switch sv {
		case sigSecret:
			if inner, ok := x["value"]; ok {
				return pSecret, inner
			}
		case sigOutput:
			secret, marked := x["secret"]
			if _, isBool := secret.(bool); marked && !isBool {
				return pBad, nil
			}
			if deps, ok := x["dependencies"]; ok && !stringList(deps) {
				return pBad, nil
			}
			inner, known := x["value"]
			switch {
			case !known:
				return pUnknown, nil
			case secret == true:
				return pSecret, inner
			}
			return classify(inner)
		case sigByteString:
			if b64, ok := x["value"].(string); ok {
				if raw, err := base64.StdEncoding.DecodeString(b64); err == nil {
					return pPlain, string(raw)
				}
			}
		case sigAsset, sigArchive, sigResource:
			return pSpecial, v
		}
		return pBad, nil
	}
	return pPlain, v
}

// kind is classify for a property value, and for plain JSON only whether
// v is a secret.
func kind(v any, props bool) (pkind, any) {
	if props {
		return classify(v)
	}
	if m, ok := v.(map[string]any); ok && IsSecret(m) {
		return pSecret, v
	}
	return pPlain, v
}

func stringList(v any) bool {
	l, ok := v.([]any)
	for _, e := range l {
		if _, ok := e.(string); !ok {
			return false
		}
	}
	return ok
}

// wellFormed reports whether v, and every value inside it, is one the
// protocol has: it is then compared as property values, else as plain JSON.
func wellFormed(v any) bool {
	k, inner := classify(v)
	switch k {
	case pBad:
		return false
	case pSecret:
		return wellFormed(inner)
	case pPlain:
		switch x := inner.(type) {
		case []any:
			return !slices.ContainsFunc(x, func(e any) bool { return !wellFormed(e) })
		case map[string]any:
			for _, e := range x {
				if !wellFormed(e) {
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
	va, vb := any(a.AsMap()), any(b.AsMap())
	props := wellFormed(va) && wellFormed(vb)
	s.walk(&node{root: root, index: -1}, va, vb, props)
}

// walk compares a and b at path, as property values if props, else as
// plain JSON.
func (s *Set) walk(path *node, a, b any, props bool) {
	ka, ia := kind(a, props)
	kb, ib := kind(b, props)
	if props && s.show && ka == pSecret && kb == pSecret {
		s.walk(path, ia, ib, props) // shown: two secrets differ in what they hold
		return
	}
	if ka == pPlain && kb == pPlain {
		switch x := ia.(type) {
		case map[string]any:
			if y, ok := ib.(map[string]any); ok {
				for _, k := range union(x, y) {
					va, inA := x[k]
					vb, inB := y[k]
					s.member(&node{parent: path, key: k, index: -1}, va, vb, inA, inB, props)
				}
				return
			}
		case []any:
			if y, ok := ib.([]any); ok {
				for i := range max(len(x), len(y)) {
					va, vb := at(x, i), at(y, i)
					s.member(&node{parent: path, index: i}, va, vb, i < len(x), i < len(y), props)
				}
				return
			}
		}
	}
	switch {
	case equal(a, b, props):
	case !s.show && ka == pSecret && kb == pSecret:
		// Two different secrets: say so without showing either.
		s.add(path, func() string { return hiddenSecret }, func() string { return otherSecret })
	default:
		s.add(path, s.render(a, props), s.render(b, props))
	}
}

func at(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

// member compares a member of two maps or lists, present in a if inA and
// in b if inB.
func (s *Set) member(path *node, a, b any, inA, inB, props bool) {
	switch {
	case !inA:
		s.add(path, nil, s.render(b, props))
	case !inB:
		s.add(path, s.render(a, props), nil)
	default:
		s.walk(path, a, b, props)
	}
}

// equal reports whether two values are the same value: as property values
// (props), output values compare as what they hold and any two unknown
// values are equal; as plain JSON, by their JSON text.
func equal(a, b any, props bool) bool {
	if !props {
		return jsonEqual(a, b)
	}
	ka, ia := classify(a)
	kb, ib := classify(b)
	if ka != kb {
		return false
	}
	switch ka {
	case pSecret:
		return equal(ia, ib, true)
	case pUnknown:
		return true
	case pSpecial, pBad:
		return jsonEqual(a, b)
	}
	switch x := ia.(type) {
	case []any:
		y, ok := ib.([]any)
		return ok && slices.EqualFunc(x, y, func(e, f any) bool { return equal(e, f, true) })
	case map[string]any:
		y, ok := ib.(map[string]any)
		return ok && maps.EqualFunc(x, y, func(e, f any) bool { return equal(e, f, true) })
	}
	return ia == ib // scalars; a scalar and a list or an object differ
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// render returns the function that writes v short.
func (s *Set) render(v any, props bool) func() string {
	return func() string {
		w := &limited{max: s.bounds.Value, show: s.show}
		w.value(v, props)
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

func (w *limited) String() string { return Clip(w.b.String(), w.max) }

// value writes v: a property value (props) in a JSON-like form, strings
// quoted, objects with their keys in order and ", " between members, a
// secret as [secret] or secret(…), an unknown value as [unknown], an asset
// or archive by its hash, a resource reference by its URN; plain JSON
// compactly, keys in order, a secret envelope as [secret] unless shown.
func (w *limited) value(v any, props bool) {
	if w.full() {
		return
	}
	k, inner := kind(v, props)
	switch k {
	case pSecret:
		switch {
		case !w.show:
			w.WriteString(hiddenSecret)
			return
		case props:
			w.WriteString("secret(")
			w.value(inner, true)
			w.WriteString(")")
			return
		}
	case pUnknown:
		w.WriteString("[unknown]")
		return
	case pSpecial:
		f := v.(map[string]any)
		switch f[sigKey] {
		case sigResource:
			w.WriteString("resource(" + str(f["urn"]) + ")")
		case sigAsset:
			w.WriteString("asset(" + str(f["hash"]) + ")")
		default:
			w.WriteString("archive(" + str(f["hash"]) + ")")
		}
		return
	case pBad:
		w.value(v, false)
		return
	}
	sep, colon := ",", ":"
	if props {
		sep, colon = ", ", ": "
	}
	switch x := inner.(type) {
	case []any:
		w.WriteString("[")
		for i, e := range x {
			if i > 0 {
				w.WriteString(sep)
			}
			if w.value(e, props); w.full() {
				return
			}
		}
		w.WriteString("]")
	case map[string]any:
		w.WriteString("{")
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				w.WriteString(sep)
			}
			w.scalar(k, props)
			w.WriteString(colon)
			if w.value(x[k], props); w.full() {
				return
			}
		}
		w.WriteString("}")
	default:
		w.scalar(x, props)
	}
}

// scalar writes a number, a string, a bool or null: as a property value
// (props), a number in full and a string Go-quoted; else as JSON.
func (w *limited) scalar(v any, props bool) {
	switch x := v.(type) {
	case float64:
		if props {
			w.WriteString(strconv.FormatFloat(x, 'f', -1, 64))
			return
		}
	case string:
		if props {
			w.WriteString(strconv.Quote(x))
			return
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("null")
	}
	w.WriteString(string(b))
}

func str(v any) string { s, _ := v.(string); return s }

// IsSecret reports whether a decoded JSON object is a secret: a property
// value's envelope ({sig: secret, "value": …}), a checkpoint's ({sig:
// secret, "plaintext" or "ciphertext": …}), or an output value that is not
// plainly marked as no secret.
func IsSecret(m map[string]any) bool {
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
		if IsSecret(x) {
			if _, known := x["value"]; x[sigKey] == sigOutput && !known {
				return map[string]any{sigKey: sigOutput, "secret": true}
			}
			return map[string]any{sigKey: sigSecret, "value": hiddenSecret}
		}
		for k, e := range x {
			x[k] = Redact(e)
		}
	case []any:
		for i, e := range x {
			x[i] = Redact(e)
		}
	}
	return v
}

// Options compares two option messages (nil is empty) under the path root,
// field by field, through the protocol's JSON form, so that every field the
// protocol adds is compared too.
func (s *Set) Options(root string, a, b proto.Message) {
	if proto.Equal(a, b) { // most calls: no need for the JSON forms
		return
	}
	s.walk(&node{root: root, index: -1}, OptionMap(a), OptionMap(b), false)
}

// OptionMap returns the protocol's JSON form of an option message, decoded,
// without the fields at their zero value (null, false, "", [] or {}): an
// SDK sets protect: false where the request left it out, which is no change.
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
		if empty, err := json.Marshal(v); err == nil && slices.Contains([]string{"null", "false", `""`, "[]", "{}"}, string(empty)) {
			delete(out, k)
		}
	}
	return out
}

// States compares two migration states (JSON arrays of checkpoint
// resources), resources matched by URN: each resource of the new state at
// its index there, one the new state lacks at its index in the old. A
// state that is not such an array is compared whole, at "state".
func (s *Set) States(a, b []byte) {
	var ra, rb []map[string]any
	if decodeState(a, &ra) != nil || decodeState(b, &rb) != nil {
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
		var was any
		j, ok := old[str(r["urn"])]
		if ok {
			was, kept[j] = ra[j], true
		}
		s.member(p, was, r, ok, true, false)
	}
	for j, r := range ra {
		if !kept[j] {
			s.add(&node{root: "state[" + strconv.Itoa(j) + "]", index: -1}, s.render(r, false), nil)
		}
	}
}

// stateText is a state that is not an array of resources, written short;
// nil for none.
func (s *Set) stateText(b []byte) func() string {
	if len(b) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return func() string { return "[not JSON]" }
	}
	return s.render(v, false)
}

func decodeState(b []byte, out *[]map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}
