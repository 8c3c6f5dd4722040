package main

import (
	"encoding/json"
	"io"
	"time"
)

// jsonCall is one line of -json output. The field names are documented in
// the package comment and are kept stable.
type jsonCall struct {
	Source       string           `json:"source"`
	Run          string           `json:"run,omitempty"`
	Answered     *bool            `json:"answered,omitempty"`
	Seq          int              `json:"seq,omitempty"`
	Line         int              `json:"line"`
	Kind         string           `json:"kind"`
	Provider     *jsonProvider    `json:"provider,omitempty"`
	Registration jsonRegistration `json:"registration"`
	Resource     *jsonResource    `json:"resource,omitempty"`
	Invoke       string           `json:"invoke,omitempty"`
	Outcome      string           `json:"outcome"`
	Start        *time.Time       `json:"start,omitempty"`
	DurationNs   *int64           `json:"durationNs,omitempty"`
	Changes      []jsonChange     `json:"changes,omitempty"`
	Message      string           `json:"message,omitempty"`
	Attempt      int              `json:"attempt,omitempty"`
	Operation    string           `json:"operation,omitempty"`
	Error        string           `json:"error,omitempty"`
	Given        string           `json:"given,omitempty"`
	Note         string           `json:"note,omitempty"`

	// With -v: what the call was asked and what it answered, or why the
	// log does not hold it.
	Request        any    `json:"request,omitempty"`
	Answer         any    `json:"answer,omitempty"`
	RequestMissing string `json:"requestMissing,omitempty"`
	AnswerMissing  string `json:"answerMissing,omitempty"`
}

// jsonChange is a change as -json prints it: the values as the account
// prints them, and as JSON values (absent where the value is).
type jsonChange struct {
	Path     string          `json:"path"`
	Old      string          `json:"old"`
	New      string          `json:"new"`
	OldValue json.RawMessage `json:"oldValue,omitempty"`
	NewValue json.RawMessage `json:"newValue,omitempty"`
}

// jsonProvider is a provider step's provider and method.
type jsonProvider struct {
	Name   string `json:"name,omitempty"`
	Method string `json:"method"`
}

// jsonHeader is the first line of the gRPC log's -json output: the
// deployment around the calls.
type jsonHeader struct {
	Deployment jsonDeployment `json:"deployment"`
}

type jsonDeployment struct {
	Project      string    `json:"project,omitempty"`
	Stack        string    `json:"stack,omitempty"`
	Organization string    `json:"organization,omitempty"`
	CLI          string    `json:"cli,omitempty"`
	SDK          string    `json:"sdk,omitempty"`
	Runs         []jsonRun `json:"runs"`
	Unanswered   int       `json:"unanswered"`
	Time         jsonTime  `json:"timeNs"`
}

type jsonRun struct {
	Name       string     `json:"name"`
	Line       int        `json:"line"`
	EndLine    int        `json:"endLine,omitempty"`
	Start      *time.Time `json:"start,omitempty"`
	DurationNs int64      `json:"durationNs,omitempty"`
	Result     string     `json:"result"`
	Error      string     `json:"error,omitempty"`
	Program    string     `json:"programError,omitempty"`
}

type jsonTime struct {
	Callbacks int64 `json:"callbacks"`
	Provider  int64 `json:"provider"`
	Rest      int64 `json:"rest"`
	Runs      int64 `json:"runs"`
}

type jsonRegistration struct {
	Label  string `json:"label"`
	Method string `json:"method,omitempty"`
	Name   string `json:"name,omitempty"`
}

type jsonResource struct {
	URN  string `json:"urn,omitempty"` // "" when the log does not give it
	Type string `json:"type,omitempty"`
	Name string `json:"name,omitempty"`
}

// jsonProblem is the line written for each log line that could not be read.
type jsonProblem struct {
	Unreadable problem `json:"unreadable"`
}

func toJSON(from origin, r *record) jsonCall {
	j := jsonCall{
		Source: from.Key, Note: r.Note, Given: r.Given,
		Seq: r.Seq, Line: r.Line, Kind: r.Kind,
		Registration: jsonRegistration{Label: r.Registration, Method: r.Method, Name: r.HookName},
		Invoke:       r.Invoke, Outcome: r.Outcome,
		Message: r.Message, Attempt: r.Attempt, Operation: r.Op, Error: r.Err,
		Run: r.Run,
	}
	if r.Pending {
		no := false
		j.Answered = &no
	}
	for _, ch := range r.Changes {
		j.Changes = append(j.Changes, jsonChange{Path: ch.Path, Old: ch.Old, New: ch.New,
			OldValue: ch.OldValue.rawJSON(), NewValue: ch.NewValue.rawJSON()})
	}
	if p := r.Payload; p != nil {
		j.RequestMissing, j.AnswerMissing = p.RequestMissing, p.AnswerMissing
		if p.Request != nil {
			j.Request = p.Request.jsonValue()
		}
		if p.Answer != nil {
			j.Answer = p.Answer.jsonValue()
		}
	}
	if r.Step != "" {
		j.Provider = &jsonProvider{Name: r.Provider, Method: r.Step}
	}
	if r.URN != "" || r.Type != "" || r.Name != "" {
		j.Resource = &jsonResource{URN: r.URN, Type: r.Type, Name: r.Name}
	}
	if !r.NoDuration {
		d := int64(r.Duration)
		j.DurationNs = &d
	}
	if !r.Start.IsZero() {
		t := r.Start.UTC()
		j.Start = &t
	}
	return j
}

// writeJSON writes, for a log that tells the deployment, a first object
// about it; then one JSON object per call or provider step: those never
// answered first, then the others in the order of the log; then, per
// preview, what an update would run; then one per unreadable line.
func writeJSON(w io.Writer, from origin, recs []*record, problems []problem, d *deployment) error {
	if d == nil {
		d = &deployment{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	pending := unanswered(recs, d)
	if d.Known {
		sp := timeSplit(recs, d)
		h := jsonDeployment{
			Project: d.Project, Stack: d.Stack, Organization: d.Organization, CLI: d.CLI, SDK: d.SDK,
			Runs: []jsonRun{}, Unanswered: len(pending),
			Time: jsonTime{Callbacks: int64(sp.Callbacks), Provider: int64(sp.Provider), Rest: int64(sp.Rest), Runs: int64(sp.Runs)},
		}
		for _, r := range d.Runs {
			jr := jsonRun{Name: r.Name, Line: r.Line, EndLine: r.End, DurationNs: int64(r.Duration), Result: r.result(), Error: r.Err, Program: r.Program}
			if !r.Start.IsZero() {
				t := r.Start.UTC()
				jr.Start = &t
			}
			h.Runs = append(h.Runs, jr)
		}
		if err := enc.Encode(jsonHeader{h}); err != nil {
			return err
		}
	}
	for _, r := range pending {
		if err := enc.Encode(toJSON(from, r)); err != nil {
			return err
		}
	}
	for _, r := range entries(recs, d) {
		if r.Pending {
			continue
		}
		if err := enc.Encode(toJSON(from, r)); err != nil {
			return err
		}
	}
	for _, rp := range d.Plans {
		for _, l := range wouldRunJSON(rp) {
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
	}
	for _, p := range problems {
		if err := enc.Encode(jsonProblem{p}); err != nil {
			return err
		}
	}
	return nil
}

// jsonWouldRunLine is the line -json writes per resource of a preview that
// binds hooks, and one per preview for what is about no resource: what an
// update would run.
type jsonWouldRunLine struct {
	WouldRun jsonWouldRun `json:"wouldRun"`
}

type jsonWouldRun struct {
	Run        string         `json:"run"`
	RunLine    int            `json:"runLine"`
	Resource   *jsonResource  `json:"resource,omitempty"`
	Component  bool           `json:"component,omitempty"`
	Step       string         `json:"step,omitempty"`
	Why        string         `json:"why,omitempty"`
	Line       int            `json:"line,omitempty"`
	Hooks      []jsonHookPlan `json:"hooks,omitempty"`
	CannotTell string         `json:"cannotTell,omitempty"`
	Unbound    []string       `json:"unboundHooks,omitempty"`
	Deletes    string         `json:"deletes,omitempty"`
}

type jsonHookPlan struct {
	Moment      string `json:"moment"`
	Name        string `json:"name,omitempty"`
	Step        string `json:"step"`
	Conditional bool   `json:"conditional,omitempty"`
	Note        string `json:"note,omitempty"`
}

// wouldRunJSON is the -json lines of rp: one per resource, then one for
// the preview.
func wouldRunJSON(rp *runPlan) []jsonWouldRunLine {
	var out []jsonWouldRunLine
	for _, p := range rp.Resources {
		j := jsonWouldRun{Run: rp.Run, RunLine: rp.RunLine, Resource: &jsonResource{URN: p.URN, Type: p.Type, Name: p.Name},
			Component: p.Component, Step: p.Step, Why: p.Why, Line: p.Line, CannotTell: p.CannotTell}
		for _, h := range p.Hooks {
			j.Hooks = append(j.Hooks, jsonHookPlan(h))
		}
		out = append(out, jsonWouldRunLine{j})
	}
	return append(out, jsonWouldRunLine{jsonWouldRun{Run: rp.Run, RunLine: rp.RunLine, Unbound: rp.Unbound, Deletes: cannotDeletes}})
}
