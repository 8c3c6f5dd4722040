package replay

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
)

// scrubbedPrefix starts every placeholder Scrub puts in place of something
// it removed whole (a payload, a line), as opposed to a secret value.
const scrubbedPrefix = "[scrubbed: "

// minSubstring is the shortest secret Scrub also looks for inside longer
// strings; shorter ones are replaced only where a whole string equals them.
const minSubstring = 6

// Scrub copies the log src to dst line by line, replacing every secret
// value and every configuration value with a placeholder, so that the log
// can be committed as test data:
//
//   - every secret envelope, in any entry's body, has its value replaced,
//     and so has every secret inside the callback payloads, which are
//     decoded by their kind (transform properties and invoke arguments, hook
//     inputs and outputs, migration states whose secrets hold "plaintext"
//     or "ciphertext") and encoded again, unknown fields kept;
//   - every value of the program's configuration (LanguageRuntime/Run,
//     either of its entries, and GetDeploymentInfo) and of the providers'
//     (CheckConfig, DiffConfig, Configure) is replaced;
//   - a string equal to a secret met before or to a value of the program's
//     configuration is replaced wherever it is, in any entry and inside
//     the callback payloads; one of six bytes or more is replaced inside
//     longer strings too. A shorter one ("1", "true", "eu") is left inside
//     a longer string, where it would be found by chance in unrelated
//     text. A configuration value that is not secret and names the
//     project, the stack or the organization is left outside the
//     configuration: the log names them everywhere, and a replay needs
//     them. An entry's own members (method, progress, metadata, timestamp,
//     duration) are left as they are.
//
// The same value gets the same placeholder throughout the log: "[secret 1]",
// "[secret 2]", … for secrets and "[config 1]", … for configuration values
// that are not secret, each numbered by first appearance, so the scrubbed
// log still replays for functions that do not read the contents of secrets
// or configuration. What cannot be scrubbed with certainty is removed whole
// and the placeholder says why: a payload whose kind the log does not tell
// or that does not decode ("[scrubbed: …]", which Read reports on that
// line), a line that is not JSON. Entries that need no change are copied
// byte for byte.
//
// When src is an io.Seeker (a file), Scrub reads the whole log once to
// learn every secret and configuration value, then goes back and scrubs it,
// so a value is replaced even before the entry that marks it secret or
// gives it as configuration: a secret that a provider's error, a hook's
// refusal or a name repeats before the payload that marks it. A src read
// once (a pipe) knows a value from the first entry that marks or gives it
// on: in a log of two entries per call, the Run's request_started comes
// before anything else, but a secret met first in clear, and a log of one
// entry per call, which writes its Run entry last, leave what comes before
// in clear. Scrub a file, not a pipe.
//
// Scrub holds one line at a time, plus, in a log of one entry per call, the
// lines after a call that waits for its token's registration. It returns
// the first error reading src or writing dst.
func Scrub(dst io.Writer, src io.Reader) error {
	var known *scrubber
	if rs, ok := src.(io.ReadSeeker); ok {
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			// A first pass learns every secret and configuration value,
			// wherever the log first tells it, and writes nothing.
			known = newScrubber(nil)
			if err := known.run(io.Discard, rs); err != nil {
				return err
			}
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return fmt.Errorf("replay: scrubbing the log: going back to its start: %w", err)
			}
		}
	}
	return newScrubber(known).run(dst, src)
}

// newScrubber returns a scrubber knowing from the start the values known
// has learned, with their placeholders.
func newScrubber(known *scrubber) *scrubber {
	s := &scrubber{values: map[string]string{}, exact: map[string]string{}, names: map[string]bool{}}
	if known != nil {
		s.values, s.exact, s.names = known.values, known.exact, known.names
		s.long, s.escaped = known.long, known.escaped
		s.secrets, s.configs = known.secrets, known.configs
	}
	return s
}

// run scrubs the log src into dst, reading it as Read does: the reader
// learns the tokens, and holds the lines after a call that waits for its
// token's registration.
func (s *scrubber) run(dst io.Writer, src io.Reader) error {
	s.rd = newReader(src)
	s.rd.scrub = s
	w := bufio.NewWriterSize(dst, 64<<10)
	var err error
	s.rd.run(func(h *held) bool {
		switch {
		case h.run != nil:
			return true
		case h.err != nil:
			err = h.err
			return false
		}
		if _, err = w.Write(h.out); err == nil {
			err = w.WriteByte('\n')
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

type scrubber struct {
	rd      *reader           // reads the log and learns the tokens, as Read does
	values  map[string]string // a value's canonical JSON → its placeholder
	secrets int               // the secret placeholders given so far
	configs int               // the configuration placeholders given so far
	exact   map[string]string // a secret string or configuration value → its placeholder
	long    []string          // the strings of exact of minSubstring bytes or more, longest first
	escaped bool              // a string of exact that JSON text may escape was met
	names   map[string]bool   // the project's, stack's and organization's names
}

// line scrubs line n into the reader's queue: done, or a callback call
// that waits for its token's registration.
func (s *scrubber) line(n int, line []byte, ended, blank bool) {
	push := func(out []byte) { s.rd.queue = append(s.rd.queue, held{n: n, out: out}) }
	removed := func(what string) {
		push([]byte(scrubbedPrefix + "line " + strconv.Itoa(n) + " was " + what + " and was removed]"))
	}
	if blank {
		push([]byte{})
		return
	}
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		if !ended {
			removed("a truncated entry")
		} else {
			removed("not a JSON entry")
		}
		return
	}
	if h.Method != invokeMethod {
		// Learn tokens (Read's own logic) from the unscrubbed entry.
		s.rd.entry(line, ended)
		if s.plain(h.Method, line) {
			push(bytes.Clone(line))
			return
		}
	}
	entry, err := decodeEntry(line)
	if err != nil {
		removed("not a JSON object")
		return
	}
	if h.Progress != "" {
		s.rd.twoWay = true
	}
	changed := false
	if h.Method == invokeMethod {
		token := invokeToken(entry)
		if token != "" && s.rd.tokens[token] == nil && !s.rd.twoWay {
			// A log of one entry per call registers a resource's own
			// callbacks after their calls: wait for the registration.
			s.rd.queue = append(s.rd.queue, held{n: n, entry: entry, token: token, wait: true})
			return
		}
		changed = s.payloads(entry, token)
	}
	changed = s.config(h.Method, entry) || changed
	grew := len(s.values)
	invoke := h.Method == invokeMethod
	v := s.walkEntry(entry, invoke, &changed)
	if len(s.values) != grew {
		// Secrets met in this line are replaced in all of it.
		v = s.walkEntry(entry, invoke, &changed)
	}
	if !changed {
		push(bytes.Clone(line))
		return
	}
	out, err := encodeJSON(v)
	if err != nil {
		removed("not encoded again")
		return
	}
	push(out)
}

// plain reports whether an entry certainly holds nothing to scrub, so that
// it is copied without being decoded: no configuration, no payload, no
// secret envelope, and none of the secrets met so far, looked for as they
// appear in JSON text (which only works for secrets JSON does not escape).
func (s *scrubber) plain(method string, line []byte) bool {
	switch method {
	case runMethod, deploymentInfo, "/pulumirpc.ResourceProvider/CheckConfig", "/pulumirpc.ResourceProvider/DiffConfig", "/pulumirpc.ResourceProvider/Configure":
		return false
	}
	if s.escaped || len(s.exact) > 64 ||
		bytes.Contains(line, []byte(sig.Secret)) || bytes.Contains(line, []byte(sig.OutputValue)) ||
		bytes.Contains(line, []byte("PULUMI_CONFIG=")) {
		return false
	}
	for str := range s.exact {
		if len(str) < minSubstring {
			// Replaced only as a whole string: look for it quoted.
			if bytes.Contains(line, []byte(`"`+str+`"`)) {
				return false
			}
		} else if bytes.Contains(line, []byte(str)) {
			return false
		}
	}
	return true
}

// escapes reports whether JSON text may show s otherwise than as its bytes.
func escapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return true
		}
	}
	return false
}

func decodeEntry(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null")
	}
	return m, nil
}

func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func invokeToken(entry map[string]any) string {
	req, _ := entry["request"].(map[string]any)
	tok, _ := req["token"].(string)
	return tok
}

// finish scrubs a waiting line with what the log now tells of its token.
func (s *scrubber) finish(l *held) {
	changed := s.payloads(l.entry, l.token)
	s.walkEntry(l.entry, true, &changed)
	v := s.walkEntry(l.entry, true, &changed)
	out, err := encodeJSON(v)
	if err != nil {
		out = []byte(scrubbedPrefix + "line " + strconv.Itoa(l.n) + " could not be encoded again and was removed]")
	}
	l.out, l.entry = out, nil
}

// payloads scrubs a Callbacks/Invoke entry's request and response payloads
// by the kind of token; it reports whether it changed them.
func (s *scrubber) payloads(entry map[string]any, token string) bool {
	r := s.rd.tokens[token]
	var why string
	switch {
	case token == "":
		why = "a call with no token"
	case r == nil:
		why = "a token this log never registered, so its kind is unknown"
	case r.kind == 0:
		why = "a callback kind this module does not know, registered by " + r.method
	}
	changed := false
	for _, p := range [...]struct{ outer, inner string }{{"request", "request"}, {"response", "response"}} {
		obj, _ := entry[p.outer].(map[string]any)
		if obj == nil {
			continue
		}
		raw, ok := obj[p.inner]
		if !ok {
			continue
		}
		str, _ := raw.(string)
		if strings.HasPrefix(str, scrubbedPrefix) {
			continue
		}
		if why != "" {
			obj[p.inner] = scrubbedPrefix + "payload of " + why + "]"
			changed = true
			continue
		}
		out, err := s.payload(r.kind, p.outer == "request", str)
		if err != nil {
			obj[p.inner] = scrubbedPrefix + err.Error() + "]"
			changed = true
			continue
		}
		if out != str {
			obj[p.inner] = out
			changed = true
		}
	}
	return changed
}

// payload scrubs one base64 payload of kind k.
func (s *scrubber) payload(k callbacks.Kind, isRequest bool, b64 string) (string, error) {
	bs, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", errors.New("payload that is not valid base64")
	}
	req, res := newMessages(k)
	m, what := req, "request"
	if !isRequest {
		m, what = res, "response"
	}
	if err := proto.Unmarshal(bs, m); err != nil {
		return "", fmt.Errorf("payload that does not decode as a %v %s", k, what)
	}
	if !s.message(m.ProtoReflect()) {
		return b64, nil
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("payload that could not be encoded again as a %v %s", k, what)
	}
	return base64.StdEncoding.EncodeToString(out), nil
}

// message scrubs a protobuf message in place; it reports whether it changed
// it.
func (s *scrubber) message(m protoreflect.Message) bool {
	switch x := m.Interface().(type) {
	case *structpb.Struct, *structpb.Value, *structpb.ListValue:
		// A property value: scrubbed as the JSON value it stands for, and
		// emptied if that could not be encoded again.
		var v any
		switch x := x.(type) {
		case *structpb.Struct:
			v = x.AsMap()
		case *structpb.Value:
			v = x.AsInterface()
		case *structpb.ListValue:
			v = x.AsSlice()
		}
		changed := false
		pv, err := structpb.NewValue(s.walk(v, &changed))
		if !changed {
			return false
		}
		if err != nil {
			pv = structpb.NewNullValue()
		}
		switch x := x.(type) {
		case *structpb.Struct:
			x.Fields = pv.GetStructValue().GetFields()
		case *structpb.Value:
			x.Kind = pv.Kind
		case *structpb.ListValue:
			x.Values = pv.GetListValue().GetValues()
		}
		return true
	}
	// A kind's JSON states first, so that the secrets they mark are
	// replaced in the message's other fields too.
	changed := false
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		if fd := fds.Get(i); isState(fd) && m.Has(fd) {
			if st, ok := s.state(m.Get(fd).Bytes()); ok {
				m.Set(fd, protoreflect.ValueOfBytes(st))
				changed = true
			}
		}
	}
	return s.fields(m) || changed
}

// fields scrubs the strings and messages of m's fields, in field order so
// that placeholders are numbered the same on every run.
func (s *scrubber) fields(m protoreflect.Message) bool {
	changed := false
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				switch fd.Kind() {
				case protoreflect.MessageKind, protoreflect.GroupKind:
					changed = s.message(l.Get(i).Message()) || changed
				case protoreflect.StringKind:
					if r := s.replace(l.Get(i).String()); r != l.Get(i).String() {
						l.Set(i, protoreflect.ValueOfString(r))
						changed = true
					}
				}
			}
		case fd.IsMap():
			mp := v.Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, k := range keys {
				mv := mp.Get(k)
				switch fd.MapValue().Kind() {
				case protoreflect.MessageKind, protoreflect.GroupKind:
					changed = s.message(mv.Message()) || changed
				case protoreflect.StringKind:
					if r := s.replace(mv.String()); r != mv.String() {
						mp.Set(k, protoreflect.ValueOfString(r))
						changed = true
					}
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			changed = s.message(v.Message()) || changed
		case fd.Kind() == protoreflect.StringKind:
			if r := s.replace(v.String()); r != v.String() {
				m.Set(fd, protoreflect.ValueOfString(r))
				changed = true
			}
		}
	}
	return changed
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// isPlaceholder reports whether s is a placeholder Scrub wrote.
func isPlaceholder(s string) bool {
	return strings.HasPrefix(s, "[secret ") || strings.HasPrefix(s, "[config ") || strings.HasPrefix(s, scrubbedPrefix)
}

// state scrubs a migration's JSON state; a state that is not JSON is
// replaced whole.
func (s *scrubber) state(b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return b, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		out, _ := json.Marshal(scrubbedPrefix + "a state that is not JSON]")
		return out, true
	}
	changed := false
	v = s.walk(v, &changed)
	v = s.walk(v, &changed)
	if !changed {
		return b, false
	}
	out, err := encodeJSON(v)
	if err != nil {
		out, _ = json.Marshal(scrubbedPrefix + "a state that could not be encoded again]")
	}
	return out, true
}

// envelope lists an entry's own members, which say what the entry is and
// hold nothing of the deployment: they are never replaced, so that a
// configuration value such as "server" leaves the log readable.
var envelope = map[string]bool{"method": true, "progress": true, "metadata": true, "timestamp": true, "duration": true}

// walkEntry walks an entry's members but its envelope, and not its
// callback payloads, which are base64 and scrubbed by payloads.
func (s *scrubber) walkEntry(entry map[string]any, invoke bool, changed *bool) any {
	walk := func() {
		for _, k := range sortedKeys(entry) {
			if !envelope[k] {
				entry[k] = s.walk(entry[k], changed)
			}
		}
	}
	if !invoke {
		walk()
		return entry
	}
	type saved struct {
		obj map[string]any
		key string
		v   any
	}
	var keep []saved
	for _, k := range [...]string{"request", "response"} {
		if obj, ok := entry[k].(map[string]any); ok {
			if v, ok := obj[k]; ok {
				keep = append(keep, saved{obj, k, v})
				delete(obj, k)
			}
		}
	}
	walk()
	for _, x := range keep {
		x.obj[x.key] = x.v
	}
	return entry
}

// walk scrubs a decoded JSON value: secret envelopes, and strings holding
// secrets.
func (s *scrubber) walk(v any, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		if isSecretEnvelope(x) {
			for _, k := range [...]string{"value", "plaintext", "ciphertext"} {
				inner, ok := x[k]
				if !ok {
					continue
				}
				if k == "plaintext" {
					// The plaintext is the JSON text of the value.
					text, _ := inner.(string)
					var pv any
					if json.Unmarshal([]byte(text), &pv) != nil {
						pv = text
					}
					if str, ok := pv.(string); ok && isPlaceholder(str) {
						continue
					}
					enc, _ := json.Marshal(s.secret(pv))
					x[k] = string(enc)
				} else {
					if str, ok := inner.(string); ok && isPlaceholder(str) {
						continue
					}
					x[k] = s.secret(inner)
				}
				*changed = true
			}
			return x
		}
		for _, k := range sortedKeys(x) {
			if k == sig.Key {
				continue
			}
			x[k] = s.walk(x[k], changed)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = s.walk(e, changed)
		}
		return x
	case string:
		if r := s.replace(x); r != x {
			*changed = true
			return r
		}
	}
	return v
}

// config replaces the configuration values of an entry of the language
// host's Run or a provider's CheckConfig, DiffConfig or Configure.
func (s *scrubber) config(method string, entry map[string]any) bool {
	changed := false
	req, _ := entry["request"].(map[string]any)
	res, _ := entry["response"].(map[string]any)
	switch method {
	case runMethod:
		s.program(req, &changed)
	case deploymentInfo:
		s.program(res, &changed)
	case "/pulumirpc.ResourceProvider/CheckConfig", "/pulumirpc.ResourceProvider/DiffConfig", "/pulumirpc.ResourceProvider/Configure":
		for _, body := range []map[string]any{req, res} {
			for _, k := range [...]string{"olds", "news", "oldInputs", "inputs", "args", "variables"} {
				if v, ok := body[k]; ok {
					body[k] = s.configValue(v, false, false, &changed)
				}
			}
		}
	}
	return changed
}

// program replaces the program's configuration in a RunRequest or a
// DeploymentInfo, and remembers every value, so that replace finds it
// wherever it appears after.
func (s *scrubber) program(body map[string]any, changed *bool) {
	if body == nil {
		return
	}
	for _, k := range [...]string{"project", "stack", "organization"} {
		if name, ok := body[k].(string); ok && name != "" {
			s.names[name] = true
		}
	}
	secretKeys := map[string]bool{}
	if ks, ok := body["configSecretKeys"].([]any); ok {
		for _, k := range ks {
			if k, ok := k.(string); ok {
				secretKeys[k] = true
			}
		}
	}
	if cfg, ok := body["config"].(map[string]any); ok {
		for _, k := range sortedKeys(cfg) {
			cfg[k] = s.configLeaf(cfg[k], secretKeys[k], true, changed)
		}
	}
	if pm, ok := body["configPropertyMap"].(map[string]any); ok {
		for _, k := range sortedKeys(pm) {
			pm[k] = s.configValue(pm[k], secretKeys[k], true, changed)
		}
	}
}

// configValue replaces every leaf of a configuration value, keeping its
// keys and signatures; with remember, replace finds the leaves after.
func (s *scrubber) configValue(v any, secret, remember bool, changed *bool) any {
	switch x := v.(type) {
	case map[string]any:
		if isSecretEnvelope(x) {
			return x // walk replaces it as a secret
		}
		for _, k := range sortedKeys(x) {
			if k == sig.Key {
				continue
			}
			x[k] = s.configValue(x[k], secret, remember, changed)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = s.configValue(e, secret, remember, changed)
		}
		return x
	case nil:
		return nil
	}
	return s.configLeaf(v, secret, remember, changed)
}

func (s *scrubber) configLeaf(v any, secret, remember bool, changed *bool) any {
	if str, ok := v.(string); ok && isPlaceholder(str) {
		return v
	}
	ph := s.placeholder(v, secret)
	if secret || remember {
		s.remember(v, secret)
	}
	*changed = true
	return ph
}

// placeholder returns the placeholder of a value, the same for the same
// value throughout the log: "[secret N]" for a secret, "[config N]" for a
// configuration value that is not secret, whichever the value was first.
func (s *scrubber) placeholder(v any, secret bool) string {
	key := canonical(v)
	if ph, ok := s.values[key]; ok {
		return ph
	}
	var ph string
	if secret {
		s.secrets++
		ph = "[secret " + strconv.Itoa(s.secrets) + "]"
	} else {
		s.configs++
		ph = "[config " + strconv.Itoa(s.configs) + "]"
	}
	s.values[key] = ph
	return ph
}

// secret returns a secret value's placeholder, and remembers the strings
// it holds so that they are replaced wherever else they appear.
func (s *scrubber) secret(v any) string {
	ph := s.placeholder(v, true)
	s.remember(v, true)
	return ph
}

// remember notes the strings v holds (numbers as their text), so that
// replace finds them wherever they appear. A configuration value that is
// not secret and names the project, the stack or the organization is not
// noted: the log names them everywhere anyway, and replay needs them.
func (s *scrubber) remember(v any, secret bool) {
	switch x := v.(type) {
	case string:
		if x == "" || isPlaceholder(x) {
			return
		}
		if _, ok := s.exact[x]; ok {
			return
		}
		if !secret && s.names[x] {
			return
		}
		s.exact[x] = s.placeholder(x, secret)
		if escapes(x) {
			s.escaped = true
		}
		if len(x) >= minSubstring {
			i := sort.Search(len(s.long), func(i int) bool { return len(s.long[i]) < len(x) })
			s.long = append(s.long, "")
			copy(s.long[i+1:], s.long[i:])
			s.long[i] = x
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if k != sig.Key {
				s.remember(x[k], secret)
			}
		}
	case []any:
		for _, e := range x {
			s.remember(e, secret)
		}
	case json.Number:
		s.remember(string(x), secret)
	case float64:
		s.remember(strconv.FormatFloat(x, 'f', -1, 64), secret)
	}
}

// replace returns str with the secrets it holds replaced.
func (s *scrubber) replace(str string) string {
	if strings.HasPrefix(str, "PULUMI_CONFIG=") && !isPlaceholder(strings.TrimPrefix(str, "PULUMI_CONFIG=")) {
		return "PULUMI_CONFIG=" + s.placeholder(str, true)
	}
	if len(s.exact) == 0 || str == "" {
		return str
	}
	if ph, ok := s.exact[str]; ok {
		return ph
	}
	for _, secret := range s.long {
		if len(secret) > len(str) {
			continue
		}
		if strings.Contains(str, secret) {
			str = strings.ReplaceAll(str, secret, s.exact[secret])
		}
	}
	return str
}

// canonical is a value's JSON text, the key of its placeholder.
func canonical(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
