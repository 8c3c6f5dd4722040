package main

import (
	_ "embed"
	"html/template"
	"io"
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
	Groups    []pageGroup
	ByReg     []pageSpent
	Problems  []problem
}

type pageSpent struct {
	Kind, Registration string
	Calls              int
	TotalNs            int64
}

type pageGroup struct {
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
}

func writeHTML(w io.Writer, source string, from origin, recs []*record, problems []problem) error {
	s := summarize(recs)
	p := page{
		Source: source, From: from.Text, Cannot: from.Cannot, Calls: s.Calls, Resources: s.Resources,
		TotalNs: int64(s.Total), SpanNs: int64(s.Span), Problems: problems,
		Groups: []pageGroup{},
	}
	if p.Problems == nil {
		p.Problems = []problem{}
	}
	for _, b := range s.ByReg {
		p.ByReg = append(p.ByReg, pageSpent{Kind: b.Kind, Registration: b.Registration, Calls: b.Calls, TotalNs: int64(b.Total)})
	}
	for _, g := range groups(recs) {
		pg := pageGroup{URN: g.URN, Type: g.Type, Name: g.Name, StackWide: g.stackWide()}
		for _, r := range g.Calls {
			var at time.Duration
			if !r.Start.IsZero() && !s.First.IsZero() {
				at = r.Start.Sub(s.First)
			}
			pg.Calls = append(pg.Calls, pageCall{
				Seq: r.Seq, Line: r.Line, Kind: r.Kind, Registration: r.Registration,
				Outcome: r.Outcome, Invoke: r.Invoke, AtNs: int64(at), DurNs: int64(r.Duration),
				Changes: r.Changes, Message: r.Message, Err: r.Err, Op: r.Op, Attempt: r.Attempt,
				Note: r.Note, Given: r.Given, NoDuration: r.NoDuration,
			})
		}
		p.Groups = append(p.Groups, pg)
	}
	return timeline.Execute(w, p)
}
