package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// deployment is what a log says around the callbacks: who ran the program,
// its runs (a preview, an update), and the providers' steps. The gRPC log
// gives it, read as the log passes to replay.Read (scanner); an automatic
// log gives none of it (Known false).
type deployment struct {
	Known                        bool // the log is one that tells these
	Project, Stack, Organization string
	CLI                          string // the language host's version, which ships with the CLI
	SDK                          string // the Go SDK's version, as a source position names it
	Runs                         []*progRun
	// Steps are the providers' calls about resources (Check, Diff, Create,
	// Update, Delete, Read, Construct, Invoke), answered or not, in the
	// order they completed (those never answered last).
	Steps []*record
	// Last is the latest time an entry of the log gives: when the log ended.
	Last time.Time
	// Regs are the program's resource registrations and Hooks its hook
	// registrations, in the order they started; diffs what each completed
	// Diff of Steps said. Plans is, per preview, what an update would run
	// (planUpdates).
	Regs  []*resourceReg
	Hooks []*hookReg
	diffs map[*record]*diffAnswer
	Plans []*runPlan
}

// progRun is one run of the program: a LanguageRuntime/Run of the engine.
type progRun struct {
	Name     string // "preview" or "update"
	Line     int    // the log line that started it
	End      int    // the log line that completed it; 0 if the log ends first
	Start    time.Time
	Duration time.Duration // if it never completed, how long it had run when the log ended
	Failed   bool          // the program's run answered with an error
	Err      string        // its first error: that of its first provider step that failed, or else its own
	Program  string        // the program's own error, as the run answered it
}

// label names the run in the account: "update (log line 11)".
func (r *progRun) label() string { return r.Name + " (log line " + strconv.Itoa(r.Line) + ")" }

// result says how the run ended.
func (r *progRun) result() string {
	switch {
	case r.End == 0:
		return "did not end in the log"
	case r.Failed:
		return "failed"
	}
	return "succeeded"
}

// runOf returns the run a call on log line n belongs to: the runs' calls are
// those after the previous run completed, up to its own completion; the
// last run holds the rest of the log. nil if the log has no run.
func (d *deployment) runOf(n int) *progRun {
	if d == nil {
		return nil
	}
	for i, r := range d.Runs {
		if i == len(d.Runs)-1 || (r.End != 0 && n <= r.End) {
			return r
		}
	}
	return nil
}

// place gives rec its run.
func (d *deployment) place(rec *record) {
	if r := d.runOf(rec.Line); r != nil {
		rec.Run, rec.RunLine = r.Name, r.Line
	}
}

// stepMethods are the provider calls shown beside the callbacks.
var stepMethods = map[string]bool{
	"Check": true, "Diff": true, "Create": true, "Update": true, "Delete": true,
	"Read": true, "Construct": true, "Invoke": true,
}

const (
	providerPrefix = "/pulumirpc.ResourceProvider/"
	runEntry       = "/pulumirpc.LanguageRuntime/Run"
	pluginInfo     = "/pulumirpc.LanguageRuntime/GetPluginInfo"
	registerEntry  = "/pulumirpc.ResourceMonitor/RegisterResource"
	callbackEntry  = `{"method":"/pulumirpc.Callbacks/Invoke"`
	hookEntry      = "/pulumirpc.ResourceMonitor/RegisterResourceHook"
	errorHookEntry = "/pulumirpc.ResourceMonitor/RegisterErrorHook"
)

// sdkRE finds the Go SDK's version in a source position.
var sdkRE = regexp.MustCompile(`github\.com/pulumi/pulumi/sdk/v3@(v[0-9][^/"\\]*)/`)

// scanner reads the deployment out of a gRPC log as it is written to it,
// line by line. Callback calls, which can be huge, are not held: only
// their lines' ends, for the time.
type scanner struct {
	d      *deployment
	found  secretSet // secrets met in providers' payloads and the configuration
	line   int
	buf    []byte
	skip   bool // the current line is not read
	starts map[string][]stepStart
	order  int // how many provider calls started
	// regStarts are the registrations started and not yet completed, by
	// request.
	regStarts map[string][]*resourceReg
}

type stepStart struct {
	rec   *record
	order int
}

func newScanner(found secretSet) *scanner {
	return &scanner{d: &deployment{Known: true}, found: found, starts: map[string][]stepStart{}, regStarts: map[string][]*resourceReg{}}
}

// tailSize is how much of a line that is not read is kept: its timestamp,
// the last member of an entry.
const tailSize = 160

func (s *scanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		s.buf = append(s.buf, chunk...)
		if !s.skip && len(s.buf) >= len(callbackEntry) && bytes.HasPrefix(s.buf, []byte(callbackEntry)) {
			s.skip = true
		}
		if s.skip && len(s.buf) > tailSize {
			s.buf = append(s.buf[:0], s.buf[len(s.buf)-tailSize:]...)
		}
		if i < 0 {
			break
		}
		s.end()
		p = p[i+1:]
	}
	return n, nil
}

// end reads the line held, and starts the next.
func (s *scanner) end() {
	s.line++
	if s.skip {
		s.noteTime(s.buf)
	} else if len(bytes.TrimSpace(s.buf)) > 0 {
		s.entry(s.line, s.buf)
	}
	s.buf, s.skip = s.buf[:0], false
}

// finish reads a last line without its end, and reports the provider calls
// never answered.
func (s *scanner) finish() *deployment {
	if len(s.buf) > 0 {
		s.end()
	}
	var pending []stepStart
	for _, l := range s.starts {
		pending = append(pending, l...)
	}
	slices.SortStableFunc(pending, func(a, b stepStart) int { return cmp.Compare(a.order, b.order) })
	for _, st := range pending {
		r := st.rec
		r.Pending, r.Outcome = true, "unanswered"
		if !r.Start.IsZero() && s.d.Last.After(r.Start) {
			r.Duration = s.d.Last.Sub(r.Start)
		}
		s.d.Steps = append(s.d.Steps, r)
	}
	for _, r := range s.d.Runs {
		if r.End == 0 && !r.Start.IsZero() && s.d.Last.After(r.Start) {
			r.Duration = s.d.Last.Sub(r.Start) // how long it had run when the log ended
		}
		if r.Failed || r.End == 0 {
			// The first error of the run is that of its first provider
			// step that failed, if any: the program's own is its result.
			for _, st := range s.d.Steps {
				if st.Err != "" && s.d.runOf(st.Line) == r {
					r.Err = st.Err
					break
				}
			}
		}
	}
	return s.d
}

func (s *scanner) noteTime(line []byte) {
	const key = `"timestamp":"`
	i := bytes.LastIndex(line, []byte(key))
	if i < 0 {
		return
	}
	rest := line[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return
	}
	if t, err := time.Parse(time.RFC3339Nano, string(rest[:end])); err == nil && t.Year() > 1 && t.After(s.d.Last) {
		s.d.Last = t
	}
}

// logLine is the part of an entry the scanner reads.
type logLine struct {
	Method   string          `json:"method"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
	Errors   []string        `json:"errors"`
	Metadata struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
	} `json:"metadata"`
	Progress  string `json:"progress"`
	Timestamp string `json:"timestamp"`
	Duration  int64  `json:"duration"`
}

func (s *scanner) entry(n int, line []byte) {
	s.noteTime(line)
	var e logLine
	if json.Unmarshal(line, &e) != nil {
		return // replay.Read names the line
	}
	at, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
	done := e.Progress != "request_started"
	switch {
	case e.Method == runEntry:
		s.runLine(n, &e, at, done)
	case e.Method == pluginInfo && done && e.Metadata.Kind == "language" && s.d.CLI == "":
		var res struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(e.Response, &res) == nil {
			s.d.CLI = res.Version
		}
	case e.Method == registerEntry:
		if s.d.SDK == "" {
			if m := sdkRE.FindSubmatch(line); m != nil {
				s.d.SDK = string(m[1])
			}
		}
		s.registerLine(n, &e, at)
	case e.Method == hookEntry || e.Method == errorHookEntry:
		s.hookLine(n, &e)
	case strings.HasPrefix(e.Method, providerPrefix) && stepMethods[strings.TrimPrefix(e.Method, providerPrefix)]:
		s.step(n, &e, at, done)
	}
}

func (s *scanner) runLine(n int, e *logLine, at time.Time, done bool) {
	var req struct {
		Project          string            `json:"project"`
		Stack            string            `json:"stack"`
		Organization     string            `json:"organization"`
		DryRun           bool              `json:"dryRun"`
		Config           map[string]string `json:"config"`
		ConfigSecretKeys []string          `json:"configSecretKeys"`
	}
	if json.Unmarshal(e.Request, &req) != nil {
		return
	}
	if s.found != nil {
		for _, k := range req.ConfigSecretKeys {
			s.found.add(req.Config[k])
		}
	}
	if s.d.Project == "" {
		s.d.Project, s.d.Stack, s.d.Organization = req.Project, req.Stack, req.Organization
	}
	name := "update"
	if req.DryRun {
		name = "preview"
	}
	var r *progRun
	if e.Progress == "request_started" || e.Progress == "" {
		r = &progRun{Name: name, Line: n, Start: at}
		s.d.Runs = append(s.d.Runs, r)
	} else {
		// The completion of the last run started and not completed.
		for i := len(s.d.Runs) - 1; i >= 0; i-- {
			if s.d.Runs[i].End == 0 {
				r = s.d.Runs[i]
				break
			}
		}
		if r == nil {
			r = &progRun{Name: name, Line: n}
			s.d.Runs = append(s.d.Runs, r)
		}
	}
	if !done {
		return
	}
	r.End, r.Duration = n, time.Duration(e.Duration)
	if e.Progress == "" && !at.IsZero() {
		r.Start = at.Add(-r.Duration) // the only entry is written at the end
	}
	var res struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(e.Response, &res)
	switch {
	case len(e.Errors) > 0:
		r.Failed, r.Program = true, e.Errors[0]
	case res.Error != "":
		r.Failed, r.Program = true, res.Error
	}
	r.Err = r.Program
}

// stepRequest is what a provider call's request says of its resource.
type stepRequest struct {
	URN    string `json:"urn"`
	Type   string `json:"type"`
	Name   string `json:"name"`
	Parent string `json:"parent"`
	Tok    string `json:"tok"`
}

func (s *scanner) step(n int, e *logLine, at time.Time, done bool) {
	method := strings.TrimPrefix(e.Method, providerPrefix)
	key := e.Method + "\x00" + string(e.Request)
	if !done {
		r := s.newStep(n, e, method)
		r.Start = at
		s.order++
		s.starts[key] = append(s.starts[key], stepStart{rec: r, order: s.order})
		return
	}
	var r *record
	if l := s.starts[key]; len(l) > 0 {
		r = l[0].rec
		if len(l) == 1 {
			delete(s.starts, key)
		} else {
			s.starts[key] = l[1:]
		}
	} else {
		r = s.newStep(n, e, method)
	}
	r.Line, r.Duration = n, time.Duration(e.Duration)
	if !at.IsZero() {
		r.Start = at.Add(-r.Duration)
	}
	if s.found != nil {
		var res any
		if json.Unmarshal(e.Response, &res) == nil {
			s.found.json(res, false)
		}
	}
	r.Outcome = "ok"
	if len(e.Errors) > 0 {
		r.Outcome, r.Err = "failed", strings.Join(e.Errors, "; ")
	} else {
		var res struct {
			URN      string            `json:"urn"`
			Changes  string            `json:"changes"`
			Failures []json.RawMessage `json:"failures"`
		}
		_ = json.Unmarshal(e.Response, &res)
		if r.URN == "" && res.URN != "" {
			r.URN = res.URN // Construct's answer
		}
		switch {
		case len(res.Failures) > 0:
			r.Outcome = "invalid"
		case method == "Diff" && res.Changes == "DIFF_SOME":
			r.Outcome = "changes"
		case method == "Diff" && res.Changes == "DIFF_NONE":
			r.Outcome = "no changes"
		}
		if method == "Diff" {
			s.diffLine(r, e)
		}
	}
	s.d.Steps = append(s.d.Steps, r)
}

// newStep is the record of a provider call, from its request.
func (s *scanner) newStep(n int, e *logLine, method string) *record {
	var req stepRequest
	_ = json.Unmarshal(e.Request, &req)
	if s.found != nil {
		var x any
		if json.Unmarshal(e.Request, &x) == nil {
			s.found.json(x, false)
		}
	}
	r := &record{
		Line: n, Kind: "provider step", Step: method, Provider: e.Metadata.Name,
		Registration: method, URN: req.URN, Type: req.Type, Name: req.Name,
	}
	if e.Metadata.Name != "" {
		r.Registration = method + " (" + e.Metadata.Name + ")"
	}
	if method == "Invoke" {
		r.Invoke, r.URN, r.Type, r.Name = req.Tok, "", "", ""
	}
	if r.URN != "" && (r.Type == "" || r.Name == "") {
		if parts := strings.Split(r.URN, "::"); len(parts) >= 4 {
			typ := parts[len(parts)-2]
			if i := strings.LastIndex(typ, "$"); i >= 0 {
				typ = typ[i+1:]
			}
			r.Type, r.Name = typ, parts[len(parts)-1]
		}
	}
	return r
}
