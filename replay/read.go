package replay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/langhost/callbacks"
)

// maxHeld bounds the calls waiting for a registration (see Read); past it,
// the first is reported unregistered, so memory does not grow with the log.
const maxHeld = 1 << 14

const (
	invokeMethod   = "/pulumirpc.Callbacks/Invoke"
	monitorPrefix  = "/pulumirpc.ResourceMonitor/"
	runMethod      = "/pulumirpc.LanguageRuntime/Run"
	deploymentInfo = monitorPrefix + "GetDeploymentInfo"
	requestStarted = "request_started"
	rootStackType  = "pulumi:pulumi:Stack"
)

var (
	progressKey  = []byte(`"progress":"`)
	startedMark  = []byte(`"progress":"request_started"`)
	timestampKey = []byte(`"timestamp":"`)
)

// Read streams the callback calls of an engine gRPC log (the file
// PULUMI_DEBUG_GRPC names) in the order they completed. A line that cannot
// be read, or a call that cannot be understood, yields a *LineError and
// reading goes on; an error reading r itself ends the sequence with that
// error.
//
// Read accepts both forms of the log: two entries per call
// (request_started, then response_completed, as CLIs since late 2025 write
// it) and one entry per call. It learns each token's kind and registration from the
// monitor's entries of the same log; in a log of one entry per call, where a
// resource's registration comes after its transforms' calls, a call waits
// for its registration and the calls after it wait with it, so the order
// holds. A call the log started (request_started) and never completed is
// yielded after all the others, with Pending set, unless a line after its
// start could not be read or understood: that line may be its answer. Lines that are not about
// callbacks are skipped, and unknown methods and fields are ignored. Memory
// holds one line, the tokens, and the calls waiting for a registration (at
// most 16,384, with their payloads).
func Read(r io.Reader) iter.Seq2[*Call, error] {
	return func(yield func(*Call, error) bool) {
		newReader(r).run(func(h *held) bool {
			if h.err != nil {
				return yield(nil, h.err)
			}
			return h.run != nil || yield(h.call, nil)
		})
	}
}

// newReader returns a reader of the log r.
func newReader(r io.Reader) *reader {
	return &reader{lines: newLineReader(r), tokens: map[string]*reg{}, orders: map[string]int{}, hold: maxHeld, cur: &logRun{}}
}

// reg is what the log said about a token.
type reg struct {
	kind callbacks.Kind // 0: a kind this module does not know
	r    Registration
}

// held is what the reader has read and not yet given out, in the log's
// order: a call or a line's error, the end of a run of the program, or, when
// it scrubs, a line to write.
type held struct {
	call  *Call
	err   error
	wait  bool   // the token is not registered yet
	token string // the token waited for
	// run is a run of the program that ended here; last says the log
	// ended, and run is the run it ended in.
	run  *logRun
	last bool
	// Scrub: the line to write, or while it waits, its entry.
	n     int
	out   []byte
	entry map[string]any
}

type reader struct {
	lines  *lineReader
	tokens map[string]*reg
	queue  []held
	twoWay bool // an entry had progress: registrations come before calls
	hold   int  // how many calls may wait for a registration
	seq    int
	// scrub, if set, scrubs each line into the queue instead of reading
	// calls (Scrub).
	scrub *scrubber
	// starts are the callback calls started and not completed yet, in the
	// order they started; last is the latest time an entry gave.
	starts []*Call
	last   time.Time
	// cur is the run of the program the lines read belong to; resources
	// says to note the resources each run registers (Run).
	cur       *logRun
	resources bool
	facts     logFacts

	// Per run of the program (LanguageRuntime/Run).
	stack, project string
	root           resource.URN
	orders         map[string]int // registrations counted in order, by method
}

// logFacts is what the reader learns of the log as a whole, so that Run can
// refuse a file it cannot replay before the program runs.
type logFacts struct {
	lines     int  // lines that are not blank
	entries   bool // a line is a JSON object with a method, as the engine writes them
	invokes   bool // a line is a /pulumirpc.Callbacks/Invoke entry
	truncated int  // the last line, cut short inside its entry; 0 if none
}

// run reads the log to its end, or until emit returns false, and gives
// emit what it read, in order.
func (rd *reader) run(emit func(*held) bool) {
	for {
		line, ended, err := rd.lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if rd.flush(emit, true) {
				emit(&held{err: fmt.Errorf("replay: reading the log after line %d: %w", rd.lines.line, err)})
			}
			return
		}
		rd.line(line, ended)
		if !rd.flush(emit, false) {
			return
		}
	}
	rd.unanswered()
	rd.queue = append(rd.queue, held{run: rd.cur, last: true})
	rd.flush(emit, true)
}

// noteTime keeps the latest time the log gives. An entry's timestamp is its
// last member, as the engine writes it and as a scrubbed log sorts it; a
// server's request_started gives the zero time, which is not kept.
func (rd *reader) noteTime(line []byte) {
	i := bytes.LastIndex(line, timestampKey)
	if i < 0 {
		return
	}
	ts, _, ok := bytes.Cut(line[i+len(timestampKey):], []byte(`"`))
	if t, err := time.Parse(time.RFC3339Nano, string(ts)); ok && err == nil && t.Year() > 1 && t.After(rd.last) {
		rd.last = t
	}
}

// unanswered queues the calls the log never completed, as Pending calls.
func (rd *reader) unanswered() {
	starts := rd.starts
	rd.starts = nil
	for _, c := range starts {
		rd.seq++
		c.Seq = rd.seq
		if !c.Start.IsZero() && rd.last.After(c.Start) {
			c.Duration = rd.last.Sub(c.Start)
		}
		if r := rd.tokens[c.Token]; r != nil {
			rd.push(held{call: c, err: rd.complete(c, r)})
		} else {
			rd.fail(c.Line, fmt.Errorf("callback call %d, never answered, names token %s, which was never registered", c.Seq, c.Token))
		}
	}
}

// nonNil returns b, or an empty payload for nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// header is what every entry is first read for.
type header struct {
	Method   string `json:"method"`
	Progress string `json:"progress"`
}

// line reads one line.
func (rd *reader) line(line []byte, ended bool) {
	blank := len(bytes.TrimSpace(line)) == 0
	if !blank {
		rd.facts.lines++
		if !ended && !json.Valid(line) {
			rd.facts.truncated = rd.lines.line
		}
	}
	if rd.scrub != nil {
		rd.scrub.line(rd.lines.line, line, ended, blank)
	} else if !blank {
		rd.entry(line, ended)
	}
}

// entry reads a line that is not blank as Read does: it learns tokens and
// runs, and queues calls.
func (rd *reader) entry(line []byte, ended bool) {
	n := rd.lines.line
	rd.noteTime(line)
	m, ok := leadingMethod(line)
	h := header{Method: string(m)}
	switch {
	case ok && h.Method == invokeMethod:
		// The engine's own layout of a callback call's entry, read in one
		// pass: its only strings are a token, base64, metadata and a
		// timestamp, so the progress marker cannot appear by chance.
		// invoke checks its JSON.
		rd.twoWay = rd.twoWay || bytes.Contains(line, progressKey)
		if bytes.Contains(line, startedMark) {
			h.Progress = requestStarted
		}
		rd.facts.entries = rd.facts.entries || json.Valid(line)
	case ok && h.Method != runMethod && !strings.HasPrefix(h.Method, monitorPrefix) && json.Valid(line):
		// Another entry of the engine's, not about callbacks, is only
		// checked.
		rd.facts.entries = rd.facts.entries || h.Method != ""
		return
	default:
		var d header // a variable of its own, so that h stays on the stack
		if err := json.Unmarshal(line, &d); err != nil {
			rd.fail(n, badLine(line, ended, err))
			return
		}
		h = d
		rd.twoWay = rd.twoWay || h.Progress != ""
		rd.facts.entries = rd.facts.entries || h.Method != ""
	}
	switch {
	case h.Method == invokeMethod:
		rd.facts.invokes = true
		rd.invoke(n, line, ended, h.Progress == requestStarted)
	case h.Method == runMethod:
		rd.runEntry(n, line, h.Progress)
	case h.Method == deploymentInfo:
		rd.deploymentInfo(line, h.Progress)
	case strings.HasPrefix(h.Method, monitorPrefix):
		rd.monitor(line, strings.TrimPrefix(h.Method, monitorPrefix))
	}
}

// leadingMethod returns the method of an entry that starts with it, as the
// engine writes them, when it holds no escape.
func leadingMethod(line []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"method":"`))
	m, _, closed := bytes.Cut(rest, []byte(`"`))
	if !ok || !closed || bytes.IndexByte(m, '\\') >= 0 {
		return nil, false
	}
	return m, true
}

func badLine(line []byte, ended bool, err error) error {
	if !ended {
		return fmt.Errorf("truncated entry: the log ends inside it (%v)", err)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not a JSON entry: %v at byte %d", err, se.Offset)
	}
	return fmt.Errorf("not a log entry: %v", err)
}

// fail queues a line's error in its place among the calls; Scrub removes
// such a line instead.
func (rd *reader) fail(line int, err error) {
	if rd.scrub == nil {
		rd.push(held{err: &LineError{Line: line, Err: err}})
	}
}

// push queues h. A line that could not be read or understood may be the
// answer of the calls started so far: they are not reported unanswered.
func (rd *reader) push(h held) {
	if h.err != nil {
		rd.starts = rd.starts[:0]
	}
	rd.queue = append(rd.queue, h)
}

// runEntry reads an entry of LanguageRuntime/Run. In a log of two entries
// per call, the run starts with request_started, and the calls and
// resources up to its completing entry are its own; in a log of one entry
// per call, the run's only entry ends the run. A request_started while
// another run has started and not completed (two logs in one file) ends
// that one.
func (rd *reader) runEntry(n int, line []byte, progress string) {
	var req pulumirpc.RunRequest
	if progress != requestStarted && progress != "" && progress != "response_completed" || !decodeMember(line, "request", &req) {
		return
	}
	if progress == requestStarted && rd.cur.line > 0 {
		rd.endRun()
	}
	if progress != "response_completed" {
		clear(rd.orders)
		rd.root = ""
		rd.stack, rd.project = req.GetStack(), req.GetProject()
	}
	rd.cur.line = n
	rd.cur.info = runInfo{Project: req.GetProject(), Stack: req.GetStack(), Organization: req.GetOrganization(),
		Config: req.GetConfig(), ConfigSecretKeys: req.GetConfigSecretKeys(), DryRun: req.GetDryRun(),
		Parallel: req.GetParallel(), RootDirectory: req.GetInfo().GetRootDirectory(), Features: rd.cur.info.Features}
	if progress != requestStarted {
		rd.endRun()
	}
}

// decodeMember decodes the member key of the entry line into m, ignoring
// fields this module does not know; it reports whether it could.
func decodeMember(line []byte, key string, m proto.Message) bool {
	var e map[string]json.RawMessage
	return json.Unmarshal(line, &e) == nil && len(e[key]) > 0 &&
		protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(e[key], m) == nil
}

// endRun queues the end of the current run and starts the next.
func (rd *reader) endRun() {
	rd.queue = append(rd.queue, held{run: rd.cur})
	rd.cur = &logRun{}
}

// deploymentInfo reads an entry of the monitor's GetDeploymentInfo: the
// stack and project, and the monitor's features in the run.
func (rd *reader) deploymentInfo(line []byte, progress string) {
	var di pulumirpc.DeploymentInfo
	if progress == requestStarted || !decodeMember(line, "response", &di) {
		return
	}
	if di.GetStack() != "" {
		rd.stack, rd.project = di.GetStack(), di.GetProject()
	}
	// A monitor that lists no feature (a hand-written log) is taken to
	// have them all.
	if rd.cur.info.Features == nil && len(di.GetSupportedFeatures()) > 0 {
		rd.cur.info.Features = di.GetSupportedFeatures()
	}
}

// monitor learns tokens from a monitor entry.
func (rd *reader) monitor(line []byte, method string) {
	if method == registerRes || method == "ReadResource" {
		rd.registerResource(line, method)
	} else if req := monitorRequest(method); req != nil && decodeMember(line, "request", req) {
		rd.learnFrom(method, req, "")
	} else if req == nil && bytes.Contains(line, []byte(`"token"`)) {
		// A method this module does not know: any Callback in its request
		// names a kind of callback it does not know either.
		var e struct {
			Request json.RawMessage `json:"request"`
		}
		_ = json.Unmarshal(line, &e) // entry has checked the line's JSON
		rd.learnUnknown(e.Request, Registration{Method: method})
	}
}

// monitorRequest returns an empty request of the monitor's method, or nil
// for a method that registers no kind this module knows.
func monitorRequest(method string) proto.Message {
	if row, _ := viaOf(method, ""); row == nil {
		return nil
	}
	// The kind table names methods of the protocol, whose requests are
	// registered types.
	md := pulumirpc.File_pulumi_resource_proto.Services().ByName("ResourceMonitor").Methods().ByName(protoreflect.Name(method))
	mt, _ := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	return mt.New().Interface()
}

// learnFrom learns the tokens req, the request of the monitor's method,
// registers for the resource urn. A counted registration is counted once,
// and a known token of a resource takes the URN of the entry that
// completes it.
func (rd *reader) learnFrom(method string, req proto.Message, urn resource.URN) {
	known := func(token string) bool { return rd.tokens[token] != nil }
	callbacksOf(rd.orders, method, req, urn, known, func(row *kindRow, cb *pulumirpc.Callback, r Registration) {
		if k := rd.tokens[cb.GetToken()]; k != nil && method == registerRes {
			if urn != "" { // the completing entry knows the URN for sure
				k.r.Resource = urn
			}
			return
		}
		rd.learn(cb.GetToken(), &reg{kind: row.kind, r: r})
	})
}

// callbacksOf yields each Callback of a kind this module knows that req,
// the request of the monitor's method, registers, with the registration a
// recorded call names: a request that is the Callback by its order within
// the run, counted in orders unless known (if not nil) says its token is
// known already; a hook by its name; a resource's callback by its position
// in its list and res, the resource.
func callbacksOf(orders map[string]int, method string, req proto.Message, res resource.URN,
	known func(token string) bool, yield func(*kindRow, *pulumirpc.Callback, Registration)) {
	m := req.ProtoReflect()
	fields := m.Descriptor().Fields()
	for row, v := range vias {
		fd := fields.ByJSONName(v.field)
		switch {
		case v.method != method:
		case v.field == "":
			cb, _ := req.(*pulumirpc.Callback)
			if cb.GetToken() != "" && (known == nil || !known(cb.GetToken())) {
				orders[method]++
				yield(row, cb, Registration{Method: method, Order: orders[method]})
			}
		case fd == nil || fd.Message() == nil:
		case fd.IsList():
			for i, list := 0, m.Get(fd).List(); i < list.Len(); i++ {
				cb, _ := list.Get(i).Message().Interface().(*pulumirpc.Callback)
				if cb.GetToken() != "" {
					yield(row, cb, Registration{Method: method, Order: i + 1, Resource: res})
				}
			}
		default: // a Callback beside its registration's name (the kind table's via)
			cb, _ := m.Get(fd).Message().Interface().(*pulumirpc.Callback)
			if cb.GetToken() != "" {
				yield(row, cb, Registration{Method: method, Name: m.Get(fields.ByName("name")).String()})
			}
		}
	}
}

// learnUnknown learns the tokens of the objects shaped like a Callback in
// the JSON body as a kind this module does not know.
func (rd *reader) learnUnknown(body json.RawMessage, r Registration) {
	var v any
	_ = json.Unmarshal(body, &v) // a body that does not decode holds none
	for _, tok := range callbackTokens(v, nil) {
		if rd.tokens[tok] == nil {
			rd.learn(tok, &reg{r: r})
		}
	}
}

// callbackTokens appends the tokens of the objects shaped like a Callback
// (string target and token) found in v.
func callbackTokens(v any, tokens []string) []string {
	switch v := v.(type) {
	case map[string]any:
		tok, ok1 := v["token"].(string)
		_, ok2 := v["target"].(string)
		if ok1 && ok2 && tok != "" {
			tokens = append(tokens, tok)
		}
		for _, x := range v {
			tokens = callbackTokens(x, tokens)
		}
	case []any:
		for _, x := range v {
			tokens = callbackTokens(x, tokens)
		}
	}
	return tokens
}

// notCallbacks are the fields of a RegisterResourceRequest that hold no
// Callback of a kind this module does not know.
var notCallbacks = map[string]bool{"object": true, "propertyDependencies": true}

// registerResource learns the tokens of a RegisterResource entry, and
// notes the resource of it or of a ReadResource entry.
func (rd *reader) registerResource(line []byte, method string) {
	var e struct {
		Request  json.RawMessage `json:"request"`
		Response struct {
			URN string `json:"urn"`
		} `json:"response"`
	}
	var req struct {
		Type, Name, Parent string
		Remote             bool
	}
	if json.Unmarshal(line, &e) != nil || json.Unmarshal(e.Request, &req) != nil {
		return
	}
	urn := resource.URN(e.Response.URN)
	if urn == "" {
		urn = rd.resourceURN(req.Parent, req.Type, req.Name)
	}
	if rd.resources && req.Type != "" {
		rd.cur.resources = append(rd.cur.resources, resEntry{urn: urn, parent: resource.URN(req.Parent), remote: req.Remote})
	}
	if req.Type == rootStackType && req.Parent == "" && urn != "" {
		rd.root = urn
	}
	// Only an entry that names a target holds Callbacks.
	var fields map[string]json.RawMessage
	if !bytes.Contains(line, []byte(`"target"`)) || json.Unmarshal(e.Request, &fields) != nil {
		return
	}
	if rr := new(pulumirpc.RegisterResourceRequest); method == registerRes {
		decode := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal
		if decode(e.Request, rr) != nil {
			// A field that does not decode costs only itself: the fields
			// that hold Callbacks are read one by one.
			for k, raw := range fields {
				part := new(pulumirpc.RegisterResourceRequest)
				if r, _ := viaOf(registerRes, k); r != nil && decode(fmt.Appendf(nil, "{%q:%s}", k, raw), part) == nil {
					proto.Merge(rr, part)
				}
			}
		}
		rd.learnFrom(registerRes, rr, urn)
	}
	// A Callback in a field this module does not know is a kind of
	// callback it does not know either.
	for k, raw := range fields {
		if r, _ := viaOf(registerRes, k); r == nil && !notCallbacks[k] && bytes.Contains(raw, []byte(`"target"`)) {
			rd.learnUnknown(raw, Registration{Method: registerRes, Resource: urn})
		}
	}
}

// resourceURN computes the URN the engine gives a resource registered with
// parent, type and name, or "" when the log has not said enough.
func (rd *reader) resourceURN(parent, typ, name string) resource.URN {
	p := resource.URN(parent)
	switch {
	case typ == "":
		return ""
	case parent == "" && typ == rootStackType:
		if rd.stack == "" {
			return ""
		}
		return resource.NewURN(tokens.QName(rd.stack), tokens.PackageName(rd.project), "", tokens.Type(typ), name)
	case parent == "":
		p = rd.root
	}
	if !p.IsValid() {
		return ""
	}
	return resource.NewURN(p.Stack(), p.Project(), p.QualifiedType(), tokens.Type(typ), name)
}

// learn records a token's registration and resolves the calls waiting for
// it.
func (rd *reader) learn(token string, r *reg) {
	rd.tokens[token] = r
	for i := range rd.queue {
		if h := &rd.queue[i]; h.wait && h.token == token {
			h.wait = false
			if h.entry != nil {
				rd.scrub.finish(h)
			} else {
				h.err = rd.complete(h.call, r)
			}
		}
	}
}

// invokeEntry is a completed Callbacks/Invoke entry.
type invokeEntry struct {
	Request struct {
		Token   string  `json:"token"`
		Request payload `json:"request"`
	} `json:"request"`
	Response *struct {
		Response payload `json:"response"`
	} `json:"response"`
	Errors    []string `json:"errors"`
	Timestamp string   `json:"timestamp"`
	Duration  int64    `json:"duration"`
}

// payload is a base64 payload; one Scrub removed is an error that says so.
type payload []byte

func (p *payload) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		what, ok := jsonKinds[b[0]]
		if !ok {
			what = "a number"
		}
		return fmt.Errorf("a payload is not a base64 string but %s", what)
	}
	if strings.HasPrefix(s, scrubbedPrefix) {
		return fmt.Errorf("the payload was removed when the log was scrubbed: %s", strings.TrimSuffix(strings.TrimPrefix(s, scrubbedPrefix), "]"))
	}
	out, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("a payload is not valid base64: %v", err)
	}
	*p = out
	return nil
}

// jsonKinds names the kind of a JSON value by its first byte; any other is
// a number.
var jsonKinds = map[byte]string{'{': "an object", '[': "an array", '"': "a string", 't': "a boolean", 'f': "a boolean"}

// invoke reads a Callbacks/Invoke entry: a call's start (request_started),
// noted so that the call is reported if the log ends before it completes,
// or a completed call, queued.
func (rd *reader) invoke(n int, line []byte, ended, started bool) {
	if !started {
		rd.seq++
	}
	var e invokeEntry
	err := json.Unmarshal(line, &e)
	switch {
	case err != nil && !json.Valid(line):
		rd.fail(n, badLine(line, ended, err))
		return
	case started:
		if err == nil && e.Request.Token != "" { // else the completing entry, if any, says what is wrong
			at, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
			rd.starts = append(rd.starts, &Call{Line: n, Token: e.Request.Token, Request: nonNil(e.Request.Request), Start: at, Pending: true})
		}
		return
	case err != nil:
		// Say which field is wrong, and why, without the Go type names
		// encoding/json gives.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			err = fmt.Errorf("field %s holds a JSON %s", te.Field, te.Value)
		}
		rd.fail(n, fmt.Errorf("callback call %d: %w", rd.seq, err))
		return
	}
	c := &Call{Seq: rd.seq, Line: n, Token: e.Request.Token, Request: nonNil(e.Request.Request),
		Err: strings.Join(e.Errors, "; "), Duration: time.Duration(e.Duration)}
	// Forget the start of the call c completes: the first one started with
	// the same token and request.
	if i := slices.IndexFunc(rd.starts, func(st *Call) bool {
		return st.Token == c.Token && bytes.Equal(st.Request, c.Request)
	}); i >= 0 {
		rd.starts = slices.Delete(rd.starts, i, i+1)
	}
	if e.Response != nil && len(e.Errors) == 0 {
		c.Response = nonNil(e.Response.Response)
	}
	if end, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		c.Start = end.Add(-c.Duration)
	}
	r := rd.tokens[c.Token]
	switch {
	case c.Token == "":
		rd.fail(n, fmt.Errorf("callback call %d names no token", rd.seq))
	case r != nil:
		rd.push(held{call: c, err: rd.complete(c, r)})
	case rd.twoWay:
		rd.fail(n, fmt.Errorf("token %s was never registered before its call", c.Token))
	default:
		rd.push(held{call: c, wait: true, token: c.Token})
	}
}

// complete fills in what the registration and the payloads say about c:
// its kind and registration, and the resource or invoke the payloads are
// about. A non-nil error is a LineError for c's line.
func (rd *reader) complete(c *Call, r *reg) error {
	row := rowOf(r.kind)
	if row == nil {
		return &LineError{Line: c.Line, Err: fmt.Errorf("token %s is a callback kind this module does not know, registered by %s", c.Token, r.r.Method)}
	}
	c.Kind, c.Registration = r.kind, r.r
	req, _, err := c.Messages()
	if err != nil {
		return &LineError{Line: c.Line, Err: err}
	}
	m := req.ProtoReflect()
	str := func(name protoreflect.Name) string {
		if fd := m.Descriptor().Fields().ByName(name); fd != nil && fd.Kind() == protoreflect.StringKind {
			return m.Get(fd).String()
		}
		return ""
	}
	c.Type, c.Name = str("type"), str("name")
	switch row.subject {
	case "token":
		c.Invoke = str("token")
	case "parent": // none: the root stack, or a resource the engine parents to it
		c.URN = rd.resourceURN(str("parent"), c.Type, c.Name)
	case "urn":
		c.URN = resource.URN(str("urn"))
		if m.Descriptor().Fields().ByName("type") == nil && c.URN.IsValid() {
			c.Type, c.Name = string(c.URN.Type()), c.URN.Name()
		}
	}
	return nil
}

// flush gives out what is at the head of the queue and complete; at the
// end (or when too many wait), what still waits for a registration is
// given up on: a call is reported unregistered, a line scrubbed without
// its kind.
func (rd *reader) flush(emit func(*held) bool, end bool) bool {
	q, ok := rd.queue, true
	for ok && len(q) > 0 {
		h := &q[0]
		if h.wait {
			if !end && len(q) <= rd.hold {
				break
			}
			h.wait = false
			if h.entry != nil {
				rd.scrub.finish(h)
			} else {
				h.err = &LineError{Line: h.call.Line, Err: fmt.Errorf("token %s was never registered in this log", h.call.Token)}
			}
		}
		ok = emit(h)
		*h, q = held{}, q[1:]
	}
	if len(q) == 0 {
		q = rd.queue[:0] // the queue's array, reused from its start
	}
	rd.queue = q
	return ok
}
