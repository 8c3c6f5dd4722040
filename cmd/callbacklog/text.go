package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// writeText writes the account: a header (who ran the deployment, its
// runs), a summary, the calls never answered, then each run's calls and
// provider steps resource by resource, in the order they completed, with
// the stack-wide calls last, then the lines that could not be read.
func writeText(w io.Writer, source string, from origin, recs []*record, problems []problem, d *deployment) error {
	if d == nil {
		d = &deployment{}
	}
	p := &printer{w: w}
	s := summarize(recs)
	first := firstStart(recs, d)
	p.summary(source, from, s, d, first, timeSplit(recs, d))
	all := entries(recs, d)
	if len(all) > 0 {
		cols := widths(all, first)
		if pending := unanswered(recs, d); len(pending) > 0 {
			p.line("")
			p.line("never answered (the log ends before they were):")
			for _, r := range pending {
				p.line("  %s  %s  %s  %s", seqText(r), r.Kind, r.Registration, about(r))
				in := ""
				if r.Run != "" {
					in = " in the " + r.Run
				}
				p.line("      started on line %d%s, had run %s when the log ended", r.Line, in, duration(r.Duration))
			}
		}
		for _, pt := range parts(recs, d) {
			if pt.Run != nil {
				p.line("")
				p.line("== %s: %s", pt.Run.label(), runResult(pt.Run))
			}
			for _, g := range pt.Groups {
				p.line("")
				p.group(g, cols, first)
			}
			if rp := d.planOf(pt.Run); rp != nil {
				p.line("")
				for _, l := range rp.lines() {
					p.line("%s", l)
				}
			}
		}
	}
	if len(problems) > 0 {
		p.line("")
		p.line("%s could not be read (the rest of the log was):", plural(len(problems), "log line", "log lines"))
		for _, pr := range problems {
			p.line("  line %d: %s", pr.Line, oneLine(pr.Reason))
		}
	}
	return p.err
}

// about names what a call was about: its resource, or an invoke's token.
func about(r *record) string {
	switch {
	case r.URN != "":
		return r.URN
	case r.Name != "":
		return r.Type + " " + strconv.Quote(r.Name)
	case r.Invoke != "":
		return "invoke " + r.Invoke
	}
	return "no resource"
}

// runResult says how a run went: its result, its length, its first error.
func runResult(r *progRun) string {
	out := r.result()
	switch {
	case r.End != 0:
		out += " in " + duration(r.Duration)
	case r.Duration > 0:
		out += ", after " + duration(r.Duration)
	}
	if r.Err != "" {
		out += ": " + oneLine(r.Err)
	}
	if r.Program != "" && r.Program != r.Err {
		out += " (the program: " + oneLine(r.Program) + ")"
	}
	return out
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) line(format string, args ...any) {
	if p.err != nil {
		return
	}
	if len(args) == 0 {
		_, p.err = io.WriteString(p.w, format+"\n")
		return
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *printer) summary(source string, from origin, s summary, d *deployment, first time.Time, sp split) {
	if s.Calls == 0 {
		p.line("%s: no callback calls", source)
		p.header(d, first)
		p.line("%s%s", label("source"), from.Text)
		if len(d.Steps) > 0 {
			p.line("%s%s in %s", label("time"), duration(sp.Provider), plural(len(d.Steps), "provider step", "provider steps"))
		}
		p.line("")
		p.line("%s", from.noCalls())
		return
	}
	about := "no resource"
	if s.Resources > 0 {
		about = plural(s.Resources, "resource", "resources")
	}
	p.line("%s: %s about %s", source, plural(s.Calls, "callback call", "callback calls"), about)
	p.line("")
	p.header(d, first)
	p.line("%s%s", label("source"), from.Text)
	l := label("cannot tell")
	for _, c := range from.Cannot {
		p.line("%s%s", l, c)
		l = label("")
	}
	if s.Calls > 1 {
		p.line("%s%s in callbacks, within %s from the first call's start to the last one's end", label("time"),
			duration(s.Total), duration(s.Span))
	} else {
		p.line("%s%s in callbacks", label("time"), duration(s.Total))
	}
	if sp.Runs > 0 || sp.Steps > 0 {
		what := fmt.Sprintf("%s in callbacks, %s in %s", duration(sp.Callbacks), duration(sp.Provider), plural(sp.Steps, "provider step", "provider steps"))
		if sp.Runs > 0 {
			what += fmt.Sprintf(", %s the rest of the runs' %s", duration(sp.Rest), duration(sp.Runs))
		}
		p.line("%s%s", label("time split"), what)
	}
	p.line("%s%s", label("by kind"), tallies(s.ByKind, true))
	p.line("%s%s", label("by outcome"), tallies(s.ByOutcome, false))
	if len(s.ByReg) > 1 && len(s.ByReg) < s.Calls { // else the calls below say the same
		l := label("time went to")
		var dw, cw, kw int
		for _, b := range s.ByReg {
			dw, cw, kw = max(dw, len(duration(b.Total))), max(cw, len(plural(b.Calls, "call", "calls"))), max(kw, width(b.Kind))
		}
		for _, b := range s.ByReg {
			p.line("%s%s  %s  %s  %s", l, pad(duration(b.Total), dw, true), pad(plural(b.Calls, "call", "calls"), cw, false),
				pad(b.Kind, kw, false), b.Registration)
			l = label("")
		}
	}
	if s.Calls <= slowestShown {
		return // every call is in the account below, and few
	}
	l = label("slowest")
	var dw, sw, nw, kw int
	for _, r := range s.Slowest {
		dw, sw = max(dw, len(durationOf(r))), max(sw, len(seqText(r)))
		nw, kw = max(nw, width(subject(r))), max(kw, width(r.Kind))
	}
	for _, r := range s.Slowest {
		p.line("%s%s  %s  %s  %s  %s", l, pad(durationOf(r), dw, true), pad(seqText(r), sw, false),
			pad(subject(r), nw, false), pad(r.Kind, kw, false), r.Registration)
		l = label("")
	}
}

// header says who ran the deployment and its runs, where the log says.
func (p *printer) header(d *deployment, first time.Time) {
	for _, f := range [][2]string{{"project", d.Project}, {"stack", d.Stack}, {"organization", d.Organization},
		{"CLI", d.CLI}, {"SDK", d.SDK}} {
		if f[1] != "" {
			p.line("%s%s", label(f[0]), oneLine(f[1]))
		}
	}
	l := label("runs")
	for _, r := range d.Runs {
		at := "?"
		if !r.Start.IsZero() {
			at = r.Start.UTC().Format("15:04:05.000Z")
		}
		p.line("%s%s  started %s (%s)  %s", l, r.label(), at, offset(r.Start, first), runResult(r))
		l = label("")
	}
}

// label is a summary line's label, padded so that what follows lines up.
func label(s string) string { return "  " + pad(s, len("time went to")+2, false) }

// subject names what a call was about, for the summary.
func subject(r *record) string {
	switch {
	case r.Name != "":
		return r.Name
	case r.Invoke != "":
		return r.Invoke
	}
	return "(stack)"
}

// columns are the widths of the call rows' columns, the same for every
// resource so that the whole account lines up.
type columns struct{ seq, at, kind, reg, outcome, dur int }

func widths(recs []*record, first time.Time) columns {
	var c columns
	for _, r := range recs {
		c.seq = max(c.seq, len(seqText(r)))
		c.at = max(c.at, len(offset(r.Start, first)))
		c.kind = max(c.kind, width(r.Kind))
		c.reg = max(c.reg, width(r.Registration))
		c.outcome = max(c.outcome, width(r.Outcome))
		c.dur = max(c.dur, len(durationOf(r)))
	}
	return c
}

func (p *printer) group(g *group, c columns, first time.Time) {
	if g.stackWide() {
		p.line("stack-wide (about no resource)")
	} else {
		p.line("%s %s", g.Type, strconv.Quote(g.Name))
		if g.URN != "" {
			p.line("  %s", g.URN)
		} else {
			p.line("  (the log does not give its URN)")
		}
	}
	for _, r := range g.Calls {
		row := fmt.Sprintf("  %s  %s  %s  %s  %s  %s  line %d",
			pad(seqText(r), c.seq, true), pad(offset(r.Start, first), c.at, true),
			pad(r.Kind, c.kind, false), pad(r.Registration, c.reg, false),
			pad(r.Outcome, c.outcome, false), pad(durationOf(r), c.dur, true), r.Line)
		p.line("%s", row)
		indent := strings.Repeat(" ", 2+c.seq+2+c.at+2)
		for _, d := range details(r) {
			p.line("%s%s", indent, d)
		}
	}
}

// details are the lines shown under a call: what it was about, what it
// changed, what it said, what went wrong; with -v, what it was asked and
// what it answered.
func details(r *record) []string {
	var out []string
	if r.URN == "" && r.Invoke != "" {
		out = append(out, "invoke "+r.Invoke)
	}
	if r.Op != "" || r.Attempt > 0 {
		what := "failed"
		if r.Op != "" {
			what = r.Op + " failed"
		}
		if r.Attempt > 0 {
			what += fmt.Sprintf(" (attempt %d)", r.Attempt)
		}
		if r.Message != "" {
			what += ": " + oneLine(r.Message)
		}
		out = append(out, what)
	} else if r.Message != "" {
		out = append(out, "refused: "+oneLine(r.Message))
	}
	if len(r.Changes) > 0 {
		w := 0
		for _, ch := range r.Changes {
			w = max(w, width(ch.Path))
		}
		for _, ch := range r.Changes {
			out = append(out, fmt.Sprintf("%s  %s → %s", pad(ch.Path, w, false), oneLine(ch.Old), oneLine(ch.New)))
		}
	}
	if r.Err != "" {
		out = append(out, "error: "+oneLine(r.Err))
	}
	if r.Given != "" {
		out = append(out, "given: "+oneLine(r.Given))
	}
	if r.Note != "" {
		out = append(out, "note: "+oneLine(r.Note))
	}
	if r.Pending {
		out = append(out, fmt.Sprintf("never answered: started on this line, had run %s when the log ended", duration(r.Duration)))
	}
	if r.Payload != nil {
		out = append(out, r.Payload.textLines()...)
	}
	return out
}

// durationOf is a call's duration as the account prints it: "?" when the
// log does not give it.
func durationOf(r *record) string {
	if r.NoDuration {
		return "?"
	}
	return duration(r.Duration)
}

// seqText is a call's number, "-" for a provider step (which has none).
func seqText(r *record) string {
	if r.Step != "" {
		return "-"
	}
	return "#" + strconv.Itoa(r.Seq)
}

// offset is when a call started, after the first call of the log.
func offset(t, first time.Time) string {
	if t.IsZero() || first.IsZero() {
		return "?"
	}
	return fmt.Sprintf("+%.3fs", t.Sub(first).Seconds())
}

// duration prints d with three significant figures at most, in the unit a
// person reads callbacks in.
func duration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// tallies lists counts; nouns (kinds) take a plural, adjectives (outcomes)
// do not.
func tallies(ts []tally, nouns bool) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		if nouns {
			parts[i] = plural(t.Count, t.Key, t.Key+"s")
		} else {
			parts[i] = fmt.Sprintf("%d %s", t.Count, t.Key)
		}
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// width is how many columns s takes on a terminal (one per rune: the
// account holds no wide characters of its own).
func width(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, n int, right bool) string {
	fill := n - width(s)
	if fill <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", fill) + s
	}
	return s + strings.Repeat(" ", fill)
}

// oneLine keeps a user's string on one line of the account, and makes
// control characters visible rather than letting them act on the terminal.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
