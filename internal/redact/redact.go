// Package redact is what the two scrubbers of the engine side share:
// replay.Scrub, of the engine's gRPC log, and callbacklog's scrub of
// Pulumi's automatic log. A Table gives each secret and configuration
// value its placeholder, "[secret N]" or "[config N]", numbered by first
// appearance, and finds the strings they hold wherever a log repeats them.
package redact

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"

	"github.com/langhost/callbacks/internal/changes"
)

// Removed starts the placeholder of what a scrubber removed whole (a
// payload, a line), which says why.
const Removed = "[scrubbed: "

// RemovedLine is the placeholder of line n of a log, removed whole because
// it was what was says.
func RemovedLine(n int, was string) []byte {
	return []byte(Removed + "line " + strconv.Itoa(n) + " was " + was + " and was removed]")
}

// minSubstring is the length of the shortest string a Table also replaces
// inside longer strings; a shorter one ("1", "true", "eu") is replaced only
// where a whole string equals it, as it would be found by chance in
// unrelated text.
const minSubstring = 6

// IsPlaceholder reports whether s is a placeholder a scrubber wrote, or
// "[secret]", which the module writes in place of a secret it hides.
func IsPlaceholder(s string) bool {
	return strings.HasPrefix(s, "[secret ") || strings.HasPrefix(s, "[config ") || strings.HasPrefix(s, Removed) || s == "[secret]"
}

// Table holds the placeholders of a log's values. It is not safe for
// concurrent use.
type Table struct {
	// Forms returns the forms a string is written in (itself among them:
	// escaped, quoted), each replaced as the string is; New's returns the
	// string alone.
	Forms func(string) []string
	// Names are strings that are noted only as secrets: the project's,
	// the stack's, the organization's, which a log names everywhere.
	Names map[string]bool

	values map[string]string // a value's canonical JSON → its placeholder
	given  map[bool]int      // the placeholders given so far, of secrets (true) and of the rest
	exact  map[string]string // a noted string, in each of its forms → its placeholder
	long   []string          // the forms in exact of minSubstring bytes or more, longest first
}

// New returns an empty Table.
func New() *Table {
	return &Table{Forms: func(s string) []string { return []string{s} }, Names: map[string]bool{},
		values: map[string]string{}, given: map[bool]int{}, exact: map[string]string{}}
}

// Placeholder returns the placeholder of v, the same for the same value
// throughout: "[secret N]" for a secret, "[config N]" for a configuration
// value that is not secret, whichever v was first.
func (t *Table) Placeholder(v any, secret bool) string {
	key := canonical(v)
	if ph, ok := t.values[key]; ok {
		return ph
	}
	word := "[config "
	if secret {
		word = "[secret "
	}
	t.given[secret]++
	t.values[key] = word + strconv.Itoa(t.given[secret]) + "]"
	return t.values[key]
}

// Note gives v its placeholder and notes the strings it holds (a number
// as its text), so that Replace finds them wherever they appear.
func (t *Table) Note(v any, secret bool) string {
	if s, ok := v.(string); ok && IsPlaceholder(s) {
		return s
	}
	ph := t.Placeholder(v, secret)
	t.note(v, secret)
	return ph
}

func (t *Table) note(v any, secret bool) {
	switch x := v.(type) {
	case string:
		if _, ok := t.exact[x]; ok || x == "" || IsPlaceholder(x) || !secret && t.Names[x] {
			return
		}
		ph := t.Placeholder(x, secret)
		for _, f := range t.Forms(x) {
			if _, ok := t.exact[f]; ok {
				continue
			}
			t.exact[f] = ph
			if len(x) >= minSubstring {
				i, _ := slices.BinarySearchFunc(t.long, len(f), func(e string, n int) int { return n - len(e) })
				t.long = slices.Insert(t.long, i, f)
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if k != sig.Key {
				t.note(x[k], secret)
			}
		}
	case []any:
		for _, e := range x {
			t.note(e, secret)
		}
	case json.Number:
		t.note(string(x), secret)
	case float64:
		t.note(strconv.FormatFloat(x, 'f', -1, 64), secret)
	}
}

// Noted returns the strings noted so far, in each of their forms, and
// their placeholders; the map is the Table's, not to be changed.
func (t *Table) Noted() map[string]string { return t.exact }

// Replace returns s with the noted strings it holds replaced: s whole if
// it is one, and each noted string of minSubstring bytes or more inside it.
// A placeholder is left as it is.
func (t *Table) Replace(s string) string {
	if s == "" || IsPlaceholder(s) {
		return s
	}
	if ph, ok := t.exact[s]; ok {
		return ph
	}
	for _, f := range t.long {
		if len(f) <= len(s) && strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, t.exact[f])
		}
	}
	return s
}

// Walk returns v, a decoded JSON value, with the value of each secret
// envelope replaced by its placeholder and noted (a "plaintext" is the JSON
// text of the value, and its placeholder is written so), and every other
// scalar by what leaf returns for it. Object members are walked in the
// order of their keys, so that placeholders are numbered the same on every
// run; changed is set when anything is replaced.
func (t *Table) Walk(v any, leaf func(any) any, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		if !changes.IsSecret(x) {
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if k != sig.Key {
					x[k] = t.Walk(x[k], leaf, changed)
				}
			}
			return x
		}
		for _, k := range [...]string{"value", "plaintext", "ciphertext"} {
			inner, ok := x[k]
			if !ok {
				continue
			}
			if text, isText := inner.(string); k == "plaintext" && isText {
				if pv, isJSON := Decode([]byte(text)); isJSON {
					inner = pv
				}
			}
			var ph any = t.Note(inner, true)
			if k == "plaintext" {
				enc, _ := json.Marshal(ph)
				ph = string(enc)
			}
			if ph != x[k] {
				x[k], *changed = ph, true
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = t.Walk(e, leaf, changed)
		}
		return x
	}
	if r := leaf(v); r != v {
		*changed = true
		return r
	}
	return v
}

// Decode decodes JSON text holding one value, numbers kept as written.
func Decode(text []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

// Encode writes v as JSON text, without escaping HTML.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// canonical is a value's JSON text, the key of its placeholder: a number
// is its text, however it was read.
func canonical(v any) string {
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			v = f
		}
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
