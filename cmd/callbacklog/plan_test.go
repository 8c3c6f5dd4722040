package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// planned is one resource of a preview's log, as planLog writes it.
type planned struct {
	name   string
	custom bool
	hooks  map[string]any // the registration's binding; nil for none
	extra  map[string]any // more of the registration's request
	diff   map[string]any // the provider's Diff answer; nil for no Diff (no prior state)
	diffRq map[string]any // more of the Diff's request
}

const planStack = "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev"

func planURN(typ, name string) string { return "urn:pulumi:dev::demo::" + typ + "::" + name }

// planResources are the resources of planLog: a step of each kind.
var planResources = []planned{
	{name: "fresh", custom: true, hooks: map[string]any{"beforeCreate": []string{"log-create"}, "afterCreate": []string{"log-create", "notify"}}},
	{name: "changing", custom: true, hooks: map[string]any{"beforeCreate": []string{"log-create"}, "beforeUpdate": []string{"log-update"},
		"afterUpdate": []string{"log-update"}, "onError": []string{"retry"}},
		diff: map[string]any{"changes": "DIFF_SOME", "diffs": []string{"length"}}},
	{name: "renamed", custom: true, hooks: map[string]any{"beforeCreate": []string{"log-create"}, "beforeDelete": []string{"log-delete"}},
		diff: map[string]any{"changes": "DIFF_SOME", "diffs": []string{"keepers"}, "replaces": []string{"keepers"}}},
	{name: "swapped", custom: true, hooks: map[string]any{"afterCreate": []string{"log-create"}},
		extra: map[string]any{"deleteBeforeReplace": true, "deleteBeforeReplaceDefined": true, "replaceOnChanges": []string{"prefix"}},
		diff:  map[string]any{"changes": "DIFF_SOME", "diffs": []string{"prefix"}}},
	{name: "steady", custom: true, hooks: map[string]any{"beforeUpdate": []string{"log-update"}},
		diff: map[string]any{"changes": "DIFF_NONE"}},
	{name: "unsaid", custom: true, hooks: map[string]any{"beforeUpdate": []string{"log-update"}},
		diff: map[string]any{}, diffRq: map[string]any{"oldInputs": map[string]any{"length": 2}, "news": map[string]any{"length": 3}}},
	{name: "ghost", custom: true, hooks: map[string]any{"beforeCreate": []string{"never-registered"}}},
	{name: "box", hooks: map[string]any{"beforeCreate": []string{"log-create"}, "afterCreate": []string{"log-create"}}},
	{name: "plain", custom: true},    // binds no hook: not in the account
	{name: "attached", custom: true}, // bound by a transform
}

const (
	petType = "random:index/randomPet:RandomPet"
	boxType = "demo:index:Box"
)

// planLog is the log of `pulumi preview` then `pulumi up --skip-preview`
// of a program that registers the hooks log-create, notify, log-update,
// log-delete and orphan (bound to nothing) and the error hook retry, and
// the resources of planResources; a stack transform binds log-create to
// "attached". The update's own account has nothing to plan.
func planLog(tb testing.TB) string {
	l := newLogWriter(tb)
	l.call("/pulumirpc.LanguageRuntime/GetPluginInfo", langMeta, map[string]any{}, map[string]any{"version": "3.274.1"}, nil, time.Millisecond)
	for _, dryRun := range []bool{true, false} {
		run := map[string]any{"project": "demo", "stack": "dev", "dryRun": dryRun}
		l.start("/pulumirpc.LanguageRuntime/Run", langMeta, run)
		for _, h := range []string{"log-create", "notify", "log-update", "log-delete", "orphan"} {
			l.call("/pulumirpc.ResourceMonitor/RegisterResourceHook", monitorMeta,
				map[string]any{"name": h, "callback": map[string]any{"target": "127.0.0.1:1", "token": "tok-" + h}}, map[string]any{}, nil, 0)
		}
		l.call("/pulumirpc.ResourceMonitor/RegisterErrorHook", monitorMeta,
			map[string]any{"name": "retry", "callback": map[string]any{"target": "127.0.0.1:1", "token": "tok-retry"}}, map[string]any{}, nil, 0)
		l.call("/pulumirpc.ResourceMonitor/RegisterStackTransform", monitorMeta,
			map[string]any{"target": "127.0.0.1:1", "token": "tok-attach"}, map[string]any{}, nil, 0)
		for _, r := range planResources {
			typ := petType
			if !r.custom {
				typ = boxType
			}
			urn := planURN(typ, r.name)
			req := map[string]any{"type": typ, "name": r.name, "custom": r.custom, "parent": planStack, "object": map[string]any{"length": 3}}
			if r.hooks != nil {
				req["hooks"] = r.hooks
			}
			for k, v := range r.extra {
				req[k] = v
			}
			l.start("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, req)
			if r.name == "attached" {
				treq := &pulumirpc.TransformRequest{Type: typ, Name: r.name, Custom: true, Parent: planStack,
					Options: &pulumirpc.TransformResourceOptions{}}
				tres := &pulumirpc.TransformResponse{Options: &pulumirpc.TransformResourceOptions{
					Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"log-create"}}}}
				l.call("/pulumirpc.Callbacks/Invoke", callbackMeta, map[string]any{"token": "tok-attach", "request": payload(tb, treq)},
					map[string]any{"response": payload(tb, tres)}, nil, time.Millisecond)
			}
			if r.custom {
				check := map[string]any{"urn": urn, "news": map[string]any{"length": 3}, "name": r.name, "type": typ}
				l.call("/pulumirpc.ResourceProvider/Check", providerMeta, check, map[string]any{"inputs": map[string]any{"length": 3}}, nil, time.Millisecond)
				if r.diff != nil {
					dreq := map[string]any{"urn": urn, "id": r.name + "-id", "news": map[string]any{"length": 3}, "name": r.name, "type": typ}
					for k, v := range r.diffRq {
						dreq[k] = v
					}
					l.call("/pulumirpc.ResourceProvider/Diff", providerMeta, dreq, r.diff, nil, time.Millisecond)
				}
			}
			l.call("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, req, map[string]any{"urn": urn}, nil, 0)
		}
		l.entry("/pulumirpc.LanguageRuntime/Run", langMeta, run, map[string]any{}, nil, "response_completed", 20*time.Millisecond)
	}
	return l.b.String()
}

// hookLines are a plan's hooks as the account prints them.
func hookLines(p *plan) []string {
	var out []string
	for _, h := range p.Hooks {
		out = append(out, h.text(0))
	}
	return out
}

func TestWhatAnUpdateWouldRun(t *testing.T) {
	log := planLog(t)
	_, problems, d := readLog(strings.NewReader(log), false, false)
	if len(problems) != 0 {
		t.Fatalf("unreadable lines: %v", problems)
	}
	if len(d.Runs) != 2 || len(d.Plans) != 1 || d.Plans[0].RunLine != d.Runs[0].Line {
		t.Fatalf("runs %v, plans %v: want one plan, of the preview", d.Runs, d.Plans)
	}
	rp := d.Plans[0]
	want := map[string]struct {
		step  string
		hooks []string
	}{
		"fresh": {"create: no prior state (log line ", []string{
			`before-create  "log-create"  (create: no prior state)`,
			`after-create  "log-create"  (create: no prior state)`,
			`after-create  "notify"  (create: no prior state)`}},
		"changing": {"update", []string{
			`before-update  "log-update"  (update: the provider's Diff found changes)`,
			`after-update  "log-update"  (update: the provider's Diff found changes)`,
			`on-error  "retry"  (update: if the provider's Update fails)`}},
		"renamed": {"replace", []string{
			`before-create  "log-create"  (replace: the provider's Diff replaces keepers; the new resource)`,
			`before-delete  ?  (replace: the replaced resource)  ` + cannotOldHooks + ` (this registration binds "log-delete")`,
			`after-delete  ?  (replace: the replaced resource)  ` + cannotOldHooks + ` (this registration binds "log-delete")`}},
		"swapped": {"replace, deleting first", []string{
			`before-delete  ?  (replace, deleting first: the replaced resource)  ` + cannotOldHooks + ` (this registration binds none)`,
			`after-delete  ?  (replace, deleting first: the replaced resource)  ` + cannotOldHooks + ` (this registration binds none)`,
			`after-create  "log-create"  (replace, deleting first: its replaceOnChanges covers prefix; the new resource)`}},
		"steady": {"same: the provider's Diff found no changes (log line ", nil},
		"unsaid": {"update", []string{`before-update  "log-update"  (update: the provider's Diff does not say; the inputs differ (length))`}},
		"ghost":  {"create", []string{`before-create  "never-registered"  (create: no prior state)  not registered in this run: the step would fail (hook "never-registered" was not registered)`}},
		"box": {"cannot tell: " + cannotComponent, []string{
			`before-create  "log-create"  (create: if it has no prior state)`,
			`after-create  "log-create"  (create: if it has no prior state)  at its RegisterResourceOutputs`}},
		"attached": {"create", []string{`before-create  "log-create"  (create: no prior state)`}},
	}
	var names []string
	for _, p := range rp.Resources {
		names = append(names, p.Name)
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("%s is in the plan: it binds no hook", p.Name)
			continue
		}
		if got := p.stepLine(); !strings.HasPrefix(got, w.step) && p.Step != w.step {
			t.Errorf("%s: step %q (%s), want %q", p.Name, p.Step, got, w.step)
		}
		equalLists(t, p.Name+"'s hooks", hookLines(p), w.hooks)
		if p.URN != planURN(map[bool]string{true: petType, false: boxType}[!p.Component], p.Name) {
			t.Errorf("%s: URN %q", p.Name, p.URN)
		}
	}
	equalLists(t, "the resources that bind hooks", names,
		[]string{"fresh", "changing", "renamed", "swapped", "steady", "unsaid", "ghost", "box", "attached"})
	equalLists(t, "the hooks bound to nothing", rp.Unbound, []string{"orphan"})

	// The text account: the preview's section, after its calls, before
	// the update; the update has none.
	file := writeFile(t, "preview-up.jsonl", []byte(log))
	text := showText(t, file)
	head := strings.Index(text, "An update would run")
	update := strings.Index(text, "== update (log line ")
	if head < 0 || update < head || strings.Count(text, "An update would run") != 1 {
		t.Fatalf("the account does not say once, in the preview, what an update would run:\n%s", text)
	}
	section := text[head:update]
	for _, w := range []string{
		"  random:index/randomPet:RandomPet \"fresh\"\n    " + planURN(petType, "fresh") + "\n    create (log line ",
		"      before-create  \"log-create\"  (create: no prior state)\n",
		"    same: the provider's Diff found no changes (log line ",
		"): no hook\n",
		"    cannot tell: a component gets no provider step",
		"  registered, bound to no resource of this preview: \"orphan\": an update runs them only for deletes",
		"  deletes: cannot tell: which resources the program no longer registers",
	} {
		if !strings.Contains(section, w) {
			t.Errorf("the preview's section does not say %q:\n%s", w, section)
		}
	}
	if strings.Contains(section, `"plain"`) {
		t.Errorf("the section lists a resource that binds no hook:\n%s", section)
	}

	// -json: a line per resource, and one for the preview.
	code, js, stderr := callbacklog("", "show", "-json", file)
	if code != exitOK {
		t.Fatalf("-json: exit %d: %s", code, stderr)
	}
	var lines []jsonWouldRun
	for l := range strings.Lines(js) {
		var v struct {
			WouldRun *jsonWouldRun `json:"wouldRun"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		if v.WouldRun != nil {
			lines = append(lines, *v.WouldRun)
		}
	}
	if len(lines) != len(rp.Resources)+1 {
		t.Fatalf("-json has %d wouldRun lines, want %d:\n%s", len(lines), len(rp.Resources)+1, js)
	}
	if l := lines[1]; l.Run != "preview" || l.Resource == nil || l.Resource.Name != "changing" || l.Step != "update" ||
		len(l.Hooks) != 3 || l.Hooks[0].Moment != "before-update" || l.Hooks[0].Name != "log-update" || !l.Hooks[2].Conditional {
		t.Errorf("-json's line of changing: %+v", l)
	}
	if l := lines[len(lines)-1]; l.Resource != nil || len(l.Unbound) != 1 || l.Unbound[0] != "orphan" || !strings.HasPrefix(l.Deletes, "cannot tell: ") {
		t.Errorf("-json's line of the preview: %+v", l)
	}

	// The trace: an instant event per resource, on its lane, in the
	// preview's process.
	tf := readTrace(t, file)
	lanes := map[[2]int]string{}
	for _, e := range tf.TraceEvents {
		if e.Name == "thread_name" {
			lanes[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
		}
	}
	n := 0
	for _, e := range tf.TraceEvents {
		if e.Cat != "would run" || e.Args["urn"] == nil {
			continue
		}
		n++
		if e.Pid != 2 || e.Ph != "i" || !strings.HasSuffix(lanes[[2]int{e.Pid, e.Tid}], `"`+e.Args["urn"].(string)[strings.LastIndex(e.Args["urn"].(string), "::")+2:]+`"`) {
			t.Errorf("event %s (%v) is not on its resource's lane in the preview (%q)", e.Name, e.Args, lanes[[2]int{e.Pid, e.Tid}])
		}
	}
	if n != len(rp.Resources) {
		t.Errorf("the trace has %d would-run events, want %d", n, len(rp.Resources))
	}
}

// TestWhatAnUpdateWouldRunFiltered: the filters keep of the plan what they
// keep of the rest.
func TestWhatAnUpdateWouldRunFiltered(t *testing.T) {
	file := writeFile(t, "preview-up.jsonl", []byte(planLog(t)))
	for _, c := range []struct {
		args []string
		want []string // the resources whose plan is shown
	}{
		{[]string{"-resource", "fresh"}, []string{"fresh"}},
		{[]string{"-resource", "*Box*"}, []string{"box"}},
		{[]string{"-run", "preview"}, []string{"fresh", "changing", "renamed", "swapped", "steady", "unsaid", "ghost", "box", "attached"}},
		{[]string{"-run", "update"}, nil},
		{[]string{"-kind", "resource-hook"}, []string{"fresh", "changing", "renamed", "swapped", "steady", "unsaid", "ghost", "box", "attached"}},
		{[]string{"-kind", "provider-step"}, nil},
		{[]string{"-outcome", "ok"}, nil},
	} {
		code, js, stderr := callbacklog("", append(append([]string{"show", "-json"}, c.args...), file)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		var got []string
		orphan := false
		for l := range strings.Lines(js) {
			var v struct {
				WouldRun *jsonWouldRun `json:"wouldRun"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatal(err)
			}
			switch w := v.WouldRun; {
			case w == nil:
			case w.Resource != nil:
				got = append(got, w.Resource.Name)
			case len(w.Unbound) > 0:
				orphan = true
			}
		}
		equalLists(t, strings.Join(c.args, " "), got, c.want)
		if wantOrphan := len(c.want) > 1; orphan != wantOrphan {
			t.Errorf("%v: the hook bound to nothing is listed: %v, want %v", c.args, orphan, wantOrphan)
		}
	}
}
