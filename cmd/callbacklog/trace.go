package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// The trace is the Trace Event Format that Perfetto (ui.perfetto.dev) and
// Chrome's about://tracing read: {"traceEvents": [...]}, with times in
// microseconds.

// traceEvent is one event of a trace.
type traceEvent struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat,omitempty"`
	Ph    string         `json:"ph"`
	Ts    *float64       `json:"ts,omitempty"`
	Dur   *float64       `json:"dur,omitempty"`
	Scope string         `json:"s,omitempty"` // an instant event's: "t", its lane
	Pid   int            `json:"pid"`
	Tid   int            `json:"tid"`
	Args  map[string]any `json:"args,omitempty"`
}

type traceFile struct {
	TraceEvents     []traceEvent `json:"traceEvents"`
	DisplayTimeUnit string       `json:"displayTimeUnit"`
}

// micros is d in microseconds, as the trace gives times.
func micros(d time.Duration) *float64 {
	us := float64(d) / float64(time.Microsecond)
	return &us
}

// laneName names a resource's lane in a trace.
func laneName(g *group) string {
	if g.stackWide() {
		return "stack-wide (about no resource)"
	}
	return g.Type + " " + strconv.Quote(g.Name)
}

// buildTrace is the trace of the calls and of the provider steps (d.Steps;
// d may be nil): a process per run of the program, named as the account
// names the run ("update (log line 11)"), in the runs' order, and one
// named after the deployment for what the log places in no run (a log
// without runs has only that one). In each process, a lane (thread) per
// resource, in the order of the account, and one event per call or step
// in it, placed by its start after the first one's and as long as its
// duration. A call about a resource that starts before the resource's
// previous call ended takes another lane of the resource, named with (2),
// (3), so that no lane holds calls that overlap. A call whose duration the
// log does not give is an instant event.
func buildTrace(source string, recs []*record, d *deployment) traceFile {
	t := traceFile{TraceEvents: []traceEvent{}, DisplayTimeUnit: traceUnit}
	eachTraceEvent(source, recs, d, func(e traceEvent) bool {
		t.TraceEvents = append(t.TraceEvents, e)
		return true
	})
	return t
}

// traceUnit is the unit the viewers show the trace's times in.
const traceUnit = "ms"

// eachTraceEvent makes the events of the trace (buildTrace) one at a time,
// in order, and gives each to yield until it returns false.
func eachTraceEvent(source string, recs []*record, d *deployment, yield func(traceEvent) bool) {
	all := recs
	var runs []*progRun
	if d != nil {
		all = append(slices.Clone(recs), d.Steps...)
		runs = d.Runs
	}
	first := summarize(all).First
	pids := map[int]int{} // a run's first log line: its process
	byPid := map[int][]*record{}
	for _, r := range all {
		pid, ok := pids[r.RunLine]
		if !ok {
			pid = 1 // the deployment's: the log places the call in no run
			if i := slices.IndexFunc(runs, func(run *progRun) bool { return run.Line == r.RunLine }); r.RunLine != 0 && i >= 0 {
				pid = i + 2
			}
			pids[r.RunLine] = pid
		}
		byPid[pid] = append(byPid[pid], r)
	}
	tid := 0
	for pid := 1; pid <= len(runs)+1; pid++ {
		in, ok := byPid[pid]
		var rp *runPlan
		if pid > 1 {
			rp = d.planOf(runs[pid-2])
		}
		if !ok && rp == nil {
			continue
		}
		lanes := map[string]int{} // a resource's first lane

		name := "deployment (" + source + ")"
		if pid > 1 {
			name = runs[pid-2].label()
		}
		if !yield(traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": name}}) ||
			!yield(traceEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}}) {
			return
		}
		for _, g := range groups(in) {
			calls := slices.Clone(g.Calls)
			slices.SortStableFunc(calls, func(a, b *record) int { return a.Start.Compare(b.Start) })
			var ends []time.Time // of the resource's lanes: when each is free
			var tids []int
			for _, r := range calls {
				end := r.Start.Add(r.Duration)
				lane := slices.IndexFunc(ends, func(e time.Time) bool { return !e.After(r.Start) })
				if lane < 0 {
					tid++
					lane = len(ends)
					ends, tids = append(ends, end), append(tids, tid)
					name := laneName(g)
					if lane > 0 {
						name += fmt.Sprintf(" (%d)", lane+1)
					}
					if !yield(traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}}) ||
						!yield(traceEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": tid}}) {
						return
					}
					if lane == 0 && g.URN != "" {
						lanes[g.URN] = tid
					}
				}
				ends[lane] = end
				if !yield(callEvent(r, first, pid, tids[lane])) {
					return
				}
			}
		}
		if rp != nil && !planEvents(rp, first, pid, lanes, &tid, yield) {
			return
		}
	}
}

// planEvents makes the events of what an update would run, as the preview
// rp tells it: an instant event per resource that binds hooks, on its lane
// (a new one if it has none), when the step it follows from was decided;
// and one for the preview, at its start, with what is about no resource.
func planEvents(rp *runPlan, first time.Time, pid int, lanes map[string]int, tid *int, yield func(traceEvent) bool) bool {
	at := func(t time.Time) *float64 {
		if t.IsZero() || first.IsZero() || t.Before(first) {
			return micros(0)
		}
		return micros(t.Sub(first))
	}
	for _, p := range rp.Resources {
		lane, ok := lanes[p.URN]
		if !ok {
			*tid++
			lane = *tid
			lanes[p.URN] = lane
			g := &group{URN: p.URN, Type: p.Type, Name: p.Name}
			if !yield(traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: lane, Args: map[string]any{"name": laneName(g)}}) ||
				!yield(traceEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: lane, Args: map[string]any{"sort_index": lane}}) {
				return false
			}
		}
		step := p.Step
		if step == "" {
			step = "cannot tell"
		}
		args := map[string]any{"run": rp.Run, "urn": p.URN, "wouldTake": p.stepLine()}
		if p.Line != 0 {
			args["line"] = p.Line
		}
		hooks := []string{}
		for _, h := range p.Hooks {
			hooks = append(hooks, h.text(0))
		}
		args["hooks"] = hooks
		if !yield(traceEvent{Name: "would run: " + step, Cat: "would run", Ph: "i", Scope: "t", Ts: at(p.At), Pid: pid, Tid: lane, Args: args}) {
			return false
		}
	}
	args := map[string]any{"run": rp.Run, "deletes": cannotDeletes}
	if len(rp.Unbound) > 0 {
		args["unboundHooks"] = rp.Unbound
	}
	return yield(traceEvent{Name: "would run: about no resource", Cat: "would run", Ph: "i", Scope: "p", Ts: micros(0), Pid: pid, Args: args})
}

func callEvent(r *record, first time.Time, pid, tid int) traceEvent {
	e := traceEvent{Name: r.Kind + ": " + r.Registration, Cat: r.Kind, Ph: "X", Pid: pid, Tid: tid}
	args := map[string]any{"line": r.Line, "outcome": r.Outcome, "registration": r.Registration}
	if r.Step == "" {
		args["seq"] = r.Seq
	} else {
		args["step"], args["provider"] = r.Step, r.Provider
	}
	if r.Start.IsZero() || first.IsZero() {
		e.Ts = micros(0)
		args["start"] = "not in the log"
	} else {
		e.Ts = micros(r.Start.Sub(first))
	}
	if r.NoDuration {
		e.Ph, e.Scope = "i", "t"
		args["duration"] = "not in the log"
	} else {
		e.Dur = micros(r.Duration)
	}
	set := func(k, v string) {
		if v != "" {
			args[k] = v
		}
	}
	set("run", r.Run)
	set("urn", r.URN)
	set("invoke", r.Invoke)
	set("hook", r.HookName)
	set("message", r.Message)
	set("operation", r.Op)
	set("error", r.Err)
	set("note", r.Note)
	set("given", r.Given)
	if r.Attempt > 0 {
		args["attempt"] = r.Attempt
	}
	if len(r.Changes) > 0 {
		changes := make([]string, len(r.Changes))
		for i, ch := range r.Changes {
			changes[i] = ch.Path + ": " + ch.Old + " → " + ch.New
		}
		args["changes"] = changes
	}
	if p := r.Payload; p != nil {
		set("requestMissing", p.RequestMissing)
		set("answerMissing", p.AnswerMissing)
		if p.Request != nil {
			args["request"] = p.Request.jsonValue()
		}
		if p.Answer != nil {
			args["answer"] = p.Answer.jsonValue()
		}
	}
	e.Args = args
	return e
}

// writeTrace writes the trace of the calls and steps an event at a time, so
// that what it holds beyond the account is one event: the file is
// buildTrace's, in JSON.
func writeTrace(w io.Writer, source string, recs []*record, d *deployment) error {
	if _, err := io.WriteString(w, `{"traceEvents":[`); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var err error
	n := 0
	eachTraceEvent(source, recs, d, func(e traceEvent) bool {
		if n > 0 {
			if _, err = io.WriteString(w, ","); err != nil {
				return false
			}
		}
		err = enc.Encode(e)
		n++
		return err == nil
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, `],"displayTimeUnit":"`+traceUnit+`"}`+"\n")
	return err
}

func writeTraceFile(name, source string, recs []*record, d *deployment) error {
	return writeBuffered(name, func(w io.Writer) error { return writeTrace(w, source, recs, d) })
}
