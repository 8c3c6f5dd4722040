package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/langhost/callbacks/integration/clitest"
)

// TestRealPreviewAndUpdate runs `pulumi up --yes` with its preview, of a
// program whose error hook retries the provider's throttled create, and
// checks the account of the deployment around the calls: a preview and an
// update, each call in one of them, who ran it, and in the update the
// failed Create, the error hook's retry after it, and the Create that
// succeeded.
func TestRealPreviewAndUpdate(t *testing.T) {
	t.Parallel()
	clitest.RequireCLI(t)
	log := filepath.Join(t.TempDir(), "preview-up.log")
	s := clitest.NewStack(t, project(t, "previewup", programs+"errorhook", log, throttle))
	s.Run("up", "--yes", "--non-interactive").MustSucceed(t)

	d := readDeployment(t, log)
	if len(d.Runs) != 2 || d.Runs[0].Name != "preview" || d.Runs[1].Name != "update" {
		t.Fatalf("the runs are %+v, want a preview then an update", d.Runs)
	}
	for _, r := range d.Runs {
		if r.result() != "succeeded" || r.Duration <= 0 || r.Start.IsZero() {
			t.Errorf("the %s: %s, %v from %v; want it to have succeeded, with a start and a length", r.Name, r.result(), r.Duration, r.Start)
		}
	}
	if d.Project != "previewup" || d.Stack == "" || d.CLI == "" || !strings.HasPrefix(d.SDK, "v3.") {
		t.Errorf("the header: project %q, stack %q, CLI %q, SDK %q", d.Project, d.Stack, d.CLI, d.SDK)
	}
	recs := readFile(t, log, false)
	for _, r := range append(append([]*record{}, recs...), d.Steps...) {
		if r.Run == "" || r.RunLine == 0 || r.Pending {
			t.Errorf("call %s (line %d) has run %q, pending %v", shape(r), r.Line, r.Run, r.Pending)
		}
	}
	var updateSteps []string
	for _, r := range entries(recs, d) {
		if r.Run == "update" && r.Name == "token" && (r.Step == "Create" || r.Kind == "error hook") {
			updateSteps = append(updateSteps, r.Registration+" "+r.Outcome)
		}
	}
	equalLists(t, "the update's creates and error hook calls of token", updateSteps,
		[]string{"Create (random) failed", "retry-throttled retry", "Create (random) ok"})

	text := showText(t, log)
	preview, update := strings.Index(text, "== preview (log line "), strings.Index(text, "== update (log line ")
	if preview < 0 || update < preview {
		t.Errorf("the account does not show the preview, then the update:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^  time split    .* in callbacks, .* in \d+ provider steps, .* the rest of the runs' `).MatchString(text) {
		t.Errorf("the account does not split the time:\n%s", text)
	}
}
