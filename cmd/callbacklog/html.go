package main

import (
	_ "embed"
	"html/template"
	"io"
	"strconv"
	"time"
)

//go:embed timeline.html
var timelineSource string

// timeline is parsed once; html/template escapes every value by where it
// lands (the data block is JSON in a script), so a log's strings cannot
// break out of the page.
var timeline = template.Must(template.New("timeline").Parse(timelineSource))

// page is what the HTML template is given; the script draws the timeline
// from it.
type page struct {
	Source    string
	From      string   // the kind of log
	Cannot    []string // what it cannot tell
	Calls     int
	Resources int
	TotalNs   int64
	SpanNs    int64
	ByReg     []pageSpent
	Problems  []problem

	// The deployment around the calls, where the log tells it.
	Header     [][2]string // label, value
	Runs       []pageRun
	Unanswered []pageCall
	Split      *pageSplit
	// Plans are, per preview, what an update would run.
	Plans []pagePlan

	// groups are the rows of the timeline, made one at a time as the page
	// is written (writePage).
	groups func(yield func(pageGroup) bool)
}

type pageRun struct {
	Label, Name, Result, Err string
	Program                  string
	Line, EndLine            int
	AtNs, DurNs              int64
}

// pagePlan is what an update would run, as one preview tells it.
type pagePlan struct {
	Run       string // the run's label
	Resources []pagePlanned
	Unbound   string // the hooks bound to no resource, and what an update does with them
	Deletes   string
}

type pagePlanned struct {
	URN, Type, Name string
	Component       bool
	Step            string // the step and why, or what the log cannot tell
	Hooks           []plannedHook
}

type pageSplit struct {
	CallbacksNs, ProviderNs, RestNs, RunsNs int64
	Steps                                   int
}

type pageSpent struct {
	Kind, Registration string
	Calls              int
	TotalNs            int64
}

type pageGroup struct {
	Run             string // the label of the run the calls were made in, "" if the log names none
	URN, Type, Name string
	StackWide       bool
	Calls           []pageCall
}

type pageCall struct {
	Seq, Line          int
	Kind, Registration string
	Outcome, Invoke    string
	AtNs, DurNs        int64
	Changes            []change
	Message, Err, Op   string
	Attempt            int
	Note, Given        string
	NoDuration         bool
	Pending            bool   // never answered: DurNs is how long it had run when the log ended
	Step, Provider     string // a provider step's method and provider
	Run                string
	About              string

	// With -v: the request and the answer by property path, or why the log
	// does not hold them.
	Verbose                       bool
	Request, Answer               []field
	RequestMissing, AnswerMissing string
}

func writeHTML(w io.Writer, source string, from origin, recs []*record, problems []problem, d *deployment) error {
	if d == nil {
		d = &deployment{}
	}
	s := summarize(recs)
	first := firstStart(recs, d)
	all := entries(recs, d)
	var last time.Time
	for _, r := range all {
		if end := r.Start.Add(r.Duration); !r.Start.IsZero() && end.After(last) {
			last = end
		}
	}
	span := s.Span
	if !first.IsZero() && last.After(first) {
		span = last.Sub(first)
	}
	p := page{
		Source: source, From: from.Text, Cannot: from.Cannot, Calls: s.Calls, Resources: s.Resources,
		TotalNs: int64(s.Total), SpanNs: int64(span), Problems: problems,
		Runs: []pageRun{}, Unanswered: []pageCall{}, Header: [][2]string{},
	}
	if p.Problems == nil {
		p.Problems = []problem{}
	}
	for _, f := range [][2]string{{"project", d.Project}, {"stack", d.Stack}, {"organization", d.Organization}, {"CLI", d.CLI}, {"SDK", d.SDK}} {
		if f[1] != "" {
			p.Header = append(p.Header, f)
		}
	}
	at := func(t time.Time) int64 {
		if t.IsZero() || first.IsZero() {
			return 0
		}
		return int64(t.Sub(first))
	}
	for _, r := range d.Runs {
		p.Runs = append(p.Runs, pageRun{Label: r.label(), Name: r.Name, Result: r.result(), Err: r.Err, Program: r.Program, Line: r.Line, EndLine: r.End, AtNs: at(r.Start), DurNs: int64(r.Duration)})
	}
	if sp := timeSplit(recs, d); sp.Runs > 0 || sp.Steps > 0 {
		p.Split = &pageSplit{CallbacksNs: int64(sp.Callbacks), ProviderNs: int64(sp.Provider), RestNs: int64(sp.Rest), RunsNs: int64(sp.Runs), Steps: sp.Steps}
	}
	p.Plans = []pagePlan{}
	for _, rp := range d.Plans {
		pp := pagePlan{Run: rp.Label, Resources: []pagePlanned{}, Deletes: cannotDeletes}
		if len(rp.Unbound) > 0 {
			pp.Unbound = unboundText(rp.Unbound)
		}
		for _, pl := range rp.Resources {
			step := pl.stepLine()
			if pl.Step != "" && len(pl.Hooks) > 0 {
				step = pl.Step + " (log line " + strconv.Itoa(pl.Line) + ")"
			}
			pp.Resources = append(pp.Resources, pagePlanned{URN: pl.URN, Type: pl.Type, Name: pl.Name, Component: pl.Component,
				Step: step, Hooks: pl.Hooks})
		}
		p.Plans = append(p.Plans, pp)
	}
	for _, b := range s.ByReg {
		p.ByReg = append(p.ByReg, pageSpent{Kind: b.Kind, Registration: b.Registration, Calls: b.Calls, TotalNs: int64(b.Total)})
	}
	call := func(r *record) pageCall {
		label := ""
		if r.RunLine != 0 {
			label = r.Run + " (log line " + strconv.Itoa(r.RunLine) + ")"
		}
		c := pageCall{
			Seq: r.Seq, Line: r.Line, Kind: r.Kind, Registration: r.Registration,
			Outcome: r.Outcome, Invoke: r.Invoke, AtNs: at(r.Start), DurNs: int64(r.Duration),
			Changes: r.Changes, Message: r.Message, Err: r.Err, Op: r.Op, Attempt: r.Attempt,
			Note: r.Note, Given: r.Given, NoDuration: r.NoDuration,
			Pending: r.Pending, Step: r.Step, Provider: r.Provider, Run: label, About: about(r),
		}
		if p := r.Payload; p != nil {
			c.Verbose, c.RequestMissing, c.AnswerMissing = true, p.RequestMissing, p.AnswerMissing
			c.Request, c.Answer = payloadFields(p.Request), payloadFields(p.Answer)
		}
		return c
	}
	for _, r := range unanswered(recs, d) {
		p.Unanswered = append(p.Unanswered, call(r))
	}
	p.groups = func(yield func(pageGroup) bool) {
		for _, pt := range parts(recs, d) {
			run := ""
			if pt.Run != nil {
				run = pt.Run.label()
			}
			for _, g := range pt.Groups {
				pg := pageGroup{Run: run, URN: g.URN, Type: g.Type, Name: g.Name, StackWide: g.stackWide()}
				for _, r := range g.Calls {
					pg.Calls = append(pg.Calls, call(r))
				}
				if !yield(pg) {
					return
				}
			}
		}
	}
	return writePage(w, &p)
}

// payloadFields is a request or answer as the page shows it: its lines by
// property path, none for an empty one, nil where the log does not hold it.
func payloadFields(v *value) []field {
	if v == nil {
		return nil
	}
	return append([]field{}, v.lines()...)
}
