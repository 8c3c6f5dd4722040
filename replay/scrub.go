package replay

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protopath"
	"google.golang.org/protobuf/reflect/protorange"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/redact"
)

// scrubbedPrefix starts every placeholder Scrub puts in place of something
// it removed whole (a payload, a line), as opposed to a value.
const scrubbedPrefix = redact.Removed

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
//   - a string equal to a secret or to a value of the program's
//     configuration is replaced wherever it is, in any entry and inside the
//     callback payloads; one of six bytes or more is replaced inside longer
//     strings too, a shorter one ("1", "eu") only where a whole string is
//     it. A configuration value that is not secret and names the
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
// learn every value, then goes back and scrubs it, so a value is replaced
// even before the entry that marks it secret or gives it as configuration
// (a provider's error or a hook's refusal that repeats a secret). A src
// read once (a pipe) knows a value only from the entry that marks or gives
// it on, and leaves what comes before in clear: a secret met first in
// clear, and in a log of one entry per call, which writes its Run entry
// last, the configuration. Scrub a file, not a pipe.
//
// Scrub holds one line at a time, plus, in a log of one entry per call, the
// lines after a call that waits for its token's registration. It returns
// the first error reading src or writing dst.
func Scrub(dst io.Writer, src io.Reader) error {
	t := redact.New()
	if rs, ok := src.(io.ReadSeeker); ok {
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			if err := scrubOnce(t, io.Discard, rs); err != nil {
				return err
			}
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return fmt.Errorf("replay: scrubbing the log: going back to its start: %w", err)
			}
		}
	}
	return scrubOnce(t, dst, src)
}

type scrubber struct {
	rd *reader       // reads the log and learns the tokens, as Read does
	t  *redact.Table // the placeholders of the values met so far
}

// scrubOnce scrubs the log src into dst with the values t knows, reading
// it as Read does: the reader learns the tokens, and holds the lines after
// a call that waits for its token's registration.
func scrubOnce(t *redact.Table, dst io.Writer, src io.Reader) error {
	s := &scrubber{rd: newReader(src), t: t}
	s.rd.scrub = s
	w := bufio.NewWriterSize(dst, 64<<10)
	var err error
	s.rd.run(func(h *held) bool {
		err = h.err
		if err == nil && h.run == nil {
			w.Write(h.out) // an error stays in w, and WriteByte returns it
			err = w.WriteByte('\n')
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// line scrubs line n into the reader's queue: done, or a callback call
// that waits for its token's registration.
func (s *scrubber) line(n int, line []byte, ended, blank bool) {
	push := func(out []byte) { s.rd.queue = append(s.rd.queue, held{n: n, out: out}) }
	var h header
	switch err := json.Unmarshal(line, &h); {
	case blank:
		push([]byte{})
		return
	case err != nil && !ended:
		push(redact.RemovedLine(n, "a truncated entry"))
		return
	case err != nil:
		push(redact.RemovedLine(n, "not a JSON entry"))
		return
	case h.Method != invokeMethod:
		s.rd.entry(line, ended) // learns tokens (Read's own logic) from the unscrubbed entry
	}
	v, _ := redact.Decode(line)
	entry, ok := v.(map[string]any)
	if !ok {
		push(redact.RemovedLine(n, "not a JSON object"))
		return
	}
	if h.Progress != "" {
		s.rd.twoWay = true
	}
	req, _ := entry["request"].(map[string]any)
	token, _ := req["token"].(string)
	if h.Method == invokeMethod && token != "" && s.rd.tokens[token] == nil && !s.rd.twoWay {
		// A log of one entry per call registers a resource's own
		// callbacks after their calls: wait for the registration.
		s.rd.queue = append(s.rd.queue, held{n: n, entry: entry, token: token, wait: true})
		return
	}
	push(s.entry(n, h.Method, entry, token, line))
}

// finish scrubs a waiting line with what the log now tells of its token.
func (s *scrubber) finish(l *held) {
	l.out, l.entry = s.entry(l.n, invokeMethod, l.entry, l.token, nil), nil
}

// entry scrubs the entry of line n; it returns line when nothing changed
// and line is not nil. A call's payloads, which are base64, are scrubbed by
// their kind and left out of the walk of the entry's members, and so are
// the entry's own (method, progress, …).
func (s *scrubber) entry(n int, method string, entry map[string]any, token string, line []byte) []byte {
	changed := false
	var payloads []func() // each puts a scrubbed payload back
	for _, k := range [...]string{"request", "response"} {
		obj, _ := entry[k].(map[string]any)
		if raw, ok := obj[k]; ok && method == invokeMethod {
			out := s.payload(token, k, raw)
			changed = changed || raw != any(out)
			delete(obj, k)
			payloads = append(payloads, func() { obj[k] = out })
		}
	}
	changed = s.config(method, entry) || changed
	changed = s.again(func() bool {
		walked := false
		for _, k := range slices.Sorted(maps.Keys(entry)) {
			switch k {
			case "method", "progress", "metadata", "timestamp", "duration":
			default:
				entry[k] = s.t.Walk(entry[k], s.scrubLeaf, &walked)
			}
		}
		return walked
	}) || changed
	for _, put := range payloads {
		put()
	}
	if !changed && line != nil {
		return bytes.Clone(line)
	}
	out, err := redact.Encode(entry)
	if err != nil {
		return redact.RemovedLine(n, "not encoded again")
	}
	return out
}

// again runs scrub, and once more if it noted values, so that a secret
// that a line or payload marks is replaced before the mark too; it reports
// whether either run changed anything.
func (s *scrubber) again(scrub func() bool) bool {
	before := len(s.t.Noted())
	changed := scrub()
	if len(s.t.Noted()) != before {
		changed = scrub() || changed
	}
	return changed
}

// providerConfig are the methods whose property values are a provider's
// configuration.
var providerConfig = map[string]bool{
	"/pulumirpc.ResourceProvider/CheckConfig": true, "/pulumirpc.ResourceProvider/DiffConfig": true, "/pulumirpc.ResourceProvider/Configure": true,
}

// payload returns a call's payload raw, its request or response (what),
// scrubbed by the kind of its token.
func (s *scrubber) payload(token, what string, raw any) string {
	removed := func(why string) string { return scrubbedPrefix + "payload " + why + "]" }
	b64, isText := raw.(string)
	bs, err := base64.StdEncoding.DecodeString(b64)
	r := s.rd.tokens[token]
	switch {
	case isText && strings.HasPrefix(b64, scrubbedPrefix):
		return b64
	case token == "":
		return removed("of a call with no token")
	case r == nil:
		return removed("of a token this log never registered, so its kind is unknown")
	case r.kind == 0:
		return removed("of a callback kind this module does not know, registered by " + r.r.Method)
	case !isText || err != nil:
		return removed("that is not valid base64")
	}
	m, res := newMessages(r.kind)
	if what == "response" {
		m = res
	}
	if proto.Unmarshal(bs, m) != nil {
		return removed(fmt.Sprintf("that does not decode as a %v %s", r.kind, what))
	}
	if !s.again(func() bool { return s.message(m.ProtoReflect()) }) {
		return b64
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return removed(fmt.Sprintf("that could not be encoded again as a %v %s", r.kind, what))
	}
	return base64.StdEncoding.EncodeToString(out)
}

// message scrubs a protobuf message in place and reports whether it
// changed it: its strings, its JSON states, and its property values
// (google.protobuf.Struct, Value and ListValue), the last two as the JSON
// values they hold. Fields are visited in the order of their numbers, a
// map's entries in the order of their keys, so that placeholders are
// numbered the same on every run.
func (s *scrubber) message(m protoreflect.Message) bool {
	changed := false
	protorange.Options{Stable: true}.Range(m, func(p protopath.Values) error {
		last, parent := p.Index(-1), p.Index(-2).Value
		var out protoreflect.Value
		switch v := last.Value.Interface().(type) {
		case protoreflect.Message:
			switch v.Interface().(type) {
			case *structpb.Struct, *structpb.Value, *structpb.ListValue:
				changed = s.property(v.Interface()) || changed
				return protorange.Break
			}
			return nil
		case string:
			r := s.scrubLeaf(v).(string)
			if r == v {
				return nil
			}
			out = protoreflect.ValueOfString(r)
		case []byte:
			if fd := last.Step.FieldDescriptor(); fd == nil || !isState(fd) || len(v) == 0 {
				return nil
			}
			state, ok := redact.Decode(v)
			walked := !ok
			text, err := redact.Encode(s.t.Walk(state, s.scrubLeaf, &walked))
			if !walked {
				return nil
			}
			if !ok || err != nil {
				text, _ = json.Marshal(scrubbedPrefix + "a state that is not JSON]")
			}
			out = protoreflect.ValueOfBytes(text)
		default:
			return nil
		}
		switch last.Step.Kind() {
		case protopath.FieldAccessStep:
			parent.Message().Set(last.Step.FieldDescriptor(), out)
		case protopath.ListIndexStep:
			parent.List().Set(last.Step.ListIndex(), out)
		case protopath.MapIndexStep:
			parent.Map().Set(last.Step.MapIndex(), out)
		}
		changed = true
		return nil
	}, nil)
	return changed
}

// property scrubs a property value, a google.protobuf.Struct, Value or
// ListValue, in place as the JSON value it stands for; it reports whether
// it changed it. One that is not valid (a Value of no kind) is emptied.
func (s *scrubber) property(m proto.Message) bool {
	text, err := protojson.Marshal(m)
	v, _ := redact.Decode(text)
	changed := err != nil
	if v = s.t.Walk(v, s.scrubLeaf, &changed); changed {
		text, _ = redact.Encode(v)
		proto.Reset(m)
		_ = protojson.Unmarshal(text, m) // JSON of m's kind, or null
	}
	return changed
}

// scrubLeaf scrubs a scalar of the log: a string has the values it holds
// replaced, and the program's configuration in a variable of the
// environment is replaced whole.
func (s *scrubber) scrubLeaf(v any) any {
	str, ok := v.(string)
	switch rest, env := strings.CutPrefix(str, "PULUMI_CONFIG="); {
	case !ok:
		return v
	case env && !redact.IsPlaceholder(rest):
		return "PULUMI_CONFIG=" + s.t.Placeholder(str, true)
	}
	return s.t.Replace(str)
}

// config replaces the configuration values of an entry of the language
// host's Run, GetDeploymentInfo, or a provider's CheckConfig, DiffConfig or
// Configure, and notes the program's, so that they are replaced wherever
// they appear. The project's, stack's and organization's names are noted
// only as secrets.
func (s *scrubber) config(method string, entry map[string]any) bool {
	changed := false
	body, _ := entry["request"].(map[string]any)
	if method == deploymentInfo {
		body, _ = entry["response"].(map[string]any)
	}
	if providerConfig[method] {
		leaf := s.configLeaf(s.t.Placeholder, false)
		for _, k := range [...]string{"request", "response"} {
			body, _ := entry[k].(map[string]any)
			for _, k := range [...]string{"olds", "news", "oldInputs", "inputs", "args", "variables"} {
				if v, ok := body[k]; ok {
					body[k] = s.t.Walk(v, leaf, &changed)
				}
			}
		}
	}
	if method != runMethod && method != deploymentInfo {
		return changed
	}
	for _, k := range [...]string{"project", "stack", "organization"} {
		if name, ok := body[k].(string); ok && name != "" {
			s.t.Names[name] = true
		}
	}
	keys, _ := body["configSecretKeys"].([]any)
	for _, member := range [...]string{"config", "configPropertyMap"} {
		cfg, _ := body[member].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			cfg[k] = s.t.Walk(cfg[k], s.configLeaf(s.t.Note, slices.Contains(keys, any(k))), &changed)
		}
	}
	return changed
}

// configLeaf returns the function that replaces a configuration value's
// scalars by their placeholders, which place gives (with Table.Note, they
// are replaced wherever they appear after).
func (s *scrubber) configLeaf(place func(any, bool) string, secret bool) func(any) any {
	return func(v any) any {
		if str, ok := v.(string); v == nil || ok && redact.IsPlaceholder(str) {
			return v
		}
		return place(v, secret)
	}
}
