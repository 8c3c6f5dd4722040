package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// scenario is what one recording of the diff tests' program did.
type scenario struct {
	team     string // the team the transform gives the pet
	refusal  string // the hook's refusal of the pet, "" for none
	retries  int    // how many times the error hook is called for the token
	gone     bool   // the transform is also called for a resource "gone"
	password any    // the token's password property the transform is given
}

// recording is the gRPC log of d.
func recording(tb testing.TB, d scenario) string {
	tb.Helper()
	l := newTestLog(tb)
	l.register("RegisterStackTransform", "", "tok-transform")
	l.register("RegisterResourceHook", "check-tags", "tok-hook")
	l.register("RegisterErrorHook", "retry-throttled", "tok-errorhook")
	const pet = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	const token = "urn:pulumi:dev::demo::random:index/randomString:RandomString::token"
	l.call("tok-transform", &pulumirpc.TransformRequest{Type: "random:index/randomPet:RandomPet", Name: "pet",
		Properties: newStruct(tb, map[string]any{"keepers": map[string]any{"team": "platform"}})},
		&pulumirpc.TransformResponse{Properties: newStruct(tb, map[string]any{"keepers": map[string]any{"team": d.team}})})
	props := newStruct(tb, map[string]any{"length": 8, "password": d.password})
	l.call("tok-transform", &pulumirpc.TransformRequest{Type: "random:index/randomString:RandomString", Name: "token",
		Properties: props}, &pulumirpc.TransformResponse{Properties: props})
	if d.gone {
		l.call("tok-transform", &pulumirpc.TransformRequest{Type: "random:index/randomPet:RandomPet", Name: "gone"},
			&pulumirpc.TransformResponse{})
	}
	l.call("tok-hook", &pulumirpc.ResourceHookRequest{Urn: pet, Name: "pet", Type: "random:index/randomPet:RandomPet"},
		&pulumirpc.ResourceHookResponse{Error: d.refusal})
	for i := range d.retries {
		l.call("tok-errorhook", &pulumirpc.ErrorHookRequest{Urn: token, Name: "token", Type: "random:index/randomString:RandomString",
			FailedOperation: "create", Errors: slices.Repeat([]string{"throttled: try again"}, i+1)},
			&pulumirpc.ErrorHookResponse{Retry: i < 1})
	}
	return l.String()
}

var firstUp = scenario{team: "data", refusal: "pets need an owner tag", retries: 1, gone: true, password: "hunter2-pass"}

// secondUp is firstUp with one thing of each kind changed: the transform's
// change, the hook's answer, an error hook call more, a resource less, and
// the password made secret.
var secondUp = scenario{team: "infra", retries: 2,
	password: map[string]any{sig.Key: sig.Secret, "value": "hunter2-pass"}}

// diffOf writes the two logs and runs diff on them with args.
func diffOf(tb testing.TB, old, new string, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	dir := tb.TempDir()
	o, n := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "new.jsonl")
	for name, data := range map[string]string{o: old, n: new} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	code, stdout, stderr = callbacklog("", append(append([]string{"diff"}, args...), o, n)...)
	// The logs' names as a user would give them, in their directory.
	stdout = strings.ReplaceAll(stdout, dir+string(filepath.Separator), "")
	return code, stdout, stderr
}

func TestDiff(t *testing.T) {
	code, out, stderr := diffOf(t, recording(t, firstUp), recording(t, secondUp))
	if code != exitDiffer {
		t.Errorf("exit %d, want %d: %s", code, exitDiffer, stderr)
	}
	golden(t, "diff.txt", []byte(out))
	for _, want := range []string{
		`~ resource transform  stack transform #1  changed`,
		`- properties.keepers.team  "platform" → "data"`,
		`+ properties.keepers.team  "platform" → "infra"`,
		`~ resource hook       check-tags          refused → ok`,
		`- refused: pets need an owner tag`,
		`+ error hook          retry-throttled     no retry`,
		`- resource transform  stack transform #1  unchanged`,
		"2 changed, 1 appeared, 1 disappeared; 2 the same",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the comparison does not say %q:\n%s", want, out)
		}
	}
	// The call that did the same is not shown: its resource is not either.
	if strings.Contains(out, "retry-throttled     retry ") {
		t.Errorf("the comparison shows a call that did the same:\n%s", out)
	}
}

func TestDiffOfTheSame(t *testing.T) {
	log := recording(t, firstUp)
	code, out, stderr := diffOf(t, log, log)
	if code != exitOK {
		t.Errorf("exit %d, want 0: %s", code, stderr)
	}
	if want := "old.jsonl and new.jsonl: the same account, 5 callback calls about 5 resources\n"; out != want {
		t.Errorf("the comparison of a log with itself is\n%s\nwant\n%s", out, want)
	}
	// The other form of the same log, and times of its own: the same.
	other := strings.ReplaceAll(log, `"duration":1500000`, `"duration":2500000`)
	if other == log {
		t.Fatal("the log has no duration to change")
	}
	if code, out, _ := diffOf(t, log, other); code != exitOK {
		t.Errorf("calls that took longer make a difference (exit %d):\n%s", code, out)
	}
	if code, out, _ := diffOf(t, log, log, "-json"); code != exitOK || out != "" {
		t.Errorf("-json of the same log: exit %d, printed %q; want 0 and nothing", code, out)
	}
}

// TestDiffMatchesByOrderWithinARegistration checks that the error hook's
// third call is the one that appeared, the first two matched with the first
// two of the old log.
func TestDiffMatchesByOrderWithinARegistration(t *testing.T) {
	one, two := firstUp, firstUp
	one.retries, two.retries = 2, 3
	_, out, _ := diffOf(t, recording(t, one), recording(t, two))
	if strings.Contains(out, "~ error hook") || !strings.Contains(out, "+ error hook") {
		t.Errorf("a second call of an error hook is not shown as one that appeared:\n%s", out)
	}
	if !strings.Contains(out, "#7 line") {
		t.Errorf("the call that appeared is not named by its place in the new log:\n%s", out)
	}
}

func TestDiffJSON(t *testing.T) {
	code, out, stderr := diffOf(t, recording(t, firstUp), recording(t, secondUp), "-json")
	if code != exitDiffer {
		t.Errorf("exit %d, want %d: %s", code, exitDiffer, stderr)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var j jsonDiff
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got[j.Diff]++
		if (j.Old == nil) != (j.Diff == "appeared") || (j.New == nil) != (j.Diff == "disappeared") {
			t.Errorf("%s call with old %v and new %v", j.Diff, j.Old != nil, j.New != nil)
		}
		if j.Diff == "changed" && j.Kind == "resource hook" && (j.Old.Outcome != "refused" || j.New.Outcome != "ok") {
			t.Errorf("the hook's outcomes are %q and %q, want refused and ok", j.Old.Outcome, j.New.Outcome)
		}
	}
	if want := map[string]int{"changed": 2, "appeared": 1, "disappeared": 1}; len(got) != len(want) ||
		got["changed"] != 2 || got["appeared"] != 1 || got["disappeared"] != 1 {
		t.Errorf("-json gave %v, want %v:\n%s", got, want, out)
	}
}

// TestDiffHidesTheOtherLogsSecrets checks that a value only the new log
// marks secret is not printed from the old one either, where it is in
// clear.
func TestDiffHidesTheOtherLogsSecrets(t *testing.T) {
	old, new := firstUp, secondUp
	old.team, new.team = "hunter2-pass", "hunter2-pass-2" // the old log's secret in a change of both
	for _, args := range [][]string{nil, {"-json"}} {
		_, out, _ := diffOf(t, recording(t, old), recording(t, new), args...)
		if strings.Contains(out, "hunter2-pass") {
			t.Errorf("diff %v prints a secret:\n%s", args, out)
		}
		if !strings.Contains(out, hidden) {
			t.Errorf("diff %v hides no secret:\n%s", args, out)
		}
		_, out, _ = diffOf(t, recording(t, old), recording(t, new), append(args, "-secrets")...)
		if !strings.Contains(out, "hunter2-pass-2") {
			t.Errorf("diff -secrets %v does not print the secret:\n%s", args, out)
		}
	}
}

func TestDiffExitStatuses(t *testing.T) {
	log := writeFile(t, "up.jsonl", []byte(recording(t, firstUp)))
	broken := recording(t, firstUp)
	broken = broken[:len(broken)-40] // the last line cut short
	cut := writeFile(t, "cut.jsonl", []byte(broken))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"one log", []string{"diff", log}, exitUsage, "want 2 LOG arguments"},
		{"three logs", []string{"diff", log, log, log}, exitUsage, "want 2 LOG arguments"},
		{"both standard input", []string{"diff", "-", "-"}, exitUsage, "both be standard input"},
		{"an unknown flag", []string{"diff", "-x", log, log}, exitUsage, "Usage:"},
		{"a log that cannot be opened", []string{"diff", log, filepath.Join(t.TempDir(), "none.jsonl")}, exitFile, "no such file"},
		{"lines that cannot be read", []string{"diff", log, cut}, exitDiffer, "could not be read"},
		{"flags after the logs", []string{"diff", log, log, "-json"}, exitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := callbacklog("", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
		})
	}
}

// TestDiffOfARecordedLog compares the log examples/replay keeps with itself
// after the change its README makes to the program: the team of "db".
func TestDiffOfARecordedLog(t *testing.T) {
	recorded := string(readTestFile(t, recordedUp))
	code, out, stderr := diffOf(t, recorded, string(withTeam(t, []byte(recorded), "db", "storage")))
	if code != exitDiffer {
		t.Errorf("exit %d, want %d: %s", code, exitDiffer, stderr)
	}
	golden(t, "diff-recorded.txt", []byte(out))
}

func TestDiffStandardInputAndFailedWrite(t *testing.T) {
	log := recording(t, firstUp)
	file := writeFile(t, "up.jsonl", []byte(log))
	code, out, stderr := callbacklog(recording(t, secondUp), "diff", file, "-")
	if code != exitDiffer || !strings.Contains(out, "+++ standard input: ") {
		t.Errorf("diff FILE -: exit %d, printed\n%s%s", code, out, stderr)
	}
	var errOut strings.Builder
	if code := run([]string{"diff", file, "-"}, strings.NewReader(recording(t, secondUp)), failingWriter{}, &errOut); code != exitWrite ||
		!strings.Contains(errOut.String(), "no space left") {
		t.Errorf("diff to a failing standard output: exit %d, %q; want %d", code, errOut.String(), exitWrite)
	}
}
