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
}

// change is one difference a call made, by property path.
type change struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

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
