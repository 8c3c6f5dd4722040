package main

import (
	"flag"
	"regexp"
	"strings"
)

// filter keeps the calls and provider steps a user asked for with show's
// -resource, -kind, -outcome and -run flags. A flag not given keeps
// everything; given several times, it keeps what any of its values match;
// the flags together keep what every one of them keeps.
type filter struct {
	resources, kinds, outcomes, runs multi
	globs                            []*regexp.Regexp // resources, compiled
}

// multi is a flag that may be given several times, or once with values
// separated by commas.
type multi []string

func (m *multi) String() string { return strings.Join(*m, ",") }

func (m *multi) Set(v string) error {
	for part := range strings.SplitSeq(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*m = append(*m, part)
		}
	}
	return nil
}

// flags adds the filter's flags to fs.
func (f *filter) flags(fs *flag.FlagSet) {
	fs.Var(&f.resources, "resource", "")
	fs.Var(&f.kinds, "kind", "")
	fs.Var(&f.outcomes, "outcome", "")
	fs.Var(&f.runs, "run", "")
}

// compile turns each resource pattern into the expression it stands for:
// * is any run of characters, / included (type tokens and URNs hold
// slashes), ? any one character, and the rest is itself.
func (f *filter) compile() {
	for _, p := range f.resources {
		var re strings.Builder
		re.WriteString("^")
		for _, c := range p {
			switch c {
			case '*':
				re.WriteString(".*")
			case '?':
				re.WriteString(".")
			default:
				re.WriteString(regexp.QuoteMeta(string(c)))
			}
		}
		re.WriteString("$")
		f.globs = append(f.globs, regexp.MustCompile(re.String()))
	}
}

// on reports whether any flag was given.
func (f *filter) on() bool {
	return len(f.resources)+len(f.kinds)+len(f.outcomes)+len(f.runs) > 0
}

// keeps reports whether r passes every flag given. A resource pattern is a
// glob against the resource's name, its type or its URN; a kind is the
// account's word for it ("resource hook", "provider step"), with - or _ for
// the space; an outcome and a run are the account's words.
func (f *filter) keeps(r *record) bool {
	resource := len(f.globs) == 0
	for _, g := range f.globs {
		resource = resource || r.URN != "" && g.MatchString(r.URN) || r.Name != "" && g.MatchString(r.Name) || r.Type != "" && g.MatchString(r.Type)
	}
	return resource &&
		anyOf(f.kinds, func(k string) bool {
			return strings.EqualFold(strings.NewReplacer("-", " ", "_", " ").Replace(k), r.Kind)
		}) &&
		anyOf(f.outcomes, func(o string) bool { return strings.EqualFold(o, r.Outcome) }) &&
		anyOf(f.runs, func(run string) bool { return strings.EqualFold(run, r.Run) })
}

// anyOf reports whether values is empty or ok holds for one of them.
func anyOf(values []string, ok func(string) bool) bool {
	if len(values) == 0 {
		return true
	}
	for _, v := range values {
		if ok(v) {
			return true
		}
	}
	return false
}

// apply keeps in recs and in d's provider steps what f keeps.
func (f *filter) apply(recs []*record, d *deployment) []*record {
	if !f.on() {
		return recs
	}
	f.compile()
	keep := func(in []*record) []*record {
		var out []*record
		for _, r := range in {
			if f.keeps(r) {
				out = append(out, r)
			}
		}
		return out
	}
	if d != nil {
		d.Steps = keep(d.Steps)
		d.Plans = f.plans(d.Plans)
	}
	return keep(recs)
}

// plans keeps of what previews say an update would run what f keeps: the
// hooks are of the kind "resource hook" and of the preview's run, and have
// no outcome, so that an -outcome flag keeps none; -resource keeps the
// resources it matches, and leaves out the hooks bound to none.
func (f *filter) plans(in []*runPlan) []*runPlan {
	var out []*runPlan
	for _, rp := range in {
		if len(f.outcomes) > 0 ||
			!anyOf(f.kinds, func(k string) bool {
				return strings.EqualFold(strings.NewReplacer("-", " ", "_", " ").Replace(k), "resource hook")
			}) ||
			!anyOf(f.runs, func(run string) bool { return strings.EqualFold(run, rp.Run) }) {
			continue
		}
		kept := *rp
		if len(f.globs) > 0 {
			kept.Resources, kept.Unbound = nil, nil
			for _, p := range rp.Resources {
				if f.keeps(&record{URN: p.URN, Type: p.Type, Name: p.Name, Kind: "resource hook", Run: rp.Run}) {
					kept.Resources = append(kept.Resources, p)
				}
			}
			if len(kept.Resources) == 0 {
				continue
			}
		}
		out = append(out, &kept)
	}
	return out
}

// String says what f keeps, for the account's header.
func (f *filter) String() string {
	var parts []string
	for _, p := range []struct {
		flag   string
		values multi
	}{{"resource", f.resources}, {"kind", f.kinds}, {"outcome", f.outcomes}, {"run", f.runs}} {
		if len(p.values) > 0 {
			parts = append(parts, p.flag+" "+strings.Join(p.values, " or "))
		}
	}
	return strings.Join(parts, "; ")
}
