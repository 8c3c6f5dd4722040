package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// What an update would run, told of a preview. A preview calls no resource
// hook (but those registered to run on dry runs), yet its gRPC log holds
// what decides them: each resource's registration (its hook bindings, by
// name, as its transforms left them), the program's hook registrations,
// and the provider's Check and Diff of each custom resource, which decide
// the step an update would take (step_generator.go in the engine's
// source): no Diff, no prior state: create; a Diff with no changes: same,
// which runs no hook; with changes: update, or replace when the provider
// says a changed property replaces the resource (replaces, a detailed
// diff's *_REPLACE kind) or one of the resource's replaceOnChanges changed,
// deleting first when the provider or the resource's deleteBeforeReplace
// says so. The hooks of each step (step.go, step_executor.go): create runs
// before-create and after-create, update before-update and after-update, a
// replace the new resource's create hooks and the replaced resource's
// delete hooks, from its prior state (after the create, or before it when
// deleting first); a component's after hooks run at its
// RegisterResourceOutputs.

// resourceReg is one RegisterResource of the program, as the log gives it.
type resourceReg struct {
	Line                    int // the log line that started it
	At                      time.Time
	URN, Type, Name, Parent string
	Custom, Remote          bool
	Import                  string // the ID it imports, if any
	Hooks                   *binding
	ReplaceOnChanges        []string
	DeleteBeforeReplace     *bool // nil when the registration leaves it to the provider
}

// binding is a resource's hooks by moment, in order: the protocol's
// ResourceHooksBinding.
type binding struct {
	BeforeCreate []string `json:"beforeCreate"`
	AfterCreate  []string `json:"afterCreate"`
	BeforeUpdate []string `json:"beforeUpdate"`
	AfterUpdate  []string `json:"afterUpdate"`
	BeforeDelete []string `json:"beforeDelete"`
	AfterDelete  []string `json:"afterDelete"`
	OnError      []string `json:"onError"`
}

func bindingOf(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) *binding {
	if b == nil {
		return nil
	}
	return &binding{BeforeCreate: b.GetBeforeCreate(), AfterCreate: b.GetAfterCreate(), BeforeUpdate: b.GetBeforeUpdate(),
		AfterUpdate: b.GetAfterUpdate(), BeforeDelete: b.GetBeforeDelete(), AfterDelete: b.GetAfterDelete(), OnError: b.GetOnError()}
}

// names is every name the binding holds, in the order of its moments.
func (b *binding) names() []string {
	if b == nil {
		return nil
	}
	return slices.Concat(b.BeforeCreate, b.AfterCreate, b.BeforeUpdate, b.AfterUpdate, b.BeforeDelete, b.AfterDelete, b.OnError)
}

// hookReg is one RegisterResourceHook or RegisterErrorHook of the program.
type hookReg struct {
	Line     int
	Name     string
	OnDryRun bool
	Error    bool // an error hook
}

// diffAnswer is what a provider's Diff said, and for an answer that does
// not say whether anything changed, the inputs the engine then compares.
type diffAnswer struct {
	Changes   string   // "DIFF_SOME", "DIFF_NONE", or "" (DIFF_UNKNOWN)
	Replaces  []string // the properties whose change replaces the resource
	Changed   []string // the properties that changed (diffs, detailedDiff's paths)
	DBR       bool     // deleteBeforeReplace
	OldInputs map[string]json.RawMessage
	News      map[string]json.RawMessage
	Ignore    []string
}

// transformSeen is the options a resource transform left a resource with:
// its answer's, or its request's when it answered none.
type transformSeen struct {
	Line, Seq          int
	Type, Name, Parent string
	Options            *pulumirpc.TransformResourceOptions
}

func transformOf(line, seq int, req *pulumirpc.TransformRequest, res *pulumirpc.TransformResponse) transformSeen {
	opts := req.GetOptions()
	if res.GetOptions() != nil {
		opts = res.GetOptions() // the answer's options replace the request's whole
	}
	return transformSeen{Line: line, Seq: seq, Type: req.GetType(), Name: req.GetName(), Parent: req.GetParent(), Options: opts}
}

// runPlan is what an update would run, as one preview tells it.
type runPlan struct {
	Run     string // "preview"
	RunLine int
	Label   string // the run as the account names it
	// Resources are the resources the preview registered that bind hooks,
	// in the order they were registered.
	Resources []*plan
	// Unbound are the hooks the program registered that no registration
	// of the preview binds.
	Unbound []string
}

// plan is what an update would run about one resource.
type plan struct {
	Run     string
	RunLine int
	URN     string
	Type    string
	Name    string
	// Component says the resource is a component (no provider step).
	Component bool
	// Step is the step an update would take ("create", "update",
	// "replace", "replace, deleting first", "same", "import", "fails"), ""
	// when the log cannot tell; Why is what says so, Line its log line,
	// At when the log gives it.
	Step, Why string
	Line      int
	At        time.Time
	// Hooks are the hooks the step runs, in order.
	Hooks []plannedHook
	// CannotTell is what the log cannot tell of the resource's step.
	CannotTell string
}

// plannedHook is one hook an update would call.
type plannedHook struct {
	Moment string // "before-create", ..., "on-error"
	Name   string // "" when the log cannot tell which
	Step   string // the step it follows from, and why
	// Conditional says the log cannot tell whether it runs: Step says on
	// what it depends.
	Conditional bool
	Note        string
}

// What the account says where a preview's log cannot tell.
const (
	cannotDeletes = "cannot tell: which resources the program no longer registers, and so what an update would delete " +
		"and which delete hooks it would run: their prior state is not in a preview's log"
	cannotComponent = "a component gets no provider step: an update creates it when it has no prior state, " +
		"updates it when its inputs differ from its prior state's, and else leaves it the same; " +
		"a preview's log holds neither its prior state nor its old inputs"
	cannotOldHooks = "cannot tell: the replaced resource's delete hooks are those its prior state binds, which a preview's log does not hold"
)

// registerLine reads a RegisterResource entry of the log: its request as it
// starts, its URN as it completes.
func (s *scanner) registerLine(n int, e *logLine, at time.Time) {
	key := string(e.Request)
	if e.Progress != "response_completed" {
		var req struct {
			Type                       string   `json:"type"`
			Name                       string   `json:"name"`
			Parent                     string   `json:"parent"`
			Custom                     bool     `json:"custom"`
			Remote                     bool     `json:"remote"`
			ImportID                   string   `json:"importId"`
			Hooks                      *binding `json:"hooks"`
			ReplaceOnChanges           []string `json:"replaceOnChanges"`
			DeleteBeforeReplace        bool     `json:"deleteBeforeReplace"`
			DeleteBeforeReplaceDefined bool     `json:"deleteBeforeReplaceDefined"`
		}
		if json.Unmarshal(e.Request, &req) != nil {
			return
		}
		reg := &resourceReg{
			Line: n, Type: req.Type, Name: req.Name, Parent: req.Parent, Custom: req.Custom, Remote: req.Remote,
			Import: req.ImportID, Hooks: req.Hooks, ReplaceOnChanges: req.ReplaceOnChanges,
		}
		if req.DeleteBeforeReplaceDefined || req.DeleteBeforeReplace {
			dbr := req.DeleteBeforeReplace
			reg.DeleteBeforeReplace = &dbr
		}
		s.d.Regs = append(s.d.Regs, reg)
		if e.Progress == "" { // the only entry, written as it completes
			s.registered(reg, e, at)
			return
		}
		s.regStarts[key] = append(s.regStarts[key], reg)
		return
	}
	if l := s.regStarts[key]; len(l) > 0 {
		if len(l) == 1 {
			delete(s.regStarts, key)
		} else {
			s.regStarts[key] = l[1:]
		}
		s.registered(l[0], e, at)
	}
}

// registered completes reg with what its answer says.
func (s *scanner) registered(reg *resourceReg, e *logLine, at time.Time) {
	var res struct {
		URN string `json:"urn"`
	}
	_ = json.Unmarshal(e.Response, &res)
	reg.URN, reg.At = res.URN, at
}

// hookLine reads a RegisterResourceHook or RegisterErrorHook entry, once
// per call: its start, or its only entry.
func (s *scanner) hookLine(n int, e *logLine) {
	if e.Progress == "response_completed" {
		return
	}
	var req struct {
		Name     string `json:"name"`
		OnDryRun bool   `json:"onDryRun"`
	}
	if json.Unmarshal(e.Request, &req) != nil || req.Name == "" {
		return
	}
	s.d.Hooks = append(s.d.Hooks, &hookReg{Line: n, Name: req.Name, OnDryRun: req.OnDryRun, Error: strings.HasSuffix(e.Method, "/RegisterErrorHook")})
}

// diffLine keeps what a completed Diff said about r.
func (s *scanner) diffLine(r *record, e *logLine) {
	var res struct {
		Changes             string   `json:"changes"`
		Replaces            []string `json:"replaces"`
		Diffs               []string `json:"diffs"`
		DeleteBeforeReplace bool     `json:"deleteBeforeReplace"`
		DetailedDiff        map[string]struct {
			Kind string `json:"kind"`
		} `json:"detailedDiff"`
	}
	if json.Unmarshal(e.Response, &res) != nil {
		return
	}
	a := &diffAnswer{Changes: res.Changes, Replaces: res.Replaces, Changed: res.Diffs, DBR: res.DeleteBeforeReplace}
	for _, p := range slices.Sorted(mapKeys(res.DetailedDiff)) {
		a.Changed = append(a.Changed, p)
		if strings.HasSuffix(res.DetailedDiff[p].Kind, "_REPLACE") {
			a.Replaces = append(a.Replaces, p)
		}
	}
	if a.Changes == "" || a.Changes == "DIFF_UNKNOWN" {
		a.Changes = ""
		var req struct {
			OldInputs     map[string]json.RawMessage `json:"oldInputs"`
			News          map[string]json.RawMessage `json:"news"`
			IgnoreChanges []string                   `json:"ignoreChanges"`
		}
		if json.Unmarshal(e.Request, &req) == nil {
			a.OldInputs, a.News, a.Ignore = req.OldInputs, req.News, req.IgnoreChanges
		}
	}
	if s.d.diffs == nil {
		s.d.diffs = map[*record]*diffAnswer{}
	}
	s.d.diffs[r] = a
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// planUpdates makes, for each preview of d, what an update would run
// (d.Plans), from its registrations, hook registrations, provider steps
// and the options trs (the resource transforms' answers) left resources
// with.
func (d *deployment) planUpdates(trs []transformSeen) {
	for _, run := range d.Runs {
		if run.Name != "preview" {
			continue
		}
		rp := &runPlan{Run: run.Name, RunLine: run.Line, Label: run.label()}
		hooks := map[string]*hookReg{}
		var order []*hookReg
		for _, h := range d.Hooks {
			if d.runOf(h.Line) == run && hooks[h.Name] == nil {
				hooks[h.Name] = h
				order = append(order, h)
			}
		}
		var mine []transformSeen
		for _, t := range trs {
			if d.runOf(t.Line) == run {
				mine = append(mine, t)
			}
		}
		checks, diffs := map[string]*record{}, map[string]*record{}
		for _, st := range d.Steps {
			if st.URN == "" || d.runOf(st.Line) != run {
				continue
			}
			switch {
			case st.Step == "Check" && checks[st.URN] == nil:
				checks[st.URN] = st
			case st.Step == "Diff" && diffs[st.URN] == nil:
				diffs[st.URN] = st
			}
		}
		bound, planned := map[string]bool{}, map[string]bool{}
		for _, reg := range d.Regs {
			if d.runOf(reg.Line) != run {
				continue
			}
			b, roc, dbr := reg.Hooks, reg.ReplaceOnChanges, reg.DeleteBeforeReplace
			if t := lastTransform(mine, reg); t != nil && t.Options != nil {
				b, roc, dbr = bindingOf(t.Options.GetHooks()), t.Options.GetReplaceOnChanges(), t.Options.DeleteBeforeReplace
			}
			for _, n := range b.names() {
				bound[n] = true
			}
			if len(b.names()) == 0 {
				continue
			}
			urn := reg.URN
			if urn == "" {
				urn = newURN(d.Stack, d.Project, reg.Parent, reg.Type, reg.Name)
			}
			if planned[urn] {
				continue // registered twice: the engine refuses the second
			}
			planned[urn] = true
			p := &plan{Run: run.Name, RunLine: run.Line, URN: urn, Type: reg.Type, Name: reg.Name, Component: !reg.Custom,
				Line: reg.Line, At: reg.At}
			p.decide(reg, b, roc, dbr, checks[urn], diffs[urn], d.diffs[diffs[urn]])
			for i := range p.Hooks {
				h := &p.Hooks[i]
				if reg := hooks[h.Name]; h.Name != "" && reg == nil {
					h.Note = joinNote(h.Note, "not registered in this run: the step would fail (hook \""+h.Name+"\" was not registered)")
				}
			}
			rp.Resources = append(rp.Resources, p)
		}
		for _, h := range order {
			if !bound[h.Name] {
				rp.Unbound = append(rp.Unbound, h.Name)
			}
		}
		d.Plans = append(d.Plans, rp)
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// lastTransform is the last resource transform the run called about reg,
// which left it its options; nil if none was.
func lastTransform(trs []transformSeen, reg *resourceReg) *transformSeen {
	var last *transformSeen
	for i := range trs {
		t := &trs[i]
		if t.Type != reg.Type || t.Name != reg.Name || (t.Parent != "" && reg.Parent != "" && t.Parent != reg.Parent) {
			continue
		}
		if last == nil || t.Seq > last.Seq {
			last = t
		}
	}
	return last
}

// newURN is the URN the engine gives a resource whose registration the log
// never answered: its parent's type qualifies its own, unless the parent is
// the stack.
func newURN(stack, project, parent, typ, name string) string {
	qualified := typ
	if parts := strings.Split(parent, "::"); len(parts) >= 4 && parts[2] != "pulumi:pulumi:Stack" {
		qualified = parts[2] + "$" + typ
	}
	return "urn:pulumi:" + stack + "::" + project + "::" + qualified + "::" + name
}

// decide sets the step an update would take about the resource of reg,
// and the hooks of binding b it runs, from its provider's Check and Diff
// in the preview (nil when there were none) and what Diff said.
func (p *plan) decide(reg *resourceReg, b *binding, roc []string, dbr *bool, check, diff *record, said *diffAnswer) {
	at := func(r *record) {
		p.Line, p.At = r.Line, r.Start.Add(r.Duration)
	}
	switch {
	case reg.Remote:
		p.CannotTell = "a remote component: its hooks go to the provider's Construct, and run only where the provider binds them"
		return
	case !reg.Custom:
		p.CannotTell = cannotComponent
		p.hooks("create", "if it has no prior state", true, b.BeforeCreate, nil, "")
		p.hooks("create", "if it has no prior state", true, nil, b.AfterCreate, "at its RegisterResourceOutputs")
		p.hooks("update", "if its inputs changed", true, b.BeforeUpdate, nil, "")
		p.hooks("update", "if its inputs changed", true, nil, b.AfterUpdate, "at its RegisterResourceOutputs")
		return
	case check == nil:
		p.CannotTell = "the preview made no provider Check of it (it stopped before its step, or the resource is a provider)"
		return
	case check.Pending:
		at(check)
		p.CannotTell = "the provider's Check was never answered"
		return
	case check.Outcome != "ok":
		at(check)
		p.Step, p.Why = "fails", "the provider's Check "+check.Outcome+": the step fails before any hook"
		return
	case diff == nil && reg.Import != "":
		at(check)
		p.Step, p.Why = "import", "an import runs no hook"
		return
	case diff == nil:
		at(check)
		p.Step, p.Why = "create", "no prior state"
		p.hooks("create", "no prior state", false, b.BeforeCreate, b.AfterCreate, "")
		p.onError("Create", b)
		return
	}
	at(diff)
	switch {
	case diff.Pending:
		p.CannotTell = "the provider's Diff was never answered"
		return
	case diff.Outcome == "failed":
		p.Step, p.Why = "fails", "the provider's Diff failed: the step fails before any hook"
		return
	case said == nil:
		p.CannotTell = "the provider's Diff answer does not read"
		return
	}
	changed, replaces := said.Changed, said.Replaces
	switch said.Changes {
	case "DIFF_NONE":
		p.Step, p.Why = "same", "the provider's Diff found no changes"
		return
	case "":
		keys, ok := inputsChanged(said)
		if !ok {
			p.CannotTell = "the provider's Diff does not say whether anything changed, and its old inputs cannot be compared with the new"
			return
		}
		if len(keys) == 0 {
			p.Step, p.Why = "same", "the provider's Diff does not say; the inputs are the same"
			return
		}
		changed = keys
	}
	why := "the provider's Diff found changes"
	if said.Changes == "" {
		why = "the provider's Diff does not say; the inputs differ (" + strings.Join(changed, ", ") + ")"
	}
	byOption := onChanges(roc, changed)
	if len(replaces) == 0 && len(byOption) == 0 {
		p.Step, p.Why = "update", why
		p.hooks("update", why, false, b.BeforeUpdate, b.AfterUpdate, "")
		p.onError("Update", b)
		return
	}
	var whys []string
	if len(replaces) > 0 {
		whys = append(whys, "the provider's Diff replaces "+strings.Join(slices.Compact(slices.Sorted(slices.Values(replaces))), ", "))
	}
	if len(byOption) > 0 {
		whys = append(whys, "its replaceOnChanges covers "+strings.Join(byOption, ", "))
	}
	why = strings.Join(whys, "; ")
	first := said.DBR
	if dbr != nil {
		first = *dbr
	}
	p.Step, p.Why = "replace", why
	if first {
		p.Step = "replace, deleting first"
		p.oldDeletes(b)
	}
	p.hooks(p.Step, why+"; the new resource", false, b.BeforeCreate, b.AfterCreate, "")
	p.onError("Create", b)
	if !first {
		p.oldDeletes(b)
	}
}

// hooks adds the hooks of one step's before and after moments: those of
// the create of a create or replace, of the update of an update.
func (p *plan) hooks(step, why string, conditional bool, before, after []string, note string) {
	moment := "create"
	if step == "update" {
		moment = "update"
	}
	for _, n := range before {
		p.Hooks = append(p.Hooks, plannedHook{Moment: "before-" + moment, Name: n, Step: step + ": " + why, Conditional: conditional, Note: note})
	}
	for _, n := range after {
		p.Hooks = append(p.Hooks, plannedHook{Moment: "after-" + moment, Name: n, Step: step + ": " + why, Conditional: conditional, Note: note})
	}
}

// onError adds the error hooks, which run only if the provider's op fails.
func (p *plan) onError(op string, b *binding) {
	for _, n := range b.OnError {
		p.Hooks = append(p.Hooks, plannedHook{Moment: "on-error", Name: n, Step: p.Step + ": if the provider's " + op + " fails", Conditional: true})
	}
}

// oldDeletes adds the replaced resource's delete hooks, which the log
// cannot name.
func (p *plan) oldDeletes(b *binding) {
	binds := "this registration binds none"
	if n := len(b.BeforeDelete) + len(b.AfterDelete); n > 0 {
		var q []string
		for _, s := range slices.Concat(b.BeforeDelete, b.AfterDelete) {
			q = append(q, strconv.Quote(s))
		}
		binds = "this registration binds " + strings.Join(q, ", ")
	}
	for _, m := range []string{"before-delete", "after-delete"} {
		p.Hooks = append(p.Hooks, plannedHook{Moment: m, Step: p.Step + ": the replaced resource", Note: cannotOldHooks + " (" + binds + ")"})
	}
}

// inputsChanged compares the old inputs of a Diff that does not say
// whether anything changed with the new, as the engine then does, less the
// properties it ignores; ok is false when they cannot be compared (no old
// inputs, or an ignored path below the top level).
func inputsChanged(a *diffAnswer) (keys []string, ok bool) {
	if a.OldInputs == nil {
		return nil, false
	}
	ignored := map[string]bool{}
	for _, p := range a.Ignore {
		if strings.ContainsAny(p, ".[") {
			return nil, false
		}
		ignored[p] = true
	}
	seen := map[string]bool{}
	for _, m := range []map[string]json.RawMessage{a.OldInputs, a.News} {
		for k := range m {
			if seen[k] || ignored[k] {
				continue
			}
			seen[k] = true
			if !sameJSON(a.OldInputs[k], a.News[k]) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys, true
}

func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// onChanges is the changed properties a replaceOnChanges path covers.
func onChanges(roc, changed []string) []string {
	var out []string
	for _, c := range changed {
		for _, r := range roc {
			if r == "*" || r == c || strings.HasPrefix(c, r+".") || strings.HasPrefix(c, r+"[") ||
				strings.HasPrefix(r, c+".") || strings.HasPrefix(r, c+"[") {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// planOf is the plan of the run r, nil if it has none.
func (d *deployment) planOf(r *progRun) *runPlan {
	if d == nil || r == nil {
		return nil
	}
	for _, rp := range d.Plans {
		if rp.RunLine == r.Line {
			return rp
		}
	}
	return nil
}

// stepLine says the step an update would take about p, or what the log
// cannot tell.
func (p *plan) stepLine() string {
	if p.Step == "" {
		return "cannot tell: " + p.CannotTell
	}
	s := p.Step + ": " + p.Why
	if p.Line != 0 {
		s += " (log line " + strconv.Itoa(p.Line) + ")"
	}
	if len(p.Hooks) == 0 {
		s += ": no hook"
	}
	return s
}

// text is the hook as the account prints it: moment "name" (step), and
// what else it says.
func (h plannedHook) text(w int) string {
	name := "?"
	if h.Name != "" {
		name = strconv.Quote(h.Name)
	}
	s := pad(h.Moment, w, false) + "  " + oneLine(name) + "  (" + oneLine(h.Step) + ")"
	if h.Note != "" {
		s += "  " + oneLine(h.Note)
	}
	return s
}

// unboundText says what the hooks bound to no resource of a preview do.
func unboundText(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = oneLine(strconv.Quote(n))
	}
	return strings.Join(q, ", ") + ": an update runs them only for deletes whose prior state binds them, which the log cannot tell"
}

// lines are the account of rp, as the text account prints it under its run.
func (rp *runPlan) lines() []string {
	out := []string{"An update would run (told by this preview's registrations and its provider's Check and Diff):"}
	for _, p := range rp.Resources {
		out = append(out, "  "+oneLine(p.Type)+" "+oneLine(strconv.Quote(p.Name)), "    "+oneLine(p.URN))
		if p.Step == "" || len(p.Hooks) == 0 {
			out = append(out, "    "+oneLine(p.stepLine()))
		} else {
			out = append(out, "    "+oneLine(p.Step)+" (log line "+strconv.Itoa(p.Line)+")")
		}
		w := 0
		for _, h := range p.Hooks {
			w = max(w, width(h.Moment))
		}
		for _, h := range p.Hooks {
			out = append(out, "      "+h.text(w))
		}
	}
	if len(rp.Unbound) > 0 {
		out = append(out, "  registered, bound to no resource of this preview: "+unboundText(rp.Unbound))
	}
	return append(out, "  deletes: "+cannotDeletes)
}
