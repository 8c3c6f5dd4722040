package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/langhost/callbacks/integration/clitest"
)

// TestWhatARealPreviewSaysAnUpdateWouldRun runs, under the real CLI, `pulumi
// up` of a program whose resources bind hooks, then, with its
// configuration changed, `pulumi preview` and `pulumi up`, each logging
// gRPC; and checks that what the preview's account says an update would
// run, resource by resource, is what the update's log shows it called.
func TestWhatARealPreviewSaysAnUpdateWouldRun(t *testing.T) {
	t.Parallel()
	clitest.RequireCLI(t)
	const name = "planprogram"
	dir := t.TempDir()
	previewLog, upLog := filepath.Join(dir, "preview.log"), filepath.Join(dir, "up.log")
	s := clitest.NewStack(t, project(t, name, "./testdata/planprogram", ""))
	s.Up().MustSucceed(t)
	s.SetConfig(name+":version", "2")
	s.SetProject(project(t, name, "./testdata/planprogram", previewLog))
	s.Preview().MustSucceed(t)
	s.SetProject(project(t, name, "./testdata/planprogram", upLog))
	s.Run("up", "--yes", "--non-interactive").MustSucceed(t) // its own preview, then the update
	keep(t, upLog)

	d := readDeployment(t, previewLog)
	if len(d.Plans) != 1 || len(d.Runs) != 1 || d.Runs[0].Name != "preview" {
		t.Fatalf("the preview's log has runs %v and plans %v: want one preview and its plan", d.Runs, d.Plans)
	}
	rp := d.Plans[0]
	// The update's own preview says the same.
	ud := readDeployment(t, upLog)
	if len(ud.Plans) != 1 || len(ud.Runs) != 2 || ud.Runs[0].Name != "preview" || ud.Runs[1].Name != "update" {
		t.Fatalf("the update's log has runs %v and plans %v: want a preview and its plan, then the update", ud.Runs, ud.Plans)
	}
	equalLists(t, "what the update's own preview says an update would run", planText(ud.Plans[0]), planText(rp))

	// What the update called, by resource, in order.
	called := map[string][]string{}
	for _, r := range readFile(t, upLog, false) {
		if r.Kind == "resource hook" && r.Run == "update" {
			called[r.URN] = append(called[r.URN], r.HookName)
		}
	}
	steps := map[string]string{}
	for _, p := range rp.Resources {
		steps[p.Name] = p.Step
		got := called[p.URN]
		delete(called, p.URN)
		if p.Component {
			// The log cannot tell the component's step: what the update
			// called is one of the steps the account names, or none.
			ok := len(got) == 0
			for _, step := range []string{"create", "update"} {
				var names []string
				for _, h := range p.Hooks {
					if h.Conditional && strings.HasPrefix(h.Step, step+":") {
						names = append(names, h.Name)
					}
				}
				ok = ok || slices.Equal(got, names)
			}
			if !ok || p.Step != "" {
				t.Errorf("component %s: the update called %v; the account says %q with %v", p.Name, got, p.stepLine(), hookLines(p))
			}
			continue
		}
		if !matches(p.Hooks, got) {
			t.Errorf("%s (%s): the update called %v; the account says it would call\n  %s", p.Name, p.stepLine(), got,
				strings.Join(hookLines(p), "\n  "))
		}
	}
	want := map[string]string{"changing": "update", "steady": "same", "renamed": "replace", "fresh": "create", "box": ""}
	for n, step := range want {
		if got, ok := steps[n]; !ok || got != step {
			t.Errorf("%s: step %q (in the account: %v), want %q", n, got, ok, step)
		}
	}
	// What the account cannot tell: the update deleted "dropped", which the
	// preview's log does not name, running its delete hook.
	var dropped []string
	for urn, names := range called {
		if !strings.HasSuffix(urn, "::dropped") {
			t.Errorf("the update called hooks %v about %s, which the account does not name", names, urn)
		}
		dropped = names
	}
	equalLists(t, "the hooks the update called for dropped, which the account cannot tell", dropped, []string{"log-delete"})
	equalLists(t, "the hooks bound to nothing", rp.Unbound, []string{"orphan"})
	text := showText(t, previewLog)
	for _, w := range []string{"An update would run", "  deletes: cannot tell: ", `"orphan"`} {
		if !strings.Contains(text, w) {
			t.Errorf("the preview's account does not say %q:\n%s", w, text)
		}
	}
}

// matches reports whether the hooks an update called, in order, are those
// the account says it would: each hook it names, in its place, and any
// hooks at all where it cannot tell which (a replaced resource's delete
// hooks, from its prior state); the hooks that run only on a failure (on
// error) are not called in an update that does not fail.
func matches(plan []plannedHook, called []string) bool {
	var want []plannedHook
	for _, h := range plan {
		if h.Moment != "on-error" {
			want = append(want, h)
		}
	}
	var match func(w []plannedHook, c []string) bool
	match = func(w []plannedHook, c []string) bool {
		switch {
		case len(w) == 0:
			return len(c) == 0
		case w[0].Name == "": // any hooks, or none
			for i := 0; i <= len(c); i++ {
				if match(w[1:], c[i:]) {
					return true
				}
			}
			return false
		case len(c) == 0 || c[0] != w[0].Name || w[0].Conditional:
			return false
		}
		return match(w[1:], c[1:])
	}
	return match(want, called)
}

// planText is what the account says of rp, without log lines: per
// resource, its name, its step and its hooks, sorted by name (the program
// registers its resources concurrently, in any order).
func planText(rp *runPlan) []string {
	var out []string
	for _, p := range rp.Resources {
		out = append(out, p.Name+": "+p.Step+": "+p.Why+"; "+p.CannotTell+"\n    "+strings.Join(hookLines(p), "\n    "))
	}
	slices.Sort(out)
	return out
}
