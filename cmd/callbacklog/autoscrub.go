package main

import (
	"bufio"
	"bytes"
	"cmp"
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

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/calllog"
	"github.com/langhost/callbacks/internal/redact"
)

// This file scrubs Pulumi's automatic log, decrypted: the secrets it holds
// in plain text, and the providers' configuration. A first pass scrubs the
// whole log and writes nothing, to learn every secret value wherever the
// log first marks it; a second writes the log with each replaced, in every
// form it takes.

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
// replaces them; the same value gets the same placeholder throughout.
type autoScrubber struct {
	t      *redact.Table
	prints map[string]bool // the base64 text only the bytes of a noted form make, at each alignment
}

// newAutoScrubber returns a scrubber that notes each secret string as it
// is, Go-quoted and JSON-escaped, and in base64.
func newAutoScrubber() *autoScrubber {
	s := &autoScrubber{t: redact.New(), prints: map[string]bool{}}
	s.t.Forms = func(x string) []string {
		forms := []string{x, quoteInner(x), jsonInner(x, true), jsonInner(x, false)}
		for _, f := range forms {
			for _, p := range base64Prints([]byte(f)) {
				s.prints[p] = true
			}
		}
		return forms
	}
	return s
}

// scrubAutoLog writes the decrypted automatic log to w with its secrets and
// the providers' configuration replaced. It reads the log twice: first
// (from first) to learn every secret, then (from again) to write it, so that
// a secret is replaced even in lines before the one that marks it.
func scrubAutoLog(w io.Writer, first io.Reader, again func() (io.ReadCloser, error)) error {
	s := newAutoScrubber()
	pass := func(w io.Writer, r io.Reader) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		if err := eachLine(r, func(n int, line []byte, last bool) error {
			bw.Write(s.scrubLine(n, line, last)) // an error stays, and WriteByte returns it
			return bw.WriteByte('\n')
		}); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := pass(io.Discard, first); err != nil {
		return err
	}
	r, err := again()
	if err != nil {
		return fmt.Errorf("reading the log again: %w", err)
	}
	defer r.Close()
	return pass(w, r)
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
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if ferr := fn(n, line, err != nil); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return nil
		}
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
	v, _ := redact.Decode(line)
	m, ok := v.(map[string]any)
	if !ok {
		what := "not a JSON object"
		if last && line[0] == '{' {
			what = "cut short"
		}
		return redact.RemovedLine(n, what)
	}
	msg, _ := m["msg"].(string)
	config := isConfigLine(msg)
	changed := false
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if autoEnvelope[k] {
			continue
		}
		if text, ok := m[k].(string); ok && moduleJSON[k] && m[calllog.AttrModule] == calllog.Module {
			if v, ok := redact.Decode([]byte(text)); ok {
				in := false
				v = s.t.Walk(v, s.member(false), &in)
				if out, err := json.Marshal(v); in && err == nil {
					m[k], changed = string(out), true
				}
				continue
			}
		}
		m[k] = s.t.Walk(m[k], s.member(config), &changed)
	}
	if !changed {
		return line
	}
	out, err := json.Marshal(m)
	if err != nil {
		return redact.RemovedLine(n, "not written again")
	}
	return out
}

// member returns the function that scrubs a scalar of a line's members;
// config says the line is about a provider's configuration.
func (s *autoScrubber) member(config bool) func(any) any {
	return func(v any) any {
		switch x := v.(type) {
		case string:
			return s.scrubString(x, config)
		case json.Number:
			// A number is a secret's only where it is one whole.
			if ph, ok := s.t.Noted()[string(x)]; ok {
				return ph
			}
		}
		return v
	}
}

// scrubString scrubs a string of the log: a message or an attribute. Its
// property values are decoded, scrubbed and encoded again (in a line about
// a provider's configuration, every value they hold that is not secret is
// configuration); the rest has every secret replaced, as text (as it is,
// Go-quoted or JSON-escaped) and inside base64.
func (s *autoScrubber) scrubString(str string, config bool) string {
	if ph, ok := s.t.Noted()[str]; ok || str == "" || redact.IsPlaceholder(str) {
		return cmp.Or(ph, str)
	}
	var pieces []string // text and property values, by turns
	at := 0
	for _, loc := range rePropertyValue.FindAllStringIndex(str, -1) {
		if pv, ok := s.scrubPropertyValue(str[loc[0]:loc[1]], config); ok {
			pieces = append(pieces, str[at:loc[0]], pv)
			at = loc[1]
		}
	}
	pieces = append(pieces, str[at:])
	if strings.Contains(str, "Element:map[V:") {
		for _, m := range reSecretText.FindAllStringSubmatch(str, -1) {
			if m[1] != "" {
				s.t.Note(m[1], true)
			}
		}
	}
	for i := 0; i < len(pieces); i += 2 {
		pieces[i] = s.scrubText(pieces[i], config)
	}
	return s.lastly(strings.Join(pieces, ""))
}

// scrubPropertyValue scrubs a logged property value, its text b64: its
// secrets are replaced by their placeholders, and so is every string that
// holds a secret; in a line about a provider's configuration, so is every
// scalar that is not secret. It reports whether b64 is a property value.
func (s *autoScrubber) scrubPropertyValue(b64 string, config bool) (string, bool) {
	v, err := decodePropertyValue(b64)
	if err != nil {
		return "", false // text that only starts as a property value does
	}
	changed := false
	leaf := func(v any) any {
		str, isText := v.(string)
		switch {
		case isText && !config:
			return s.scrubString(str, false)
		case isText:
			if r := s.scrubString(str, false); r != str || redact.IsPlaceholder(r) {
				return r
			}
		case v == nil || !config:
			return v
		}
		return s.t.Placeholder(v, false)
	}
	pv, err := structpb.NewValue(s.t.Walk(v.AsInterface(), leaf, &changed))
	if !changed {
		return b64, true
	}
	var body []byte
	if err == nil {
		body, err = proto.MarshalOptions{Deterministic: true}.Marshal(pv)
	}
	if err != nil {
		return redact.Removed + "a property value that could not be encoded again]", true
	}
	return base64.StdEncoding.EncodeToString(append(binary.LittleEndian.AppendUint64(nil, propertyValueMagic), body...)), true
}

// reTextValue finds a scalar in the engine's text of a property value (Go's
// %v of its JSON form): map[V:value].
var reTextValue = regexp.MustCompile(`map\[V:([^\[\]]*)\]`)

// scrubText replaces the secrets in text that holds no property value: as
// text, and inside base64 that decodes; in a line about a provider's
// configuration, the scalars of the engine's text of property values too
// (3.260.0 writes its CheckConfig's inputs so: region=map[V:us-east-1]).
func (s *autoScrubber) scrubText(text string, config bool) string {
	text = s.t.Replace(text)
	if s.printed(text) {
		text = reBase64.ReplaceAllStringFunc(text, s.scrubBase64)
	}
	if !config {
		return text
	}
	return reTextValue.ReplaceAllStringFunc(text, func(m string) string {
		v := m[len("map[V:") : len(m)-1]
		if v == "" || v == "<nil>" || redact.IsPlaceholder(v) {
			return m
		}
		var val any = v
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			val = f
		} else if b, err := strconv.ParseBool(v); err == nil {
			val = b
		}
		return "map[V:" + s.t.Placeholder(val, false) + "]"
	})
}

// lastly is the net under scrubString: the text of a secret still there
// (one that ran into a property value's base64) is replaced, and a run of
// base64 that still shows a secret's bytes (one that does not decode on its
// own, such as a piece of a longer text, or a property value holding the
// secret in a map's key) is removed whole.
func (s *autoScrubber) lastly(out string) string {
	out = s.t.Replace(out)
	if !s.printed(out) {
		return out
	}
	return reBase64.ReplaceAllStringFunc(out, func(run string) string {
		if s.printed(run) {
			return redact.Removed + "base64 holding a secret]"
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
		if out := s.t.Replace(string(raw)); out != string(raw) {
			return enc.EncodeToString([]byte(out))
		}
		return run
	}
	return run
}
