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
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/redact"
)

// scrubbedPrefix starts every placeholder Scrub puts in place of something
// it removed whole (a payload, a line), as opposed to a value.
const scrubbedPrefix = redact.Removed

// isSecretEnvelope reports whether a JSON object is a secret.
var isSecretEnvelope = redact.IsSecret

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
//     longer strings too, a shorter one ("1", "true", "eu") only where a
//     whole string equals it. A configuration value that is not secret and names the
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
	t := redact.New()
	if rs, ok := src.(io.ReadSeeker); ok {
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			// A first pass learns every secret and configuration value,
			// wherever the log first tells it, and writes nothing.
			if err := (&scrubber{t: t}).run(io.Discard, rs); err != nil {
				return err
			}
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return fmt.Errorf("replay: scrubbing the log: going back to its start: %w", err)
			}
		}
	}
	return (&scrubber{t: t}).run(dst, src)
}

type scrubber struct {
	rd   *reader         // reads the log and learns the tokens, as Read does
	t    *redact.Table   // the placeholders of the values met so far
	leaf func(v any) any // scrubLeaf
}

// run scrubs the log src into dst, reading it as Read does: the reader
// learns the tokens, and holds the lines after a call that waits for its
// token's registration.
func (s *scrubber) run(dst io.Writer, src io.Reader) error {
	s.rd = newReader(src)
	s.rd.scrub = s
	s.leaf = s.scrubLeaf
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

// removedLine is the placeholder of line n, removed whole.
func removedLine(n int, was string) []byte {
	return []byte(scrubbedPrefix + "line " + strconv.Itoa(n) + " was " + was + " and was removed]")
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
		push(removedLine(n, "a truncated entry"))
		return
	case err != nil:
		push(removedLine(n, "not a JSON entry"))
		return
	case h.Method != invokeMethod:
		s.rd.entry(line, ended) // learns tokens (Read's own logic) from the unscrubbed entry
		if s.plain(h.Method, line) {
			push(bytes.Clone(line))
			return
		}
	}
	v, _ := redact.Decode(line)
	entry, ok := v.(map[string]any)
	if !ok {
		push(removedLine(n, "not a JSON object"))
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
// and line is not nil.
func (s *scrubber) entry(n int, method string, entry map[string]any, token string, line []byte) []byte {
	changed := false
	if method == invokeMethod {
		changed = s.payloads(entry, token)
	}
	changed = s.config(method, entry) || changed
	before := len(s.t.Noted())
	s.walkEntry(entry, method == invokeMethod, &changed)
	if len(s.t.Noted()) != before {
		// Secrets met in this line are replaced in all of it.
		s.walkEntry(entry, method == invokeMethod, &changed)
	}
	if !changed && line != nil {
		return bytes.Clone(line)
	}
	out, err := redact.Encode(entry)
	if err != nil {
		return removedLine(n, "not encoded again")
	}
	return out
}

// providerConfig are the methods whose property values are a provider's
// configuration.
var providerConfig = map[string]bool{
	"/pulumirpc.ResourceProvider/CheckConfig": true, "/pulumirpc.ResourceProvider/DiffConfig": true, "/pulumirpc.ResourceProvider/Configure": true,
}

// plain reports whether an entry certainly holds nothing to scrub, so that
// it is copied without being decoded: no configuration, no payload, no
// secret envelope, and none of the values noted so far, looked for as they
// appear in JSON text (which only works for values JSON does not escape).
func (s *scrubber) plain(method string, line []byte) bool {
	noted := s.t.Noted()
	if method == runMethod || method == deploymentInfo || providerConfig[method] || len(noted) > 64 ||
		bytes.Contains(line, []byte(sig.Secret)) || bytes.Contains(line, []byte(sig.OutputValue)) ||
		bytes.Contains(line, []byte("PULUMI_CONFIG=")) {
		return false
	}
	for str := range noted {
		if escapes(str) {
			return false
		}
		if len(str) < redact.MinSubstring {
			str = `"` + str + `"` // replaced only as a whole string
		}
		if bytes.Contains(line, []byte(str)) {
			return false
		}
	}
	return true
}

// escapes reports whether JSON text may show s otherwise than as its bytes.
func escapes(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f || strings.ContainsRune("\"\\<>&", r) })
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
	for _, k := range [...]string{"request", "response"} {
		obj, _ := entry[k].(map[string]any)
		raw, ok := obj[k]
		if !ok {
			continue
		}
		str, isText := raw.(string)
		switch {
		case isText && strings.HasPrefix(str, scrubbedPrefix):
			continue
		case why != "":
			str = scrubbedPrefix + "payload of " + why + "]"
		case !isText:
			str = scrubbedPrefix + "payload that is not base64 text]"
		default:
			str = s.payload(r.kind, k, str)
		}
		if raw != any(str) {
			obj[k], changed = str, true
		}
	}
	return changed
}

// payload scrubs one base64 payload of kind k, its request or response
// (what).
func (s *scrubber) payload(k callbacks.Kind, what, b64 string) string {
	bs, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return scrubbedPrefix + "payload that is not valid base64]"
	}
	m, res := newMessages(k)
	if what == "response" {
		m = res
	}
	if proto.Unmarshal(bs, m) != nil {
		return fmt.Sprintf("%spayload that does not decode as a %v %s]", scrubbedPrefix, k, what)
	}
	before := len(s.t.Noted())
	changed := s.message(m.ProtoReflect())
	if len(s.t.Noted()) != before {
		// Secrets a field marks are replaced in the fields before it too.
		changed = s.message(m.ProtoReflect()) || changed
	}
	if !changed {
		return b64
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return fmt.Sprintf("%spayload that could not be encoded again as a %v %s]", scrubbedPrefix, k, what)
	}
	return base64.StdEncoding.EncodeToString(out)
}

// message scrubs a protobuf message in place; it reports whether it changed
// it. A property value is scrubbed as the JSON value it stands for, and
// emptied if that could not be encoded again.
func (s *scrubber) message(m protoreflect.Message) bool {
	var v any
	switch x := m.Interface().(type) {
	case *structpb.Struct:
		v = x.AsMap()
	case *structpb.Value:
		v = x.AsInterface()
	case *structpb.ListValue:
		v = x.AsSlice()
	default:
		return s.fields(m)
	}
	changed := false
	pv, err := structpb.NewValue(s.t.Walk(v, s.leaf, &changed))
	if !changed {
		return false
	}
	if err != nil {
		pv = structpb.NewNullValue()
	}
	switch x := m.Interface().(type) {
	case *structpb.Struct:
		x.Fields = pv.GetStructValue().GetFields()
	case *structpb.Value:
		x.Kind = pv.Kind
	case *structpb.ListValue:
		x.Values = pv.GetListValue().GetValues()
	}
	return true
}

// fields scrubs the strings, messages and JSON states of m's fields, in
// field order (a map's in the order of its keys) so that placeholders are
// numbered the same on every run.
func (s *scrubber) fields(m protoreflect.Message) bool {
	changed := false
	one := func(fd protoreflect.FieldDescriptor, v protoreflect.Value, set func(protoreflect.Value)) {
		switch {
		case fd.Message() != nil:
			changed = s.message(v.Message()) || changed
		case fd.Kind() == protoreflect.StringKind:
			if r := s.replace(v.String()); r != v.String() {
				set(protoreflect.ValueOfString(r))
				changed = true
			}
		case isState(fd):
			if st, ok := s.state(v.Bytes()); ok {
				set(protoreflect.ValueOfBytes(st))
				changed = true
			}
		}
	}
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if !m.Has(fd) {
			continue
		}
		switch v := m.Get(fd); {
		case fd.IsList():
			l := v.List()
			for j := range l.Len() {
				one(fd, l.Get(j), func(x protoreflect.Value) { l.Set(j, x) })
			}
		case fd.IsMap():
			mp := v.Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				one(fd.MapValue(), mp.Get(k), func(x protoreflect.Value) { mp.Set(k, x) })
			}
		default:
			one(fd, v, func(x protoreflect.Value) { m.Set(fd, x) })
		}
	}
	return changed
}

// state scrubs a migration's JSON state; a state that is not JSON is
// replaced whole.
func (s *scrubber) state(b []byte) ([]byte, bool) {
	v, ok := redact.Decode(b)
	switch {
	case len(b) == 0:
		return b, false
	case !ok:
		out, _ := json.Marshal(scrubbedPrefix + "a state that is not JSON]")
		return out, true
	}
	changed := false
	v = s.t.Walk(v, s.leaf, &changed)
	if !changed {
		return b, false
	}
	out, err := redact.Encode(v)
	if err != nil {
		out, _ = json.Marshal(scrubbedPrefix + "a state that could not be encoded again]")
	}
	return out, true
}

// envelope lists an entry's own members, which say what the entry is and
// hold nothing of the deployment: they are never replaced, so that a
// configuration value such as "server" leaves the log readable.
var envelope = [...]string{"method", "progress", "metadata", "timestamp", "duration"}

// walkEntry scrubs an entry's members but its envelope, and not a call's
// payloads, which are base64 and scrubbed by payloads.
func (s *scrubber) walkEntry(entry map[string]any, invoke bool, changed *bool) {
	type kept struct {
		obj map[string]any
		k   string
		v   any
	}
	var keep []kept
	for _, k := range envelope {
		if v, ok := entry[k]; ok {
			keep = append(keep, kept{entry, k, v})
		}
	}
	for _, k := range [...]string{"request", "response"} {
		if obj, ok := entry[k].(map[string]any); ok && invoke {
			if v, ok := obj[k]; ok {
				keep = append(keep, kept{obj, k, v})
			}
		}
	}
	for _, x := range keep {
		delete(x.obj, x.k)
	}
	s.t.Walk(entry, s.leaf, changed)
	for _, x := range keep {
		x.obj[x.k] = x.v
	}
}

// scrubLeaf scrubs a scalar of the log: a string holding secrets or
// configuration values.
func (s *scrubber) scrubLeaf(v any) any {
	if str, ok := v.(string); ok {
		return s.replace(str)
	}
	return v
}

// replace returns str with the values it holds replaced; the program's
// configuration in a variable of the environment is replaced whole.
func (s *scrubber) replace(str string) string {
	if rest, ok := strings.CutPrefix(str, "PULUMI_CONFIG="); ok && !redact.IsPlaceholder(rest) {
		return "PULUMI_CONFIG=" + s.t.Placeholder(str, true)
	}
	return s.t.Replace(str)
}

// config replaces the configuration values of an entry of the language
// host's Run, GetDeploymentInfo, or a provider's CheckConfig, DiffConfig or
// Configure.
func (s *scrubber) config(method string, entry map[string]any) bool {
	changed := false
	req, _ := entry["request"].(map[string]any)
	res, _ := entry["response"].(map[string]any)
	switch {
	case method == runMethod:
		s.program(req, &changed)
	case method == deploymentInfo:
		s.program(res, &changed)
	case providerConfig[method]:
		for _, body := range []map[string]any{req, res} {
			for _, k := range [...]string{"olds", "news", "oldInputs", "inputs", "args", "variables"} {
				if v, ok := body[k]; ok {
					body[k] = s.t.Walk(v, s.configLeaf(false, false), &changed)
				}
			}
		}
	}
	return changed
}

// program replaces the program's configuration in a RunRequest or a
// DeploymentInfo, and notes every value, so that replace finds it
// wherever it appears after.
func (s *scrubber) program(body map[string]any, changed *bool) {
	for _, k := range [...]string{"project", "stack", "organization"} {
		if name, ok := body[k].(string); ok && name != "" {
			s.t.Names[name] = true
		}
	}
	secretKeys := map[string]bool{}
	keys, _ := body["configSecretKeys"].([]any)
	for _, k := range keys {
		if k, ok := k.(string); ok {
			secretKeys[k] = true
		}
	}
	for _, member := range [...]string{"config", "configPropertyMap"} {
		cfg, _ := body[member].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			cfg[k] = s.t.Walk(cfg[k], s.configLeaf(secretKeys[k], true), changed)
		}
	}
}

// configLeaf returns the function that replaces a configuration value's
// scalars; with note, replace finds them after.
func (s *scrubber) configLeaf(secret, note bool) func(any) any {
	return func(v any) any {
		if str, ok := v.(string); v == nil || ok && redact.IsPlaceholder(str) {
			return v
		}
		if note {
			return s.t.Note(v, secret)
		}
		return s.t.Placeholder(v, secret)
	}
}
