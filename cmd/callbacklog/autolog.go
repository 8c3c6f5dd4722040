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
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/calllog"
	"github.com/langhost/callbacks/internal/wire"
	"github.com/langhost/callbacks/replay"
)

// This file reads the second source of an account: Pulumi's automatic log,
// which every pulumi command writes, encrypted, to $PULUMI_HOME/logs, as
// `pulumi logs decrypt` prints it (JSON Lines, one {"level","msg","time",
// "v", attributes...} object a line). The engine writes a line or two about
// each callback call it makes; this file pairs them into calls, with no
// more certainty than the lines give.

// origin says which source an account was read from, and what that
// source cannot tell.
type origin struct {
	Key    string   // -json's "source": "grpc" or "automatic"
	Text   string   // the account's words for it
	Cannot []string // what the account cannot tell, read from it
}

var (
	fromGRPC = origin{Key: "grpc", Text: "the engine's gRPC log (PULUMI_DEBUG_GRPC)"}
	fromAuto = origin{
		Key:  "automatic",
		Text: "Pulumi's automatic log (pulumi logs decrypt)",
		Cannot: []string{
			"times are the engine's log lines', not the calls' own",
			"where a callback was registered (a transform is \"transform\")",
			"a hook's inputs and outputs (only its name, resource and answer)",
			"which answer is whose when calls of one kind ran at once (\"unknown\")",
			"the runs, the providers' steps and the calls never answered (the gRPC log has them)",
		},
	}
)

// autoEntryPrefix is how a line of a decrypted automatic log starts when
// `pulumi logs decrypt` printed it (its fields sorted; every line has a
// level).
const autoEntryPrefix = `{"level":"`

// isAutoLog tells a decrypted automatic log from an engine gRPC log by the
// first line within head that is an entry of either: an object with a
// method is the gRPC log's, one with a level and a message the automatic
// log's. A line longer than head is told by how it starts.
func isAutoLog(head []byte) bool {
	for len(head) > 0 {
		line, rest, whole := bytes.Cut(head, []byte("\n"))
		head = rest
		line = bytes.TrimSpace(line)
		if !whole {
			return bytes.HasPrefix(line, []byte(autoEntryPrefix))
		}
		var e struct {
			Method *string `json:"method"`
			Level  *string `json:"level"`
			Msg    *string `json:"msg"`
		}
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch {
		case e.Method != nil:
			return false
		case e.Level != nil && e.Msg != nil:
			return true
		}
	}
	return false
}

// autoEntry is the part of an automatic log line this file reads.
type autoEntry struct {
	Level    string          `json:"level"`
	Msg      string          `json:"msg"`
	Time     time.Time       `json:"time"`
	Metadata json.RawMessage `json:"metadata"`

	// Attributes of the engine's state migration records.
	URN             string `json:"urn"`
	RootURN         string `json:"rootURN"`
	ResourceURN     string `json:"resourceURN"`
	MigrationNumber int    `json:"migrationNumber"`
	Inputs          string `json:"inputs"`
	Outputs         string `json:"outputs"`
}

// autoInfo is what reading an automatic log learnt besides its calls.
type autoInfo struct {
	entries    int    // lines that are entries of an automatic log
	deployment bool   // a line shows a deployment ran
	command    string // the command that wrote the log, from its metadata line

	moduleCalls int // calls told from the records of this module
	engineCalls int // calls told from the engine's lines only
	newerSchema int // the newest schema of the module's records, if newer than the reader knows
	// Of the calls told from the module's records: the transforms and
	// migrations whose records do not say what they changed (records of
	// schema 1), and the calls whose records hold their payloads.
	moduleUntold, modulePayloads int
}

// A URN or a parent's URN in the engine's lines: a run of non-space
// characters, where a scrubbed log's placeholders ("[secret 2]") count as
// such, the space in them included.
const urnText = `(?:\[(?:secret|config) [0-9]+\]|\S)`

// The engine's lines about callbacks (pkg/resource/deploy, source_eval.go,
// deployment.go, state_migration*.go).
var (
	reTransformBefore = regexp.MustCompile(`^Transform: name=(.*) type=(\S*) custom=(\S*) parent=(` + urnText + `*) props=(\S*) opts=(.*)$`)
	reTransformAfter  = regexp.MustCompile(`^Transform: props=(\S*) opts=(.*)$`)
	reInvokeBefore    = regexp.MustCompile(`^Invoke transform: token=(\S*) props=(\S*) opts=(.*)$`)
	reInvokeAfter     = regexp.MustCompile(`^Invoke transform: props=(\S*) opts=(.*)$`)
	reCallingHook     = regexp.MustCompile(`^calling (error )?hook ("(?:[^"\\]|\\.)*") for urn (` + urnText + `+)$`)
	reHookV6          = regexp.MustCompile(`^(ResourceHook|ErrorHook) calling hook ("(?:[^"\\]|\\.)*") for urn (` + urnText + `+)$`)
	reHookReturned    = regexp.MustCompile(`^ResourceHook (.*) returned ("(?:[^"\\]|\\.)*")$`)
	reErrorHookRet    = regexp.MustCompile(`^ErrorHook (.*) returned ("(?:[^"\\]|\\.)*"), retry=(true|false)$`)
	reHookCallError   = regexp.MustCompile(`^(ResourceHook|ErrorHook) ("(?:[^"\\]|\\.)*") call error: (.*)$`)
	reStateMigration  = regexp.MustCompile(`^StateMigration: urn=(` + urnText + `+)$`)
	reProviderFailed  = regexp.MustCompile(`^Provider\[[^\]]*\]\.(Create|Update|Delete)\((urn:` + urnText + `*)\) failed: (.*)$`)
	rePropertyValue   = regexp.MustCompile(`cHVsdW1pUHY[A-Za-z0-9+/]*=*`)
)

// propertyValueMagic starts every property value the engine logs:
// "pulumiPv" (sdk go/common/util/logging/log_value.go).
const propertyValueMagic uint64 = 0x7650696d756c7570

// decodePropertyValue decodes a logged property value: standard base64 of
// the magic and a binary google.protobuf.Value.
func decodePropertyValue(s string) (*structpb.Value, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if len(b) < 8 || binary.LittleEndian.Uint64(b[:8]) != propertyValueMagic {
		return nil, errors.New("it does not start with the magic pulumiPv")
	}
	v := &structpb.Value{}
	if err := proto.Unmarshal(b[8:], v); err != nil {
		return nil, fmt.Errorf("not a protobuf Value: %w", err)
	}
	return v, nil
}

// decodeProperties decodes a logged property map: a Value holding a
// struct, whose properties must convert (wire.FromStruct).
func decodeProperties(s string) (*structpb.Struct, error) {
	v, err := decodePropertyValue(s)
	if err != nil {
		return nil, err
	}
	st := v.GetStructValue()
	if st == nil {
		if _, null := v.GetKind().(*structpb.Value_NullValue); null || v.GetKind() == nil {
			return &structpb.Struct{}, nil
		}
		return nil, errors.New("it is not a property map")
	}
	if _, err := wire.FromStruct(st); err != nil {
		return nil, fmt.Errorf("its properties do not convert: %w", err)
	}
	return st, nil
}

// pending is a call whose start the log showed and whose answer it has not
// yet.
type pending struct {
	rec   *record
	props *structpb.Struct // a transform's properties before it ran
	opts  string           // a transform's options before it ran, as logged
	urn   string
	v6    bool // the hook's second start line was seen
}

// pairer pairs the lines that end calls with the lines that started them
// when the end names no call: only while one call is open is the pairing
// certain. Once an end comes with several open, every call open since the
// last moment none was is left unknown, with a note.
type pairer struct {
	window []*pending // the calls started since none was open
	ends   []int      // the lines of the answers that came while several were open
	open   int
	what   string // "transforms", "calls of the hook" ...: for the note
}

func (p *pairer) start(c *pending) {
	p.window = append(p.window, c)
	p.open++
}

// end returns the call the end line n ends, or nil when it is not certain
// which (or no call is open).
func (p *pairer) end(n int) *pending {
	switch {
	case p.open == 0:
		return nil
	case len(p.window) == 1 && len(p.ends) == 0:
		c := p.window[0]
		p.window, p.open = nil, 0
		return c
	}
	p.ends = append(p.ends, n)
	p.open--
	lines := make([]string, len(p.ends))
	for i, l := range p.ends {
		lines[i] = strconv.Itoa(l)
	}
	later := ""
	if p.open > 0 {
		later = " (or a later one)"
	}
	for _, c := range p.window {
		c.rec.Outcome = "unknown"
		c.rec.NoDuration = true
		c.rec.Note = fmt.Sprintf("%d %s were running at once, and the log's answers name no call: "+
			"which of the answers on lines %s%s is this one's is not certain",
			len(p.window), p.what, strings.Join(lines, ", "), later)
	}
	if p.open == 0 {
		p.window, p.ends = nil, nil
	}
	return nil
}

// failure is the last failure of a provider operation the log shows for a
// resource: what an error hook is then called about.
type failure struct {
	op, msg string
	count   int // how many times this operation failed for the resource
}

// autoReader turns the lines of an automatic log into records.
type autoReader struct {
	secrets  bool
	recs     []*record
	problems []problem
	found    secretSet
	info     autoInfo

	transforms, invokes pairer
	hooks               map[string]*pairer // by kind and resource name: the end lines name the resource
	openHooks           []*pending
	failures            map[string]*failure // by URN
	migrations          map[string]*pending // open, by URN
	prior, result       map[string]map[string][2]string
	given               map[*record]*structpb.Struct // what transforms left unknown were given
	anyURN              resource.URN

	mods    []*modCall          // the calls the module's records show, in the order of their first record
	modByID map[string]*modCall // by call id
	last    time.Time           // the log's last line's time
}

func newAutoReader(secrets bool) *autoReader {
	return &autoReader{
		secrets:    secrets,
		found:      secretSet{},
		transforms: pairer{what: "transforms"},
		invokes:    pairer{what: "invoke transforms"},
		hooks:      map[string]*pairer{},
		failures:   map[string]*failure{},
		migrations: map[string]*pending{},
		prior:      map[string]map[string][2]string{},
		result:     map[string]map[string][2]string{},
		given:      map[*record]*structpb.Struct{},
		modByID:    map[string]*modCall{},
	}
}

// readAutoLog reads a decrypted automatic log. Lines that are not JSON are
// problems; lines of the log this file does not know are left out. Unless
// secrets, every value a logged property value marks secret is hidden in
// every string of the records and problems.
func readAutoLog(r io.Reader, secrets bool) ([]*record, []problem, autoInfo) {
	a := newAutoReader(secrets)
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			a.line(n, bytes.TrimSpace(line), err != nil)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				a.problems = append(a.problems, problem{Line: n, Reason: "reading the log: " + err.Error()})
			}
			break
		}
	}
	a.finish()
	if !secrets && len(a.found) > 0 {
		a.found.redactor().redact(a.recs, a.problems)
	}
	return a.recs, a.problems, a.info
}

func (a *autoReader) problem(n int, format string, args ...any) {
	a.problems = append(a.problems, problem{Line: n, Reason: fmt.Sprintf(format, args...)})
}

func (a *autoReader) line(n int, line []byte, last bool) {
	var e autoEntry
	if err := json.Unmarshal(line, &e); err != nil {
		if last && line[0] == '{' {
			a.problem(n, "the line is cut short: the log ends inside it")
			return
		}
		a.problem(n, "not a line of the log (JSON): %v", err)
		return
	}
	if e.Level == "" && e.Msg == "" {
		return // JSON, but no entry of this log
	}
	a.info.entries++
	if a.info.command == "" && len(e.Metadata) > 0 {
		var md struct{ Command string }
		if json.Unmarshal(e.Metadata, &md) == nil {
			a.info.command = md.Command
		}
	}
	if !a.secrets {
		a.collect(line)
	}
	if e.Time.After(a.last) {
		a.last = e.Time
	}
	msg := e.Msg
	if (msg == calllog.StartedBody || msg == calllog.FinishedBody) && a.moduleLine(n, line, e) {
		return
	}
	if !a.info.deployment && (strings.HasPrefix(msg, "deploymentExecutor.") || strings.HasPrefix(msg, "EvalSourceIterator") ||
		strings.HasPrefix(msg, "ResourceMonitor.")) {
		a.info.deployment = true
	}
	switch {
	case strings.HasPrefix(msg, "Transform: "):
		a.transform(n, e, msg)
	case strings.HasPrefix(msg, "Invoke transform: "):
		a.invoke(n, e, msg)
	case strings.HasPrefix(msg, "transform callback error: "):
		a.transformFailed(&a.transforms, n, e, strings.TrimPrefix(msg, "transform callback error: "))
	case strings.HasPrefix(msg, "Invoke transform callback error: "):
		a.transformFailed(&a.invokes, n, e, strings.TrimPrefix(msg, "Invoke transform callback error: "))
	case strings.HasPrefix(msg, "calling "):
		a.callingHook(n, e, msg)
	case strings.HasPrefix(msg, "ResourceHook ") || strings.HasPrefix(msg, "ErrorHook "):
		a.hookLine(n, e, msg)
	case strings.HasPrefix(msg, "Provider["):
		if m := reProviderFailed.FindStringSubmatch(msg); m != nil {
			f := a.failures[m[2]]
			op := strings.ToLower(m[1])
			if f == nil || f.op != op {
				f = &failure{op: op}
				a.failures[m[2]] = f
			}
			f.msg = m[3]
			f.count++
		}
	case strings.HasPrefix(msg, "StateMigration: "), strings.HasPrefix(msg, "state migration"),
		msg == "running state migration":
		a.migration(n, e, msg)
	}
}

// collect adds the secrets of every property value the line holds, in its
// message or its attributes, whether or not the account shows the line: a
// hook's refusal may repeat a secret only a provider's line marks secret.
func (a *autoReader) collect(line []byte) {
	for _, m := range rePropertyValue.FindAll(line, -1) {
		if v, err := decodePropertyValue(string(m)); err == nil {
			a.found.json(v.AsInterface(), false)
		}
	}
}

func (a *autoReader) add(rec *record) {
	rec.Seq = len(a.recs) + 1
	a.recs = append(a.recs, rec)
}

func (a *autoReader) transform(n int, e autoEntry, msg string) {
	if m := reTransformBefore.FindStringSubmatch(msg); m != nil {
		rec := &record{
			Line: n, Kind: callbacks.KindResourceTransform.String(), Registration: "transform",
			Type: m[2], Name: m[1], Start: e.Time, Outcome: "unknown",
		}
		if parent := resource.URN(m[4]); parent.IsValid() {
			// As the engine makes it (the stack's own has no parent, and
			// its URN is not in the line).
			rec.URN = string(resource.NewURN(parent.Stack(), parent.Project(), parent.QualifiedType(), tokens.Type(m[2]), m[1]))
		}
		c := &pending{rec: rec, opts: m[6]}
		props, err := decodeProperties(m[5])
		if err != nil {
			a.problem(n, "the transform's properties (props=) do not decode: %v", err)
			rec.Note = "the properties it was given do not decode"
		}
		c.props = props
		a.given[rec] = props
		req := newObject().setString("name", m[1]).setString("type", m[2])
		if custom, _ := strconv.ParseBool(m[3]); custom { // false left out, as the protocol's JSON leaves it
			req.set("custom", &value{kind: vBool, flag: true})
		}
		req.setString("parent", m[4])
		if props != nil {
			req.set("properties", fromStruct(props, a.secrets))
		}
		rec.Payload = &exchange{Request: req.setString("options", m[6]), AnswerMissing: missingUnknown}
		if u := resource.URN(rec.URN); u.IsValid() {
			a.anyURN = u
		}
		a.add(rec)
		a.transforms.start(c)
		return
	}
	if m := reTransformAfter.FindStringSubmatch(msg); m != nil {
		a.transformEnded(&a.transforms, n, e, m[1], m[2], callbacks.KindResourceTransform)
	}
}

func (a *autoReader) invoke(n int, e autoEntry, msg string) {
	if m := reInvokeAfter.FindStringSubmatch(msg); m != nil {
		a.transformEnded(&a.invokes, n, e, m[1], m[2], callbacks.KindInvokeTransform)
		return
	}
	if m := reInvokeBefore.FindStringSubmatch(msg); m != nil {
		rec := &record{
			Line: n, Kind: callbacks.KindInvokeTransform.String(), Registration: "invoke transform",
			Invoke: m[1], Start: e.Time, Outcome: "unknown",
		}
		c := &pending{rec: rec, opts: m[3]}
		props, err := decodeProperties(m[2])
		if err != nil {
			a.problem(n, "the invoke transform's arguments (props=) do not decode: %v", err)
			rec.Note = "the arguments it was given do not decode"
		}
		c.props = props
		a.given[rec] = props
		req := newObject().setString("token", m[1])
		if props != nil {
			req.set("args", fromStruct(props, a.secrets))
		}
		rec.Payload = &exchange{Request: req.setString("options", m[3]), AnswerMissing: missingUnknown}
		a.add(rec)
		a.invokes.start(c)
	}
}

// transformEnded takes a transform's after line: its properties and
// options as the transform left them.
func (a *autoReader) transformEnded(p *pairer, n int, e autoEntry, props, opts string, kind callbacks.Kind) {
	after, err := decodeProperties(props)
	if err != nil {
		a.problem(n, "the transformed properties (props=) do not decode: %v", err)
	}
	c := p.end(n)
	if c == nil {
		return
	}
	rec := c.rec
	rec.Duration = e.Time.Sub(rec.Start)
	if rec.Payload != nil {
		root := "properties"
		if kind == callbacks.KindInvokeTransform {
			root = "args"
		}
		answer := newObject()
		if err == nil {
			answer.set(root, fromStruct(after, a.secrets))
		}
		rec.Payload.Answer, rec.Payload.AnswerMissing = answer.setString("options", opts), ""
	}
	if err != nil || c.props == nil {
		rec.Note = fmt.Sprintf("its properties do not decode (line %d): what it changed is not known", n)
		return
	}
	rec.Changes = append(propertyChanges(kind, c.props, after, a.secrets), optionChanges(c.opts, opts)...)
	rec.Outcome = "unchanged"
	if len(rec.Changes) > 0 {
		rec.Outcome = "changed"
	}
}

func (a *autoReader) transformFailed(p *pairer, n int, e autoEntry, err string) {
	if c := p.end(n); c != nil {
		c.rec.Outcome, c.rec.Err, c.rec.Duration = "failed", err, e.Time.Sub(c.rec.Start)
		if c.rec.Payload != nil {
			c.rec.Payload.AnswerMissing = missingFailed
		}
	}
}

// propertyChanges is what a transform changed in its properties, by the
// same differ as a gRPC log's calls (replay.Call.Changes), given the
// properties before and after as a request and a response of its kind.
func propertyChanges(kind callbacks.Kind, before, after *structpb.Struct, secrets bool) []change {
	var req, res proto.Message
	prefix := "properties"
	if kind == callbacks.KindInvokeTransform {
		req, res = &pulumirpc.TransformInvokeRequest{Args: before}, &pulumirpc.TransformInvokeResponse{Args: after}
		prefix = "args"
	} else {
		req, res = &pulumirpc.TransformRequest{Properties: before}, &pulumirpc.TransformResponse{Properties: after}
	}
	reqb, err1 := proto.Marshal(req)
	resb, err2 := proto.Marshal(res)
	if err1 != nil || err2 != nil {
		return nil
	}
	c := &replay.Call{Kind: kind, Request: reqb, Response: resb}
	var out []change
	for _, ch := range c.Changes(shown(secrets)) {
		if ch.Path == prefix || strings.HasPrefix(ch.Path, prefix+".") || strings.HasPrefix(ch.Path, prefix+"[") {
			out = append(out, change{Path: ch.Path, Old: orAbsent(ch.Old), New: orAbsent(ch.New)})
		}
	}
	if len(out) > 0 {
		old, nw := map[string]*value{}, map[string]*value{}
		fromStruct(before, secrets).index(prefix, old)
		fromStruct(after, secrets).index(prefix, nw)
		attachValues(out, old, nw)
	}
	return out
}

// optionChanges compares a transform's options before and after, as the
// engine logs them (Go's %v of a map: map[key:value ...]), key by key at the
// top level; text that is not such a map is compared whole.
func optionChanges(before, after string) []change {
	if before == after {
		return nil
	}
	b, okb := topLevel(before)
	a, oka := topLevel(after)
	if !okb || !oka {
		return []change{{Path: "options", Old: before, New: after}}
	}
	keys := map[string]bool{}
	for k := range b {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	var out []change
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		old, hadOld := b[k]
		nw, hasNew := a[k]
		if hadOld && hasNew && old == nw {
			continue
		}
		if !hadOld {
			old = absent
		}
		if !hasNew {
			nw = absent
		}
		out = append(out, change{Path: "options." + k, Old: old, New: nw})
	}
	return out
}

// topLevel splits "map[k1:v1 k2:map[a:b] k3:[x y]]" into its top-level
// entries, telling nesting by brackets.
func topLevel(s string) (map[string]string, bool) {
	if !strings.HasPrefix(s, "map[") || !strings.HasSuffix(s, "]") {
		return nil, false
	}
	body := s[len("map[") : len(s)-1]
	out := map[string]string{}
	depth, start := 0, 0
	flush := func(end int) bool {
		item := body[start:end]
		if item == "" {
			return true
		}
		k, v, ok := strings.Cut(item, ":")
		if !ok || k == "" {
			return false
		}
		out[k] = v
		return true
	}
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return nil, false
			}
		case ' ':
			if depth == 0 {
				if !flush(i) {
					return nil, false
				}
				start = i + 1
			}
		}
	}
	if depth != 0 || !flush(len(body)) {
		return nil, false
	}
	return out, true
}

// callingHook takes the line the engine writes as it calls a hook: it names
// the hook and the resource's URN.
func (a *autoReader) callingHook(n int, e autoEntry, msg string) {
	m := reCallingHook.FindStringSubmatch(msg)
	if m == nil {
		return
	}
	name, err := strconv.Unquote(m[2])
	if err != nil {
		return
	}
	kind := callbacks.KindResourceHook
	if m[1] != "" {
		kind = callbacks.KindErrorHook
	}
	a.openHook(n, e, kind, name, m[3])
}

func (a *autoReader) openHook(n int, e autoEntry, kind callbacks.Kind, name, urn string) *pending {
	u := resource.URN(urn)
	rec := &record{
		Line: n, Kind: kind.String(), Registration: name, HookName: name,
		URN: urn, Start: e.Time, Outcome: "unknown",
	}
	if u.IsValid() {
		rec.Type, rec.Name = string(u.Type()), u.Name()
	}
	if name == "" {
		rec.Registration = "(a hook the log does not name)"
	}
	rec.Payload = &exchange{RequestMissing: missingHookReq, AnswerMissing: missingUnknown}
	if kind == callbacks.KindErrorHook {
		if f := a.failures[urn]; f != nil {
			rec.Op, rec.Attempt, rec.Message = f.op, f.count, f.msg
		}
	}
	c := &pending{rec: rec, urn: urn}
	a.add(rec)
	a.openHooks = append(a.openHooks, c)
	a.hookPairer(kind, rec.Name).start(c)
	return c
}

func (a *autoReader) hookPairer(kind callbacks.Kind, resName string) *pairer {
	key := kind.String() + "\x00" + resName
	p := a.hooks[key]
	if p == nil {
		what := "hooks"
		if kind == callbacks.KindErrorHook {
			what = "error hooks"
		}
		p = &pairer{what: fmt.Sprintf("several %s of resources named %q", what, resName)}
		a.hooks[key] = p
	}
	return p
}

// hookLine takes the lines that name the resource (its name, which the
// engine's message calls the hook's): a second start line, and the answer.
func (a *autoReader) hookLine(n int, e autoEntry, msg string) {
	if m := reHookV6.FindStringSubmatch(msg); m != nil {
		kind := callbacks.KindResourceHook
		if m[1] == "ErrorHook" {
			kind = callbacks.KindErrorHook
		}
		for _, c := range a.openHooks {
			if !c.v6 && c.urn == m[3] && c.rec.Kind == kind.String() {
				c.v6 = true
				return
			}
		}
		// A call whose first line the log does not have.
		a.openHook(n, e, kind, "", m[3]).v6 = true
		return
	}
	var c *pending
	var kind callbacks.Kind
	var end func(*record)
	switch m := reErrorHookRet.FindStringSubmatch(msg); {
	case m != nil:
		kind = callbacks.KindErrorHook
		errText, _ := strconv.Unquote(m[2])
		retry := m[3] == "true"
		c = a.hookPairer(kind, m[1]).end(n)
		end = func(r *record) {
			switch {
			case errText != "":
				r.Outcome, r.Err = "failed", errText
			case retry:
				r.Outcome = "retry"
			default:
				r.Outcome = "no retry"
			}
			answer := newObject()
			if retry {
				answer.set("retry", &value{kind: vBool, flag: true})
			}
			r.Payload.Answer, r.Payload.AnswerMissing = answer.setString("error", errText), ""
		}
	default:
		if m := reHookReturned.FindStringSubmatch(msg); m != nil {
			kind = callbacks.KindResourceHook
			errText, _ := strconv.Unquote(m[2])
			c = a.hookPairer(kind, m[1]).end(n)
			end = func(r *record) {
				r.Outcome = "ok"
				if errText != "" {
					r.Outcome, r.Message = "refused", errText
				}
				r.Payload.Answer, r.Payload.AnswerMissing = newObject().setString("error", errText), ""
			}
		} else if m := reHookCallError.FindStringSubmatch(msg); m != nil {
			kind = callbacks.KindResourceHook
			if m[1] == "ErrorHook" {
				kind = callbacks.KindErrorHook
			}
			resName, _ := strconv.Unquote(m[2])
			c = a.hookPairer(kind, resName).end(n)
			end = func(r *record) { r.Outcome, r.Err, r.Payload.AnswerMissing = "failed", m[3], missingFailed }
		} else {
			return
		}
	}
	if c == nil {
		return
	}
	if i := slices.Index(a.openHooks, c); i >= 0 {
		a.openHooks = slices.Delete(a.openHooks, i, i+1)
	}
	c.rec.Duration = e.Time.Sub(c.rec.Start)
	end(c.rec)
}

// migration takes the engine's lines about state migrations: slog records
// that name the resource, and one line per callback call.
func (a *autoReader) migration(n int, e autoEntry, msg string) {
	switch msg {
	case "running state migration":
		a.closeMigration(e, e.URN, "unknown",
			"the log gives only the result of the whole chain of migrations, shown under the last")
		rec := &record{
			Line: n, Kind: callbacks.KindStateMigration.String(), URN: e.URN,
			Registration: fmt.Sprintf("migration #%d", e.MigrationNumber), Start: e.Time, Outcome: "unknown",
		}
		if u := resource.URN(e.URN); u.IsValid() {
			rec.Type, rec.Name = string(u.Type()), u.Name()
		}
		rec.Payload = &exchange{RequestMissing: missingMigration, AnswerMissing: missingMigration}
		a.add(rec)
		a.migrations[e.URN] = &pending{rec: rec, urn: e.URN}
		return
	case "state migration prior resource", "state migration result resource":
		side := a.prior
		if msg == "state migration result resource" {
			side = a.result
			if c := a.migrations[e.RootURN]; c != nil && c.rec.Duration == 0 {
				c.rec.Duration = e.Time.Sub(c.rec.Start)
			}
		}
		if side[e.RootURN] == nil {
			side[e.RootURN] = map[string][2]string{}
		}
		side[e.RootURN][e.ResourceURN] = [2]string{e.Inputs, e.Outputs}
		return
	case "state migrations made no changes":
		a.closeMigration(e, e.URN, "unchanged", "")
		return
	case "state migration applied":
		c := a.migrations[e.RootURN]
		if c == nil {
			return
		}
		a.migrationChanges(n, c, e.RootURN)
		a.closeMigration(e, e.RootURN, "", "")
		return
	}
	if m := reStateMigration.FindStringSubmatch(msg); m != nil {
		if a.migrations[m[1]] == nil { // an engine that writes no slog record for it
			rec := &record{Line: n, Kind: callbacks.KindStateMigration.String(), URN: m[1], Registration: "migration",
				Start: e.Time, Outcome: "unknown"}
			if u := resource.URN(m[1]); u.IsValid() {
				rec.Type, rec.Name = string(u.Type()), u.Name()
			}
			rec.Payload = &exchange{RequestMissing: missingMigration, AnswerMissing: missingMigration}
			a.add(rec)
			a.migrations[m[1]] = &pending{rec: rec, urn: m[1]}
		}
		return
	}
	if errText, ok := strings.CutPrefix(msg, "state migration callback error: "); ok && len(a.migrations) == 1 {
		for urn := range a.migrations {
			a.migrations[urn].rec.Err = errText
			a.closeMigration(e, urn, "failed", "")
		}
	}
}

// closeMigration ends the open migration of urn with outcome (or, if "",
// the one its changes give).
func (a *autoReader) closeMigration(e autoEntry, urn, outcome, note string) {
	c := a.migrations[urn]
	if c == nil {
		return
	}
	delete(a.migrations, urn)
	if c.rec.Duration == 0 {
		c.rec.Duration = e.Time.Sub(c.rec.Start)
	}
	if outcome == "" {
		outcome = "unchanged"
		if len(c.rec.Changes) > 0 {
			outcome = "migrated"
		}
	}
	c.rec.Outcome, c.rec.Note = outcome, note
	if outcome != "unknown" {
		a.migrationPayload(c.rec, urn)
	}
	if outcome == "failed" && c.rec.Payload != nil {
		c.rec.Payload.Answer, c.rec.Payload.AnswerMissing = nil, missingFailed
	}
}

// missingMigration is why a migration's states are not shown.
const missingMigration = "not in this log: Pulumi's automatic log gives the states of a chain of migrations only before its first and after its last, under the last"

// migrationPayload is what the log gives of the states of the chain of
// migrations of root: before its first migration (the request's oldState)
// and after its last (the answer's newState), each resource's URN, inputs
// and outputs.
func (a *autoReader) migrationPayload(rec *record, root string) {
	side := func(key string, states map[string][2]string) *value {
		if len(states) == 0 {
			return nil
		}
		arr := &value{kind: vArray}
		for _, u := range slices.Sorted(maps.Keys(states)) {
			r := newObject().setString("urn", u)
			for i, name := range []string{"inputs", "outputs"} {
				if st, err := decodeProperties(states[u][i]); err == nil {
					r.set(name, fromStruct(st, a.secrets))
				}
			}
			arr.elems = append(arr.elems, r)
		}
		return newObject().set(key, arr)
	}
	p := rec.Payload
	if p == nil {
		return
	}
	if req := side("oldState", a.prior[root]); req != nil {
		p.Request, p.RequestMissing = req, ""
	}
	if ans := side("newState", a.result[root]); ans != nil {
		p.Answer, p.AnswerMissing = ans, ""
	}
}

// migrationChanges is what a chain of migrations changed in the state of
// the resources under root, by property path (inputs.x, outputs.x; another
// resource's paths start with its name).
func (a *autoReader) migrationChanges(n int, c *pending, root string) {
	prior, result := a.prior[root], a.result[root]
	urns := map[string]bool{}
	for u := range prior {
		urns[u] = true
	}
	for u := range result {
		urns[u] = true
	}
	for _, u := range slices.Sorted(func(yield func(string) bool) {
		for u := range urns {
			if !yield(u) {
				return
			}
		}
	}) {
		prefix := ""
		if u != root {
			prefix = resource.URN(u).Name() + "."
		}
		p, hadP := prior[u]
		r, hasR := result[u]
		if !hadP || !hasR {
			what := "(a resource)"
			old, nw := what, absent
			if !hadP {
				old, nw = absent, what
			}
			c.rec.Changes = append(c.rec.Changes, change{Path: strings.TrimSuffix(prefix, ".") + orRoot(u, root), Old: old, New: nw})
			continue
		}
		for i, side := range []string{"inputs", "outputs"} {
			before, err1 := decodeProperties(p[i])
			after, err2 := decodeProperties(r[i])
			if err1 != nil || err2 != nil {
				a.problem(n, "the migrated state of %s (%s) does not decode", u, side)
				continue
			}
			for _, ch := range propertyChanges(callbacks.KindResourceTransform, before, after, a.secrets) {
				ch.Path = prefix + side + strings.TrimPrefix(ch.Path, "properties")
				c.rec.Changes = append(c.rec.Changes, ch)
			}
		}
	}
}

func orRoot(u, root string) string {
	if u == root {
		return "state"
	}
	return ""
}

// finish ends what the log left open: calls whose answer it does not have.
// A transform whose answer is not known shows what it was given.
func (a *autoReader) finish() {
	a.mergeModule()
	for _, r := range a.recs {
		if r.Outcome == "unknown" {
			r.NoDuration = true
			if r.Note == "" {
				r.Note = "the log has no answer to it: the log ends, or the deployment stopped, before it"
			}
		}
		if props := a.given[r]; props != nil && r.Outcome == "unknown" {
			if m, err := wire.FromStruct(props); err == nil {
				r.Given = showValue(resource.NewProperty(m), a.secrets)
			}
		}
		// The stack's own resource: its URN is that of any resource of the
		// log with the stack's type and name.
		if r.URN == "" && r.Type == rootStackType && a.anyURN.IsValid() {
			r.URN = string(resource.NewURN(a.anyURN.Stack(), a.anyURN.Project(), "", rootStackType, r.Name))
		}
	}
}

const rootStackType = "pulumi:pulumi:Stack"

// showValue prints a property value compactly, as JSON would but with
// secrets hidden unless secrets and unknowns as such.
func showValue(v resource.PropertyValue, secrets bool) string {
	var b strings.Builder
	var walk func(v resource.PropertyValue)
	walk = func(v resource.PropertyValue) {
		switch {
		case v.IsSecret():
			if !secrets {
				b.WriteString(hidden)
				return
			}
			b.WriteString("secret(")
			walk(v.SecretValue().Element)
			b.WriteString(")")
		case v.IsOutput():
			o := v.OutputValue()
			if !o.Known {
				b.WriteString("(unknown)")
				return
			}
			if o.Secret && !secrets {
				b.WriteString(hidden)
				return
			}
			walk(o.Element)
		case v.IsComputed():
			b.WriteString("(unknown)")
		case v.IsObject():
			b.WriteString("{")
			for i, k := range v.ObjectValue().StableKeys() {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Quote(string(k)) + ": ")
				walk(v.ObjectValue()[k])
			}
			b.WriteString("}")
		case v.IsArray():
			b.WriteString("[")
			for i, e := range v.ArrayValue() {
				if i > 0 {
					b.WriteString(", ")
				}
				walk(e)
			}
			b.WriteString("]")
		case v.IsString():
			b.WriteString(strconv.Quote(v.StringValue()))
		case v.IsNull():
			b.WriteString("null")
		case v.IsNumber():
			b.WriteString(strconv.FormatFloat(v.NumberValue(), 'f', -1, 64))
		case v.IsBool():
			b.WriteString(strconv.FormatBool(v.BoolValue()))
		default:
			b.WriteString(v.String())
		}
	}
	walk(v)
	return b.String()
}
