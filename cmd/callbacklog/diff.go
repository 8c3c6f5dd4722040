package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/langhost/callbacks/replay"
)

// exitDiffer is diff's status when the two accounts differ, as diff(1)'s.
const exitDiffer = 1

// account is one log read as show reads it.
type account struct {
	name     string // the log as the command names it
	from     origin
	recs     []*record
	problems []problem
	secrets  secretSet // the values the log marks secret; nil under -secrets
}

// readAccount reads the log name ("-" for stdin) as show does. Unless
// secrets, the account's secrets are hidden, and the values the log marks
// secret are returned with it, so that a comparison can hide in each log
// what the other marks secret too.
func readAccount(name string, stdin io.Reader, secrets bool) (*account, error) {
	in, err := openLog(name, stdin)
	if err != nil {
		return nil, err
	}
	defer in.close()
	data, err := io.ReadAll(in) // read twice: once for the calls, once for the secrets
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", in.source, err)
	}
	a := &account{name: name, from: fromGRPC}
	if name == "-" {
		a.name = in.source
	}
	if in.auto {
		var info autoInfo
		a.recs, a.problems, info = readAutoLog(bytes.NewReader(data), secrets)
		a.from = info.origin()
		if len(a.recs) == 0 {
			err = in.checkAuto(info)
		}
	} else {
		a.recs, a.problems, _ = readLog(bytes.NewReader(data), secrets, false)
		if len(a.recs) == 0 {
			err = in.check()
		}
	}
	dropPayloads(a.recs) // diff compares what the calls did, not what they were asked
	if err != nil {
		return nil, err
	}
	if !secrets {
		a.secrets = secretSet{}
		if in.auto {
			r := newAutoReader(false)
			for line := range bytes.Lines(data) {
				r.collect(line)
			}
			a.secrets = r.found
		} else {
			for c := range replay.Read(bytes.NewReader(data)) {
				if c != nil {
					a.secrets.collect(c)
				}
			}
		}
	}
	return a, nil
}

// hideEachOthers hides in each account the secrets of the other: a value
// made secret between the two deployments is not printed from the older.
func hideEachOthers(a, b *account) {
	if len(b.secrets) > 0 {
		b.secrets.redactor().redact(a.recs, a.problems)
	}
	if len(a.secrets) > 0 {
		a.secrets.redactor().redact(b.recs, b.problems)
	}
}

// parseLogs parses args with fs and wants exactly n LOG arguments, flags
// before or after them.
func parseLogs(fs *flag.FlagSet, args []string, n int, stderr io.Writer) ([]string, int) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, usage)
				return nil, exitHelp
			}
			return nil, usageError(stderr, "%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != n {
		return nil, usageError(stderr, "%s: want %d LOG arguments (OLD NEW), got %d", fs.Name(), n, len(positional))
	}
	return positional, exitOK
}

// diffLogs is the diff command: it compares the accounts of two logs.
func diffLogs(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("diff", stderr)
	asJSON := fs.Bool("json", false, "")
	secrets := fs.Bool("secrets", false, "")
	names, code := parseLogs(fs, args, 2, stderr)
	if code == exitHelp {
		return exitOK
	}
	if code != exitOK {
		return code
	}
	if names[0] == "-" && names[1] == "-" {
		return usageError(stderr, "diff: OLD and NEW cannot both be standard input")
	}
	var accts [2]*account
	for i, name := range names {
		a, err := readAccount(name, stdin, *secrets)
		if err != nil {
			fmt.Fprintf(stderr, "callbacklog: %v\n", err)
			return exitFile
		}
		accts[i] = a
	}
	old, new := accts[0], accts[1]
	if !*secrets {
		hideEachOthers(old, new)
	}
	d := compare(old.recs, new.recs)
	out := bufio.NewWriter(stdout)
	var err error
	if *asJSON {
		err = writeDiffJSON(out, old, new, d)
	} else {
		err = writeDiffText(out, old, new, d)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: writing the comparison: %v\n", err)
		return exitWrite
	}
	for _, a := range accts {
		if len(a.problems) > 0 {
			fmt.Fprintf(stderr, "callbacklog: %s of %s could not be read (listed at the end)\n",
				plural(len(a.problems), "line", "lines"), a.name)
		}
	}
	if d.differs() || len(old.problems) > 0 || len(new.problems) > 0 {
		return exitDiffer
	}
	return exitOK
}

// pair is a call of the old log and its counterpart in the new one; either
// is nil where the call appeared or disappeared.
type pair struct{ old, new *record }

// state is what became of the call: "appeared", "disappeared", "changed" or
// "same".
func (p pair) state() string {
	switch {
	case p.old == nil:
		return "appeared"
	case p.new == nil:
		return "disappeared"
	case p.differs():
		return "changed"
	}
	return "same"
}

// differs reports whether the two calls of a pair did something different:
// their outcome, their changes, or what the account says under them. When
// and how long, their order and their lines in the log, are not compared.
func (p pair) differs() bool {
	return p.old.Outcome != p.new.Outcome || !slices.EqualFunc(p.old.Changes, p.new.Changes, change.same) ||
		!slices.Equal(said(p.old), said(p.new))
}

// said is what the account says under a call besides its changes: a hook's
// refusal, the failure an error hook saw, the error the engine got, what
// the log leaves uncertain.
func said(r *record) []string {
	c := *r
	c.Changes = nil
	return details(&c)
}

// resourceDiff is the pairs of one resource, or of the stack-wide calls.
type resourceDiff struct {
	URN, Type, Name string
	stack           bool
	pairs           []pair
}

// comparison is two accounts compared.
type comparison struct {
	resources            []*resourceDiff
	oldCalls, newCalls   int
	oldResources, newRes int
	counts               map[string]int // by state
}

func (c *comparison) differs() bool {
	return c.counts["changed"]+c.counts["appeared"]+c.counts["disappeared"] > 0
}

// resourceKey is what matches a resource across the two logs: its URN,
// else its type and name; "" for the stack-wide calls.
func resourceKey(g *group) string {
	if g.URN != "" || g.stackWide() {
		return g.URN
	}
	return g.Type + "::" + g.Name
}

// compare pairs the calls of two accounts: by resource, then by kind and
// registration, the first call of a registration about a resource in one
// log with the first in the other, the second with the second. Resources
// come in the order the new log has them, those only in the old log after,
// the stack-wide calls last; within a resource, in the new log's order,
// a call that disappeared before the one that came after it in the old.
func compare(old, new []*record) *comparison {
	c := &comparison{oldCalls: len(old), newCalls: len(new), counts: map[string]int{},
		oldResources: summarize(old).Resources, newRes: summarize(new).Resources}
	oldGroups := map[string]*group{}
	for _, g := range groups(old) {
		oldGroups[resourceKey(g)] = g
	}
	var order []*group
	seen := map[string]bool{}
	for _, g := range append(groups(new), groups(old)...) {
		if k := resourceKey(g); !seen[k] {
			seen[k] = true
			order = append(order, g)
		}
	}
	// The stack-wide calls last.
	slices.SortStableFunc(order, func(a, b *group) int {
		switch {
		case a.stackWide() == b.stackWide():
			return 0
		case a.stackWide():
			return 1
		}
		return -1
	})
	newGroups := map[string]*group{}
	for _, g := range groups(new) {
		newGroups[resourceKey(g)] = g
	}
	for _, g := range order {
		k := resourceKey(g)
		var o, n []*record
		if og := oldGroups[k]; og != nil {
			o = og.Calls
		}
		if ng := newGroups[k]; ng != nil {
			n = ng.Calls
		}
		rd := &resourceDiff{URN: g.URN, Type: g.Type, Name: g.Name, stack: g.stackWide(), pairs: pairCalls(o, n)}
		for _, p := range rd.pairs {
			c.counts[p.state()]++
		}
		c.resources = append(c.resources, rd)
	}
	return c
}

// pairCalls pairs the calls about one resource.
func pairCalls(old, new []*record) []pair {
	type reg struct{ kind, registration string }
	queue := map[reg][]int{}
	for i, r := range old {
		k := reg{r.Kind, r.Registration}
		queue[k] = append(queue[k], i)
	}
	partner := make([]int, len(new))
	matched := make([]bool, len(old))
	for i, r := range new {
		partner[i] = -1
		k := reg{r.Kind, r.Registration}
		if q := queue[k]; len(q) > 0 {
			partner[i], queue[k] = q[0], q[1:]
			matched[q[0]] = true
		}
	}
	var out []pair
	next := 0 // the old calls before next are placed
	for i, r := range new {
		j := partner[i]
		if j < 0 {
			out = append(out, pair{new: r})
			continue
		}
		for ; next <= j; next++ {
			if !matched[next] {
				out = append(out, pair{old: old[next]})
			}
		}
		out = append(out, pair{old: old[j], new: r})
	}
	for ; next < len(old); next++ {
		if !matched[next] {
			out = append(out, pair{old: old[next]})
		}
	}
	return out
}

// diffLine is a line under a call of the comparison: "-" for what the old
// call did and the new did not, "+" the other way.
type diffLine struct {
	mark string
	ch   *change // or
	text string
}

// lines are what the comparison prints under a pair.
func (p pair) lines() []diffLine {
	var out []diffLine
	all := func(r *record, mark string) {
		for i := range r.Changes {
			out = append(out, diffLine{mark: mark, ch: &r.Changes[i]})
		}
		for _, s := range said(r) {
			out = append(out, diffLine{mark: mark, text: s})
		}
	}
	switch {
	case p.new == nil:
		all(p.old, "-")
		return out
	case p.old == nil:
		all(p.new, "+")
		return out
	}
	// Changes by property path: a path whose change differs shows both.
	oldAt, newAt := map[string]change{}, map[string]change{}
	var paths []string
	for _, ch := range p.old.Changes {
		oldAt[ch.Path] = ch
		paths = append(paths, ch.Path)
	}
	for _, ch := range p.new.Changes {
		newAt[ch.Path] = ch
		if _, ok := oldAt[ch.Path]; !ok {
			paths = append(paths, ch.Path)
		}
	}
	for _, path := range paths {
		o, inOld := oldAt[path]
		n, inNew := newAt[path]
		if inOld && inNew && o.same(n) {
			continue
		}
		if inOld {
			out = append(out, diffLine{mark: "-", ch: &o})
		}
		if inNew {
			out = append(out, diffLine{mark: "+", ch: &n})
		}
	}
	o, n := said(p.old), said(p.new)
	for _, s := range o {
		if !slices.Contains(n, s) {
			out = append(out, diffLine{mark: "-", text: s})
		}
	}
	for _, s := range n {
		if !slices.Contains(o, s) {
			out = append(out, diffLine{mark: "+", text: s})
		}
	}
	return out
}

// mark is the pair's mark in the text: "+" appeared, "-" disappeared, "~"
// changed.
func (p pair) mark() string {
	switch {
	case p.old == nil:
		return "+"
	case p.new == nil:
		return "-"
	}
	return "~"
}

func (p pair) either() *record {
	if p.new != nil {
		return p.new
	}
	return p.old
}

// outcome is the pair's outcome, "old → new" where it changed.
func (p pair) outcome() string {
	if p.old != nil && p.new != nil && p.old.Outcome != p.new.Outcome {
		return p.old.Outcome + " → " + p.new.Outcome
	}
	return p.either().Outcome
}

// where is where the pair's calls are in their logs.
func (p pair) where() string {
	at := func(r *record) string { return fmt.Sprintf("%s line %d", seqText(r), r.Line) }
	switch {
	case p.old == nil:
		return at(p.new)
	case p.new == nil:
		return at(p.old)
	}
	return at(p.old) + " → " + at(p.new)
}

func writeDiffText(w io.Writer, old, new *account, c *comparison) error {
	p := &printer{w: w}
	about := func(a *account, resources int) string {
		s := plural(len(a.recs), "callback call", "callback calls")
		if resources > 0 {
			s += " about " + plural(resources, "resource", "resources")
		}
		return s
	}
	if !c.differs() && len(old.problems) == 0 && len(new.problems) == 0 {
		p.line("%s and %s: the same account, %s", old.name, new.name, about(new, c.newRes))
		return p.err
	}
	p.line("--- %s: %s", old.name, about(old, c.oldResources))
	p.line("+++ %s: %s", new.name, about(new, c.newRes))
	if old.from.Key != new.from.Key {
		p.line("    (%s read from %s, %s from %s)", old.name, old.from.Text, new.name, new.from.Text)
	}
	var parts []string
	for _, s := range []string{"changed", "appeared", "disappeared"} {
		if n := c.counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no call differs")
	}
	p.line("%s; %d the same", strings.Join(parts, ", "), c.counts["same"])

	var kw, rw, ow int
	for _, rd := range c.resources {
		for _, pr := range rd.pairs {
			if pr.state() != "same" {
				r := pr.either()
				kw, rw, ow = max(kw, width(r.Kind)), max(rw, width(r.Registration)), max(ow, width(pr.outcome()))
			}
		}
	}
	for _, rd := range c.resources {
		shown := false
		for _, pr := range rd.pairs {
			if pr.state() == "same" {
				continue
			}
			if !shown {
				shown = true
				p.line("")
				switch {
				case rd.stack:
					p.line("stack-wide (about no resource)")
				case rd.URN != "":
					p.line("%s %q", rd.Type, rd.Name)
					p.line("  %s", rd.URN)
				default:
					p.line("%s %q", rd.Type, rd.Name)
					p.line("  (the log does not give its URN)")
				}
			}
			r := pr.either()
			p.line("  %s %s  %s  %s  %s", pr.mark(), pad(r.Kind, kw, false), pad(r.Registration, rw, false),
				pad(pr.outcome(), ow, false), pr.where())
			lines := pr.lines()
			pw := 0
			for _, l := range lines {
				if l.ch != nil {
					pw = max(pw, width(l.ch.Path))
				}
			}
			for _, l := range lines {
				if l.ch != nil {
					p.line("      %s %s  %s → %s", l.mark, pad(l.ch.Path, pw, false), oneLine(l.ch.Old), oneLine(l.ch.New))
				} else {
					p.line("      %s %s", l.mark, l.text)
				}
			}
		}
	}
	for _, a := range []*account{old, new} {
		if len(a.problems) == 0 {
			continue
		}
		p.line("")
		p.line("%s of %s could not be read (the rest of it was compared):", plural(len(a.problems), "log line", "log lines"), a.name)
		for _, pr := range a.problems {
			p.line("  line %d: %s", pr.Line, oneLine(pr.Reason))
		}
	}
	return p.err
}

// jsonDiff is one line of diff -json: a call that appeared, disappeared or
// changed.
type jsonDiff struct {
	Diff         string        `json:"diff"`
	Kind         string        `json:"kind"`
	Registration string        `json:"registration"`
	Resource     *jsonResource `json:"resource,omitempty"`
	Old          *jsonCall     `json:"old,omitempty"`
	New          *jsonCall     `json:"new,omitempty"`
}

// jsonDiffProblem is the line written for each log line that could not be
// read, with the log it is of ("old" or "new").
type jsonDiffProblem struct {
	Unreadable struct {
		Log string `json:"log"`
		problem
	} `json:"unreadable"`
}

func writeDiffJSON(w io.Writer, old, new *account, c *comparison) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, rd := range c.resources {
		for _, pr := range rd.pairs {
			s := pr.state()
			if s == "same" {
				continue
			}
			r := pr.either()
			j := jsonDiff{Diff: s, Kind: r.Kind, Registration: r.Registration}
			if !rd.stack {
				j.Resource = &jsonResource{URN: rd.URN, Type: rd.Type, Name: rd.Name}
			}
			if pr.old != nil {
				o := toJSON(old.from, pr.old)
				j.Old = &o
			}
			if pr.new != nil {
				n := toJSON(new.from, pr.new)
				j.New = &n
			}
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
	}
	for i, a := range []*account{old, new} {
		for _, pr := range a.problems {
			var j jsonDiffProblem
			j.Unreadable.Log = []string{"old", "new"}[i]
			j.Unreadable.problem = pr
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
	}
	return nil
}
