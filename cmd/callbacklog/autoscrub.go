package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/calllog"
)

// This file scrubs Pulumi's automatic log, decrypted: the secrets it holds
// in plain text, and the providers' configuration. A first pass over the
// whole log learns every secret value, wherever the log first marks it;
// a second writes the log with each replaced, in every form it takes.

// The placeholders of scrubbed values, numbered by first appearance. They
// hold no space: the engine's lines separate their fields by spaces
// (type=T parent=URN), and a placeholder in a name or a URN must leave the
// line readable.
const (
	autoSecretPrefix = "[secret-"
	autoConfigPrefix = "[config-"
	autoScrubbed     = "[scrubbed:"
)

// The top-level members of a line that say what the line is and hold
// nothing of the deployment: never replaced.
var autoEnvelope = map[string]bool{"level": true, "time": true, "v": true}

// isConfigLine reports whether the property values of the engine's line
// msg are a provider's configuration: it is about the provider's
// CheckConfig, DiffConfig or Configure (pkg resource/plugin/provider_plugin.go,
// and sdk's plugin/rpc.go, which labels the property values it logs with the
// call), or about the provider's own resource, whose inputs are its
// configuration, which the line names by its type or URN ("Transform:
// name=N type=pulumi:providers:aws", "Planner decided to create
// 'urn:pulumi:dev::p::pulumi:providers:aws::default' (inputs=...)",
// "RegisterResource(pulumi:providers:aws,p)"). A reference to the provider
// of another resource (provider=URN) does not count.
func isConfigLine(msg string) bool {
	if !strings.Contains(msg, "Config") && !strings.Contains(msg, "pulumi:providers:") {
		return false
	}
	return reConfigCall.MatchString(msg) || reProviderSubject.MatchString(reProviderRef.ReplaceAllString(msg, ""))
}

var (
	reConfigCall      = regexp.MustCompile(`\.(?:CheckConfig|DiffConfig|Configure)\(`)
	reProviderRef     = regexp.MustCompile(`\bproviders?=\S*`)
	reProviderSubject = regexp.MustCompile(`(?:^|[\s(,'=\[])(?:urn:pulumi:[^\s']*(?:::|\$))?pulumi:providers:`)
)

// reSecretText finds a secret in the engine's text lines, where a property
// value is printed as Go's %v of its JSON form: a secret holds its value as
// its only member, Element (map[Element:map[V:value]]); an output marked
// secret is map[Element:map[V:value] Known:true Secret:true], after its
// dependencies, if any.
var reSecretText = regexp.MustCompile(`map\[(?:Dependencies:\[[^\[\]]*\] )?Element:map\[V:([^\[\]]*)\](?:\]| Known:true Secret:true\])`)

// reBase64 finds text that may be base64 (either alphabet): a secret may be
// inside it in bytes.
var reBase64 = regexp.MustCompile(`[A-Za-z0-9+/_-]{8,}={0,2}`)

// autoScrubber learns the secrets and configuration values of a log and
// replaces them. The same value gets the same placeholder throughout.
type autoScrubber struct {
	values  map[string]string // a value's canonical JSON → its placeholder
	secrets int
	configs int
	exact   map[string]string // a secret string, in any form it is written, → its placeholder
	long    []string          // the forms of exact of minSecret bytes or more, longest first
	sorted  bool              // long is sorted
	prints  map[string]bool   // the base64 text only the bytes of a form of long make, at each alignment
}

func newAutoScrubber() *autoScrubber {
	return &autoScrubber{values: map[string]string{}, exact: map[string]string{}, prints: map[string]bool{}}
}

// scrubAutoLog writes the decrypted automatic log to w with its secrets and
// the providers' configuration replaced. It reads the log twice: first
// (from first) to learn every secret, then (from again) to write it, so that
// a secret is replaced even in lines before the one that marks it.
func scrubAutoLog(w io.Writer, first io.Reader, again func() (io.ReadCloser, error)) error {
	s := newAutoScrubber()
	if err := eachLine(first, func(n int, line []byte, last bool) error {
		s.learnLine(line)
		return nil
	}); err != nil {
		return err
	}
	r, err := again()
	if err != nil {
		return fmt.Errorf("reading the log again: %w", err)
	}
	defer r.Close()
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := eachLine(r, func(n int, line []byte, last bool) error {
		if _, err := bw.Write(s.scrubLine(n, line, last)); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}); err != nil {
		return err
	}
	return bw.Flush()
}

// eachLine calls fn with each line of r (without its line break), numbered
// from 1; last says the line is the last and had no line break.
func eachLine(r io.Reader, fn func(n int, line []byte, last bool) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading line %d: %w", n, err)
		}
		if len(line) > 0 || err == nil {
			last := err != nil
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if ferr := fn(n, line, last); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return nil
		}
	}
}

// decodeAutoLine decodes a line as a JSON object, numbers kept as written.
func decodeAutoLine(line []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil || dec.More() {
		return nil, false
	}
	return m, true
}

// decodeAutoJSON decodes JSON text, numbers kept as written.
func decodeAutoJSON(text string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

// learnLine learns the secrets a line marks: inside its property values,
// its text lines' secrets and the secret envelopes of its members.
func (s *autoScrubber) learnLine(line []byte) {
	if m, ok := decodeAutoLine(line); ok {
		s.learnMap(m)
	}
}

// learnMap learns the secrets of a line, decoded.
func (s *autoScrubber) learnMap(m map[string]any) {
	for _, k := range sortedKeys(m) {
		if !autoEnvelope[k] {
			s.learnJSON(m[k])
		}
	}
}

func (s *autoScrubber) learnJSON(v any) {
	switch x := v.(type) {
	case map[string]any:
		if isSecretObject(x) {
			for _, k := range [...]string{"value", "plaintext", "ciphertext"} {
				if inner, ok := x[k]; ok {
					s.learnSecret(secretContent(k, inner))
				}
			}
			return
		}
		for _, k := range sortedKeys(x) {
			s.learnJSON(x[k])
		}
	case []any:
		for _, e := range x {
			s.learnJSON(e)
		}
	case string:
		s.learnText(x)
	}
}

// secretContent is what a secret envelope's member k holds: a plaintext
// is the JSON text of the value.
func secretContent(k string, v any) any {
	if k != "plaintext" {
		return v
	}
	text, _ := v.(string)
	var pv any
	if json.Unmarshal([]byte(text), &pv) != nil {
		return text
	}
	return pv
}

func (s *autoScrubber) learnText(str string) {
	for _, run := range rePropertyValue.FindAllString(str, -1) {
		if v, err := decodePropertyValue(run); err == nil {
			s.learnValue(v)
		}
	}
	if !strings.Contains(str, "Element:map[V:") {
		return
	}
	for _, m := range reSecretText.FindAllStringSubmatch(str, -1) {
		if m[1] != "" {
			s.learnSecret(m[1])
		}
	}
}

// learnValue learns the secrets inside a logged property value.
func (s *autoScrubber) learnValue(v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		if isPBSecret(k.StructValue) {
			for _, f := range [...]string{"value", "plaintext", "ciphertext"} {
				if inner, ok := k.StructValue.GetFields()[f]; ok {
					s.learnSecret(secretContent(f, inner.AsInterface()))
				}
			}
			return
		}
		for _, f := range sortedKeys(k.StructValue.GetFields()) {
			s.learnValue(k.StructValue.GetFields()[f])
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			s.learnValue(e)
		}
	}
}

func isSecretObject(m map[string]any) bool {
	switch m[sig.Key] {
	case sig.Secret:
		return true
	case sig.OutputValue:
		secret, _ := m["secret"].(bool)
		return secret
	}
	return false
}

func isPBSecret(st *structpb.Struct) bool {
	switch st.GetFields()[sig.Key].GetStringValue() {
	case sig.Secret:
		return true
	case sig.OutputValue:
		return st.GetFields()["secret"].GetBoolValue()
	}
	return false
}

// learnSecret gives a secret value its placeholder and learns the strings
// (and numbers, as text) it holds, so that they are replaced wherever else
// they appear.
func (s *autoScrubber) learnSecret(v any) {
	if str, ok := v.(string); ok && isAutoPlaceholder(str) {
		return
	}
	s.placeholder(v, true)
	s.remember(v)
}

func (s *autoScrubber) remember(v any) {
	switch x := v.(type) {
	case string:
		if x == "" || isAutoPlaceholder(x) {
			return
		}
		if _, ok := s.exact[x]; ok {
			return
		}
		ph := s.placeholder(x, true)
		for _, f := range []string{x, quoteInner(x), jsonInner(x, true), jsonInner(x, false)} {
			if _, ok := s.exact[f]; ok {
				continue
			}
			s.exact[f] = ph
			if len(x) >= minSecret {
				s.long = append(s.long, f)
				s.sorted = false
				for _, p := range base64Prints([]byte(f)) {
					s.prints[p] = true
				}
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if k != sig.Key {
				s.remember(x[k])
			}
		}
	case []any:
		for _, e := range x {
			s.remember(e)
		}
	case json.Number:
		s.remember(string(x))
	case float64:
		s.remember(strconv.FormatFloat(x, 'f', -1, 64))
	}
}

// base64Prints returns the text that b makes in base64, in either alphabet,
// wherever it is in the bytes encoded: at each of the three alignments, the
// characters made of b's bits alone.
func base64Prints(b []byte) []string {
	if len(b) < minSecret {
		return nil // too short to tell from chance
	}
	var out []string
	for align := range 3 {
		buf := append(make([]byte, align), b...)
		enc := base64.StdEncoding.EncodeToString(buf)
		first := (8*align + 5) / 6       // the first character whose bits are all b's
		last := (8*(align+len(b)))/6 - 1 // the last such: 7 characters at least
		p := enc[first : last+1]
		out = append(out, p, strings.NewReplacer("+", "-", "/", "_").Replace(p))
	}
	return out
}

// placeholder returns the placeholder of a value: "[secret-N]" for a
// secret, "[config-N]" for a configuration value that is not secret,
// whichever the value was first.
func (s *autoScrubber) placeholder(v any, secret bool) string {
	key := canonical(v)
	if ph, ok := s.values[key]; ok {
		return ph
	}
	var ph string
	if secret {
		s.secrets++
		ph = autoSecretPrefix + strconv.Itoa(s.secrets) + "]"
	} else {
		s.configs++
		ph = autoConfigPrefix + strconv.Itoa(s.configs) + "]"
	}
	s.values[key] = ph
	return ph
}

// canonical is a value's JSON text, the key of its placeholder: a number
// is its text, however it was read.
func canonical(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return string(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// isAutoPlaceholder reports whether s is a value scrub or the module's
// records put in place of one: "[secret]" is how the records write the
// value of a secret.
func isAutoPlaceholder(s string) bool {
	return strings.HasPrefix(s, autoSecretPrefix) || strings.HasPrefix(s, autoConfigPrefix) || strings.HasPrefix(s, autoScrubbed) ||
		s == hidden
}

// moduleJSON are the attributes of the module's records that hold JSON
// text: what a call changed, its request and its answer. Their secrets are
// "[secret]" already; a secret another line marks is replaced inside the
// decoded JSON, where it is escaped once, not in the text, where the
// changes' quoting escapes it again.
var moduleJSON = map[string]bool{calllog.AttrChanges: true, calllog.AttrRequest: true, calllog.AttrAnswer: true}

// reRemovedLine is the placeholder of a line scrubLine removed.
var reRemovedLine = regexp.MustCompile(`^\[scrubbed: line [0-9]+ was (?:not a JSON object|cut short) and was removed\]$`)

// scrubLine returns line n scrubbed: the line as it was when it holds
// nothing to replace. A line that is not a JSON object is removed whole.
func (s *autoScrubber) scrubLine(n int, line []byte, last bool) []byte {
	if len(bytes.TrimSpace(line)) == 0 || reRemovedLine.Match(line) {
		return line
	}
	m, ok := decodeAutoLine(line)
	if !ok {
		what := "not a JSON object"
		if last && line[0] == '{' {
			what = "cut short"
		}
		return []byte(autoScrubbed + " line " + strconv.Itoa(n) + " was " + what + " and was removed]")
	}
	// A secret the line marks is known already (the first pass), unless
	// the log is scrubbed in one pass.
	s.learnMap(m)
	msg, _ := m["msg"].(string)
	config := isConfigLine(msg)
	changed := false
	for _, k := range sortedKeys(m) {
		if autoEnvelope[k] {
			continue
		}
		if text, ok := m[k].(string); ok && moduleJSON[k] && m[calllog.AttrModule] == calllog.Module {
			if v, ok := decodeAutoJSON(text); ok {
				var in bool
				v = s.scrubJSON(v, false, &in)
				if out, err := json.Marshal(v); in && err == nil {
					m[k], changed = string(out), true
				}
				continue
			}
		}
		m[k] = s.scrubJSON(m[k], config, &changed)
	}
	if !changed {
		return line
	}
	out, err := json.Marshal(m)
	if err != nil {
		return []byte(autoScrubbed + " line " + strconv.Itoa(n) + " could not be written again and was removed]")
	}
	return out
}

// scrubJSON scrubs a member of a line: secret envelopes, and strings.
func (s *autoScrubber) scrubJSON(v any, config bool, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		if isSecretObject(x) {
			for _, k := range [...]string{"value", "plaintext", "ciphertext"} {
				inner, ok := x[k]
				if !ok {
					continue
				}
				content := secretContent(k, inner)
				if str, ok := content.(string); ok && isAutoPlaceholder(str) {
					continue
				}
				ph := s.placeholder(content, true)
				if k == "plaintext" {
					enc, _ := json.Marshal(ph)
					x[k] = string(enc)
				} else {
					x[k] = ph
				}
				*changed = true
			}
			return x
		}
		for _, k := range sortedKeys(x) {
			if k != sig.Key {
				x[k] = s.scrubJSON(x[k], config, changed)
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = s.scrubJSON(e, config, changed)
		}
		return x
	case string:
		if r := s.scrubString(x, config); r != x {
			*changed = true
			return r
		}
	case json.Number:
		// A number is a secret's only where it is one whole.
		if ph, ok := s.exact[string(x)]; ok {
			*changed = true
			return ph
		}
	}
	return v
}

// scrubString scrubs a string of the log: a message or an attribute. Its
// property values are decoded, scrubbed and encoded again (in a line about
// a provider's configuration, every value they hold that is not secret is
// configuration); the rest has every secret replaced, as text (as it is,
// Go-quoted or JSON-escaped) and inside base64.
func (s *autoScrubber) scrubString(str string, config bool) string {
	if str == "" || isAutoPlaceholder(str) {
		return str
	}
	if ph, ok := s.exact[str]; ok {
		return ph
	}
	if !s.sorted {
		slices.SortStableFunc(s.long, func(a, b string) int { return len(b) - len(a) })
		s.sorted = true
	}
	var b strings.Builder
	at := 0
	for _, loc := range rePropertyValue.FindAllStringIndex(str, -1) {
		v, err := decodePropertyValue(str[loc[0]:loc[1]])
		if err != nil {
			continue // text that only starts as a property value does
		}
		b.WriteString(s.scrubText(str[at:loc[0]], config))
		b.WriteString(s.scrubPropertyValue(v, str[loc[0]:loc[1]], config))
		at = loc[1]
	}
	b.WriteString(s.scrubText(str[at:], config))
	return s.lastly(b.String())
}

// reTextValue finds a scalar in the engine's text of a property value (Go's
// %v of its JSON form): map[V:value].
var reTextValue = regexp.MustCompile(`map\[V:([^\[\]]*)\]`)

// configText replaces the scalars of the engine's text of property values
// in a line about a provider's configuration (3.260.0 writes its
// CheckConfig's inputs so: region=map[V:us-east-1]).
func (s *autoScrubber) configText(text string) string {
	return reTextValue.ReplaceAllStringFunc(text, func(m string) string {
		v := m[len("map[V:") : len(m)-1]
		if v == "" || v == "<nil>" || isAutoPlaceholder(v) {
			return m
		}
		var val any = v
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			val = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			val = b
		}
		return "map[V:" + s.placeholder(val, false) + "]"
	})
}

// scrubText replaces the secrets in text that holds no property value: as
// text, and inside base64 that decodes; in a line about a provider's
// configuration, the values of its text of property values too.
func (s *autoScrubber) scrubText(text string, config bool) string {
	if text == "" {
		return text
	}
	if len(s.exact) > 0 {
		for _, f := range s.long {
			if len(f) <= len(text) && strings.Contains(text, f) {
				text = strings.ReplaceAll(text, f, s.exact[f])
			}
		}
		if s.printed(text) {
			text = reBase64.ReplaceAllStringFunc(text, s.scrubBase64)
		}
	}
	if config {
		text = s.configText(text)
	}
	return text
}

// lastly is the net under scrubString: the text of a secret still there
// (one that ran into a property value's base64) is replaced, and a run of
// base64 that still shows a secret's bytes (one that does not decode on its
// own, such as a piece of a longer text, or a property value holding the
// secret in a map's key) is removed whole.
func (s *autoScrubber) lastly(out string) string {
	for _, f := range s.long {
		if len(f) <= len(out) && strings.Contains(out, f) {
			out = strings.ReplaceAll(out, f, s.exact[f])
		}
	}
	if !s.printed(out) {
		return out
	}
	return reBase64.ReplaceAllStringFunc(out, func(run string) string {
		for p := range s.prints {
			if strings.Contains(run, p) {
				return autoScrubbed + "base64-holding-a-secret]"
			}
		}
		return run
	})
}

// printed reports whether text shows the bytes of a secret in base64: a
// run of base64 can hold a secret of minSecret bytes or more only then.
func (s *autoScrubber) printed(text string) bool {
	for p := range s.prints {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}

// base64Encodings are the encodings a run of base64 is tried with, padded
// first.
var base64Encodings = []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}

// scrubBase64 scrubs a run of text that may be base64: if it decodes and
// holds a secret in its bytes, the secret is replaced there and the bytes
// encoded again, in the same encoding.
func (s *autoScrubber) scrubBase64(run string) string {
	for _, enc := range base64Encodings {
		raw, err := enc.DecodeString(run)
		if err != nil {
			continue
		}
		if out, ok := s.scrubBytes(raw); ok {
			return enc.EncodeToString(out)
		}
		return run
	}
	return run
}

// scrubBytes replaces the secrets in decoded bytes; it reports whether it
// found one.
func (s *autoScrubber) scrubBytes(raw []byte) ([]byte, bool) {
	if ph, ok := s.exact[string(raw)]; ok {
		return []byte(ph), true
	}
	found := false
	for _, f := range s.long {
		if bytes.Contains(raw, []byte(f)) {
			raw = bytes.ReplaceAll(raw, []byte(f), []byte(s.exact[f]))
			found = true
		}
	}
	return raw, found
}

// scrubPropertyValue scrubs a logged property value v, whose text is b64:
// its secrets are replaced by their placeholders, and so is every string
// that holds a secret; in a line about a provider's configuration, so is
// every value that is not secret.
func (s *autoScrubber) scrubPropertyValue(v *structpb.Value, b64 string, config bool) string {
	if !s.scrubValue(v, config) {
		return b64
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
	if err != nil {
		return autoScrubbed + "a-property-value-that-could-not-be-encoded-again]"
	}
	return base64.StdEncoding.EncodeToString(append(binary.LittleEndian.AppendUint64(nil, propertyValueMagic), body...))
}

// scrubValue scrubs a decoded property value in place; it reports whether
// it changed it.
func (s *autoScrubber) scrubValue(v *structpb.Value, config bool) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		st := k.StructValue
		if isPBSecret(st) {
			changed := false
			for _, f := range [...]string{"value", "plaintext", "ciphertext"} {
				inner, ok := st.GetFields()[f]
				if !ok {
					continue
				}
				content := secretContent(f, inner.AsInterface())
				if str, ok := content.(string); ok && isAutoPlaceholder(str) {
					continue
				}
				ph := s.placeholder(content, true)
				if f == "plaintext" {
					enc, _ := json.Marshal(ph)
					ph = string(enc)
				}
				st.Fields[f] = structpb.NewStringValue(ph)
				changed = true
			}
			return changed
		}
		changed := false
		for _, f := range sortedKeys(st.GetFields()) {
			if f == sig.Key {
				continue
			}
			changed = s.scrubValue(st.Fields[f], config) || changed
		}
		return changed
	case *structpb.Value_ListValue:
		changed := false
		for _, e := range k.ListValue.GetValues() {
			changed = s.scrubValue(e, config) || changed
		}
		return changed
	case *structpb.Value_StringValue:
		r := s.scrubString(k.StringValue, false)
		if config && r == k.StringValue && !isAutoPlaceholder(r) {
			r = s.placeholder(k.StringValue, false)
		}
		if r != k.StringValue {
			k.StringValue = r
			return true
		}
	case *structpb.Value_NumberValue:
		if config {
			v.Kind = &structpb.Value_StringValue{StringValue: s.placeholder(k.NumberValue, false)}
			return true
		}
	case *structpb.Value_BoolValue:
		if config {
			v.Kind = &structpb.Value_StringValue{StringValue: s.placeholder(k.BoolValue, false)}
			return true
		}
	}
	return false
}
