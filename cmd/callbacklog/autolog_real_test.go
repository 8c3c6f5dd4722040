package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/langhost/callbacks/cmd/callbacklog/testdata/sdkprogram/secret"
	"github.com/langhost/callbacks/integration/clitest"
	"github.com/langhost/callbacks/internal/calllog"
)

// These tests run a deployment with no debugging flag at all, decrypt the
// automatic log the CLI wrote for it with `pulumi logs decrypt --latest`,
// in the stack's environment, and read that. They pass under 3.274.1 and
// 3.260.0 (the module's records, changes and payloads included, read the
// same under both); where the engines' logs differ (3.260.0 also logs every property
// it marshals), the account does not.

// decryptedUp runs `pulumi up` of the program pkg and returns the path of
// its automatic log, decrypted, and the stack. It scrubs the log too, and
// fails t if a secret the log marks survives scrub or the scrubbed log's
// account differs.
func decryptedUp(t *testing.T, name, pkg string, env ...string) (string, *clitest.Stack) {
	t.Helper()
	return decryptedUpAfter(t, name, pkg, nil, env...)
}

// decryptedUpAfter is decryptedUp with setup run on the stack before the
// update.
func decryptedUpAfter(t *testing.T, name, pkg string, setup func(*clitest.Stack), env ...string) (string, *clitest.Stack) {
	t.Helper()
	clitest.RequireCLI(t)
	return decryptedUpOf(t, project(t, name, pkg, "", env...), setup)
}

// decryptedUpOf is decryptedUpAfter of the project p.
func decryptedUpOf(t *testing.T, p clitest.Project, setup func(*clitest.Stack)) (string, *clitest.Stack) {
	t.Helper()
	name := p.Name
	s := clitest.NewStack(t, p)
	if setup != nil {
		setup(s)
	}
	s.Up().MustSucceed(t)
	r := s.Run("logs", "decrypt", "--latest").MustSucceed(t)
	if !strings.Contains(r.Stderr, "organization+"+name+"+dev-") {
		t.Fatalf("pulumi logs decrypt --latest decrypted another log than the update's:\n%s", r.Stderr)
	}
	log := filepath.Join(t.TempDir(), name+"-automatic.jsonl")
	if err := os.WriteFile(log, []byte(r.Stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	keep(t, log)
	checkAutoScrub(t, log, secret.Value)
	return log, s
}

// readAuto reads a decrypted automatic log as the command does, failing t
// on any line it could not read: a real log has none.
func readAuto(t *testing.T, path string, secrets bool) []*record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, problems, _ := readAutoLog(f, secrets)
	for _, p := range problems {
		t.Errorf("%s line %d: %s", filepath.Base(path), p.Line, p.Reason)
	}
	return recs
}

func TestAutoLogOfARealErrorHookRetry(t *testing.T) {
	t.Parallel()
	log, _ := decryptedUp(t, "errorhook", programs+"errorhook", throttle)
	recs := resources(readAuto(t, log, false))
	equalLists(t, "the calls", shapes(recs), []string{
		"token: resource transform transforms.Attach changed",
		"token: error hook retry-throttled retry",
	})
	if len(recs) == 2 {
		hook := recs[1]
		if hook.Op != "create" || hook.Attempt != 1 || !strings.Contains(hook.Message, "throttled") {
			t.Errorf("the error hook's call: operation %q, attempt %d, error seen %q; want create, 1, the provider's throttling", hook.Op, hook.Attempt, hook.Message)
		}
		if !slices.Contains(changePaths(recs[0]), "options.hooks") {
			t.Errorf("the transform that attached the error hook changed %v, want the hooks option", changePaths(recs[0]))
		}
	}
	text := showText(t, log)
	for _, want := range []string{
		"source        Pulumi's automatic log (pulumi logs decrypt)",
		"cannot tell",
		"random:index/randomString:RandomString \"token\"",
		"retry-throttled    retry",
		"create failed (attempt 1): throttled",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the account has no %q:\n%s", want, text)
		}
	}
	if js := showText(t, "-json", log); !strings.Contains(js, `"source":"automatic"`) {
		t.Errorf("the JSON account does not say it was read from the automatic log:\n%s", js)
	}
}

func TestAutoLogOfRealHooks(t *testing.T) {
	t.Parallel()
	log, _ := decryptedUp(t, "hooks", programs+"hooks")
	recs := resources(readAuto(t, log, false))
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource transform transforms.Attach changed",
		"pet: resource hook before-create ok",
		"pet: resource hook after-create ok",
	})
	// Each call once, from the module's records: the engine's own lines
	// about them are not counted again.
	var hooks []string
	for _, r := range recs {
		if r.Kind == "resource hook" {
			hooks = append(hooks, r.Registration)
		}
	}
	equalLists(t, "the hook calls", hooks, []string{"before-create", "after-create"})
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, info := readAutoLog(f, false)
	if info.engineCalls != 0 || info.moduleCalls < 3 {
		t.Errorf("%d calls from the module's records, %d from the engine's lines; want every call from the records", info.moduleCalls, info.engineCalls)
	}
	if len(recs) == 3 {
		if !slices.Contains(changePaths(recs[0]), "options.hooks") {
			t.Errorf("the transform that attached the hooks changed %v, want the hooks option", changePaths(recs[0]))
		}
		for _, r := range recs[1:] {
			if r.NoDuration || r.Duration <= 0 || r.URN != "urn:pulumi:dev::hooks::random:index/randomPet:RandomPet::pet" {
				t.Errorf("the hook call %s: duration %v (given: %v), URN %q", shape(r), r.Duration, !r.NoDuration, r.URN)
			}
		}
	}
}

func TestAutoLogOfARealRefusalAndRetry(t *testing.T) {
	t.Parallel()
	log, _ := decryptedUp(t, "traced", programs+"traced", throttle)
	recs := resources(readAuto(t, log, false))
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource transform tag unchanged",
		"pet: resource hook audit refused",
		"pet: error hook retry retry",
	})
	if len(recs) == 3 {
		if recs[1].Message != "audit trail unavailable" {
			t.Errorf("the hook's refusal is %q, want the hook's error", recs[1].Message)
		}
		if recs[2].Attempt != 1 || recs[2].Op != "create" || !strings.Contains(recs[2].Message, "throttled") {
			t.Errorf("the error hook saw %s attempt %d and %q, want the first create's throttling", recs[2].Op, recs[2].Attempt, recs[2].Message)
		}
	}
}

// TestAutoLogOfAPlainGoSDKProgram reads the log of a program whose two
// resources the SDK registers at once: their transforms usually run at
// once too (seen under both engines: two before lines, then two after
// lines), and then the log cannot say which answer is whose. Either way the
// account claims nothing it cannot know, and never prints the secret the
// transform adds.
func TestAutoLogOfAPlainGoSDKProgram(t *testing.T) {
	t.Parallel()
	log, _ := decryptedUp(t, "sdkprogram", "./testdata/sdkprogram")
	recs := resources(readAuto(t, log, false))
	got := shapes(recs)
	slices.Sort(got)
	overlapped := []string{"pet: resource transform transform unknown", "token: resource transform transform unknown"}
	oneByOne := []string{"pet: resource transform transform changed", "token: resource transform transform unchanged"}
	switch {
	case slices.Equal(got, overlapped):
		for _, r := range recs {
			if !strings.Contains(r.Note, "running at once") || !strings.Contains(r.Given, `"length"`) {
				t.Errorf("%s: the account of a transform whose answer is not known says %q and shows it was given %q", r.Name, r.Note, r.Given)
			}
		}
	case slices.Equal(got, oneByOne):
		i := slices.IndexFunc(recs, func(r *record) bool { return r.Name == "pet" })
		if !slices.ContainsFunc(recs[i].Changes, func(c change) bool { return c.Path == "properties.prefix" && c.New == `"sdk"` }) {
			t.Errorf("the pet's transform changed %+v, want properties.prefix → \"sdk\"", recs[i].Changes)
		}
	default:
		t.Errorf("the calls:\n  %s\nwant either\n  %s\nor\n  %s", strings.Join(got, "\n  "),
			strings.Join(overlapped, "\n  "), strings.Join(oneByOne, "\n  "))
	}
	html := filepath.Join(t.TempDir(), "timeline.html")
	for name, out := range map[string]string{
		"text": showText(t, log),
		"json": showText(t, "-json", log),
		"html": showText(t, "-html", html, log),
	} {
		if strings.Contains(out, secret.Value) {
			t.Errorf("the %s account prints the secret:\n%s", name, out)
		}
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte(secret.Value)) {
		t.Errorf("the HTML timeline holds the secret")
	}
	if !bytes.Contains(page, []byte("Pulumi&#39;s automatic log")) {
		t.Errorf("the HTML timeline does not say which log it was read from")
	}
}

// TestAutoLogsThatAreNotOfADeployment feeds the command the automatic logs
// it cannot read: one still encrypted, and the decrypted log of a command
// that ran no deployment (the stack's creation).
func TestAutoLogsThatAreNotOfADeployment(t *testing.T) {
	t.Parallel()
	_, s := decryptedUp(t, "refusals", programs+"hooks")
	var home string
	for _, kv := range s.Command(t.Context()).Env {
		if v, ok := strings.CutPrefix(kv, "PULUMI_HOME="); ok {
			home = v
		}
	}
	logs, err := filepath.Glob(filepath.Join(home, "logs", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no automatic log in %s/logs (%v)", home, err)
	}
	var up, other string
	for _, l := range logs {
		switch base := filepath.Base(l); {
		case strings.HasPrefix(base, "organization+refusals+dev-"):
			up = l
		case strings.Contains(base, "stack_"):
			other = l
		}
	}
	if up == "" || other == "" {
		t.Fatalf("want the update's log and the stack creation's among %v", logs)
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"show", up}, nil, &stdout, &stderr); code != exitFile ||
		!strings.Contains(stderr.String(), "still encrypted") || !strings.Contains(stderr.String(), "pulumi logs decrypt") {
		t.Errorf("callbacklog show of the encrypted log: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}

	r := s.Run("logs", "decrypt", other).MustSucceed(t)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"show", "-"}, strings.NewReader(r.Stdout), &stdout, &stderr); code != exitFile ||
		!strings.Contains(stderr.String(), "ran no deployment") || stdout.Len() > 0 {
		t.Errorf("callbacklog show of the stack creation's log: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestScrubOfARealAutoLog runs the plain Go SDK program, which writes a
// secret into a resource's inputs, with the provider configured (a secret
// value and a plain one) and the program's own configuration set (a secret
// and a plain value), decrypts the update's automatic log and scrubs it:
// none of the values survives, in any line or any value decoded from one,
// and the account of the scrubbed log is the account of the log.
func TestScrubOfARealAutoLog(t *testing.T) {
	t.Parallel()
	const (
		providerKey    = "random-provider-key-51d2"
		providerRegion = "random-provider-region-8e07"
		programSecret  = "program-config-secret-c3a9"
		programPlain   = "program-config-plain-74b0"
	)
	log, _ := decryptedUpAfter(t, "scrubconfig", "./testdata/sdkprogram", func(s *clitest.Stack) {
		s.Run("config", "set", "--secret", "random:apiKey", providerKey).MustSucceed(t)
		s.SetConfig("random:region", providerRegion)
		s.Run("config", "set", "--secret", "dbPassword", programSecret).MustSucceed(t)
		s.SetConfig("owner", programPlain)
	})
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	// Else the test shows nothing.
	for _, v := range []string{secret.Value, providerKey, providerRegion} {
		if len(survivors(string(data), v)) == 0 {
			t.Errorf("the automatic log does not hold %q", v)
		}
	}
	checkAutoScrub(t, log, secret.Value, providerKey, providerRegion, programSecret, programPlain)
}

// TestAutoLogOfRealTransformChanges runs the hooks program with the
// payloads asked for (CALLBACKS_PULUMI_LOG=payloads): the record of its
// transform says what it changed (the hooks option), and the account
// shows that change from the record alone, with the engine's lines about
// transforms taken out of the log; with -v it shows the transform's
// request and answer from the record.
func TestAutoLogOfRealTransformChanges(t *testing.T) {
	t.Parallel()
	log, _ := decryptedUp(t, "txchanges", programs+"hooks", calllog.SwitchEnv+"="+calllog.PayloadsOn)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	records := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"msg":"Transform: `) {
			continue // the engine's lines about transforms
		}
		if strings.Contains(line, calllog.AttrChanges) {
			records++
		}
		kept = append(kept, line)
	}
	if records == 0 {
		t.Fatalf("no record of the module says what a call changed:\n%s", data)
	}
	recordsOnly := filepath.Join(t.TempDir(), "records-only.jsonl")
	if err := os.WriteFile(recordsOnly, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{log, recordsOnly} {
		recs := resources(readAuto(t, path, false))
		if len(recs) == 0 || recs[0].Kind != "resource transform" {
			t.Errorf("%s: the calls %v, want the transform first", filepath.Base(path), shapes(recs))
			continue
		}
		if tr := recs[0]; tr.Outcome != "changed" || !slices.Contains(changePaths(tr), "options.hooks") {
			t.Errorf("%s: the transform %s changed %v, want the hooks option", filepath.Base(path), shape(tr), changePaths(tr))
		}
		if p := recs[0].Payload; p == nil || p.Request == nil || p.Answer == nil {
			t.Errorf("%s: the transform's request and answer are not shown: %+v", filepath.Base(path), p)
		}
	}
	text := showText(t, "-v", recordsOnly)
	for _, want := range []string{"options.hooks", "request:", "answer:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the account of the records alone has no %q:\n%s", want, text)
		}
	}
}
