package main

import (
	"cmp"
	"slices"
	"time"
)

// record is one callback call as the command shows it: everything the
// three forms (text, JSON, HTML) print, already reduced to strings, with
// secret values already masked unless -secrets was given. It is built from a
// replay.Call by newRecord, so the rendering knows nothing of the log.
type record struct {
	Seq  int // order by completion, 1-based
	Line int // the log line that completed the call

	Kind         string // "resource transform", "resource hook", ...
	Registration string // "stack transform #1", "hook before-create", ...
	Method       string // the monitor method that registered the token
	HookName     string // a hook's or error hook's name

	URN    string // "" for invoke transforms
	Type   string
	Name   string
	Invoke string // an invoke transform's function token

	Outcome  string // "changed", "unchanged", "refused", "retry", ...
	Changes  []change
	Err      string // the error the engine got from the call
	Message  string // a hook's refusal, or the error an error hook saw
	Attempt  int    // an error hook's attempt (1 for the first failure)
	Op       string // the operation an error hook was called for
	Start    time.Time
	Duration time.Duration

	// NoDuration says the log does not give the call's duration (Duration
	// is then 0), and Note what else the account must say of the call: how
	// far the log can be trusted about it.
	NoDuration bool
	Note       string
	Given      string // what a transform whose answer is not known was given

	// Pending says the log ends before the call was answered: Line is the
	// line that started it, Duration how long it had run when the log
	// ended, Outcome "unanswered".
	Pending bool
	// Run is the run of the program the call was made in ("preview",
	// "update"), and RunLine the log line that started that run; "" and 0
	// when the log does not say.
	Run     string
	RunLine int
	// Step is the provider's method ("Create", ...) for a provider call,
	// "" for a callback call; Provider is the provider's name.
	Step, Provider string

	// Payload is what the call was asked and what it answered, which the
	// views show with -v; nil without -v, and for a provider step.
	Payload *exchange
}

// change is one difference a call made, by property path. Old and New are
// the values as the account prints them; OldValue and NewValue the same
// values for -json's typed form, nil where Old or New is absent (or the log
// gives the value only as text: the engine's automatic-log lines give
// options so, and the module's records give every value so unless they
// hold the call's payloads).
type change struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`

	OldValue *value `json:"-"`
	NewValue *value `json:"-"`
}

// String is the change as the account says it: {path old new}.
func (c change) String() string { return "{" + c.Path + " " + c.Old + " " + c.New + "}" }

// same reports whether two changes say the same: the same path, old and
// new values.
func (c change) same(o change) bool { return c.Path == o.Path && c.Old == o.Old && c.New == o.New }

// absent stands for a value that was not there, before or after.
const absent = "(absent)"

// group is the calls about one resource, or the stack-wide calls about no
// resource (invoke transforms), in the order they completed.
type group struct {
	URN   string // "" for the stack-wide calls, or when the log does not say
	Type  string
	Name  string
	Calls []*record
}

// stackWide reports whether g holds the calls about no resource.
func (g *group) stackWide() bool { return g.URN == "" && g.Type == "" && g.Name == "" }

// groups splits the calls by resource, in the order resources first appear,
// with the stack-wide calls (invoke transforms) last.
func groups(recs []*record) []*group {
	var out []*group
	var stack *group
	byURN := map[string]*group{}
	for _, r := range recs {
		key := r.URN
		if key == "" && (r.Type != "" || r.Name != "") {
			key = r.Type + "::" + r.Name // a resource whose URN the log does not give
		}
		if key == "" {
			if stack == nil {
				stack = &group{}
			}
			stack.Calls = append(stack.Calls, r)
			continue
		}
		g := byURN[key]
		if g == nil {
			g = &group{URN: r.URN, Type: r.Type, Name: r.Name}
			byURN[key] = g
			out = append(out, g)
		}
		if g.Type == "" {
			g.Type = r.Type
		}
		if g.Name == "" {
			g.Name = r.Name
		}
		g.Calls = append(g.Calls, r)
	}
	if stack != nil {
		out = append(out, stack)
	}
	return out
}

// tally is a count per key, in first-seen order.
type tally struct {
	Key   string
	Count int
}

func count(recs []*record, key func(*record) string) []tally {
	var out []tally
	idx := map[string]int{}
	for _, r := range recs {
		k := key(r)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, tally{Key: k})
		}
		out[i].Count++
	}
	return out
}

// summary is what the account says first.
type summary struct {
	Calls     int
	Resources int
	Total     time.Duration // the sum of the calls' durations
	Span      time.Duration // from the first call's start to the last one's end
	First     time.Time
	ByKind    []tally
	ByOutcome []tally
	ByReg     []spent // most time first
	Slowest   []*record
}

// spent is the time the calls of one registration took.
type spent struct {
	Kind, Registration string
	Calls              int
	Total              time.Duration
}

// slowestShown is how many of the slowest calls the summary lists.
const slowestShown = 3

func summarize(recs []*record) summary {
	s := summary{Calls: len(recs)}
	urns := map[string]bool{}
	var last time.Time
	for _, r := range recs {
		if r.URN != "" || r.Type != "" || r.Name != "" {
			urns[r.URN+" "+r.Type+"::"+r.Name] = true
		}
		s.Total += r.Duration
		if !r.Start.IsZero() && (s.First.IsZero() || r.Start.Before(s.First)) {
			s.First = r.Start
		}
		if end := r.Start.Add(r.Duration); !r.Start.IsZero() && end.After(last) {
			last = end
		}
	}
	if !s.First.IsZero() {
		s.Span = last.Sub(s.First)
	}
	s.Resources = len(urns)
	s.ByKind = count(recs, func(r *record) string { return r.Kind })
	s.ByOutcome = count(recs, func(r *record) string { return r.Outcome })
	idx := map[[2]string]int{}
	for _, r := range recs {
		k := [2]string{r.Kind, r.Registration}
		i, ok := idx[k]
		if !ok {
			i = len(s.ByReg)
			idx[k] = i
			s.ByReg = append(s.ByReg, spent{Kind: r.Kind, Registration: r.Registration})
		}
		s.ByReg[i].Calls++
		s.ByReg[i].Total += r.Duration
	}
	slices.SortStableFunc(s.ByReg, func(a, b spent) int { return cmp.Compare(b.Total, a.Total) })
	s.Slowest = slices.Clone(recs)
	slices.SortStableFunc(s.Slowest, func(a, b *record) int { return cmp.Compare(b.Duration, a.Duration) })
	if len(s.Slowest) > slowestShown {
		s.Slowest = s.Slowest[:slowestShown]
	}
	return s
}

// problem is a log line the command could not read, and why.
type problem struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// part is the calls and provider steps of one run of the program, by
// resource; Run is nil when the log names no run.
type part struct {
	Run    *progRun
	Groups []*group
}

// entries is the callback calls and the provider steps together, in the
// order of the log.
func entries(recs []*record, d *deployment) []*record {
	all := append(slices.Clone(recs), d.Steps...)
	slices.SortStableFunc(all, func(a, b *record) int { return cmp.Compare(a.Line, b.Line) })
	return all
}

// parts splits the calls and steps by run, then by resource.
func parts(recs []*record, d *deployment) []part {
	all := entries(recs, d)
	if len(d.Runs) == 0 {
		return []part{{Groups: groups(all)}}
	}
	var out []part
	for _, r := range d.Runs {
		var in []*record
		for _, rec := range all {
			if rec.RunLine == r.Line {
				in = append(in, rec)
			}
		}
		out = append(out, part{Run: r, Groups: groups(in)})
	}
	return out
}

// unanswered is the calls and steps the log never answered, in the order
// they started.
func unanswered(recs []*record, d *deployment) []*record {
	var out []*record
	for _, r := range entries(recs, d) {
		if r.Pending {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *record) int { return a.Start.Compare(b.Start) })
	return out
}

// firstStart is the earliest start of a call, a step or a run: the origin
// of the account's times.
func firstStart(recs []*record, d *deployment) time.Time {
	var first time.Time
	note := func(t time.Time) {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	for _, r := range recs {
		note(r.Start)
	}
	for _, r := range d.Steps {
		note(r.Start)
	}
	for _, r := range d.Runs {
		note(r.Start)
	}
	return first
}

// split is where a deployment's time went: in callbacks, in provider
// steps, and the rest of the runs' length (the engine, the program).
type split struct {
	Callbacks, Provider, Runs, Rest time.Duration
	Steps                           int
}

func timeSplit(recs []*record, d *deployment) split {
	var s split
	for _, r := range recs {
		s.Callbacks += r.Duration
	}
	for _, r := range d.Steps {
		s.Provider += r.Duration
		s.Steps++
	}
	for _, r := range d.Runs {
		s.Runs += r.Duration
	}
	s.Rest = max(0, s.Runs-s.Callbacks-s.Provider)
	return s
}
