package replay

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// writeLog writes content to a new file named name and returns its path.
func writeLog(tb testing.TB, name string, content []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, content, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// configuredLog is the synthetic log of a program configured with a
// region, in the engine's order: the Run's request_started first, its
// completing entry last.
func configuredLog(tb testing.TB) []byte {
	tb.Helper()
	var log bytes.Buffer
	if err := writeSynthetic(&log, synthetic{resources: 3, secret: "hunter2-secret", plain: "us-west-2"}); err != nil {
		tb.Fatal(err)
	}
	return log.Bytes()
}

// configuredProgram is configuredLog's program, which needs its region.
func configuredProgram(prefix string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		region, ok := ctx.GetConfig("synth:region")
		if !ok {
			return errors.New("missing required configuration variable 'synth:region'")
		}
		if region != "us-west-2" {
			return errors.New("the region is " + region)
		}
		return synthProgram(3, prefix)(ctx)
	}
}

// mustSay fails tb unless exactly n errors were reported and each of want
// is in one of them.
func mustSay(tb testing.TB, ft *fakeT, n int, want ...string) {
	tb.Helper()
	if len(ft.errors) != n {
		tb.Errorf("%d errors, want %d:\n%s", len(ft.errors), n, ft.report())
	}
	for _, w := range want {
		found := false
		for _, e := range ft.errors {
			found = found || strings.Contains(e, w)
		}
		if !found {
			tb.Errorf("no error says %q:\n%s", w, ft.report())
		}
	}
}

// TestReplayRefusesWhatIsNotALog: a file Run cannot replay fails the test
// with what is wrong and what to do, before the program runs.
func TestReplayRefusesWhatIsNotALog(t *testing.T) {
	t.Parallel()
	var noCalls []byte
	for _, line := range bytes.SplitAfter(configuredLog(t), []byte("\n")) {
		if !bytes.Contains(line, []byte(invokeMethod)) {
			noCalls = append(noCalls, line...)
		}
	}
	for _, tc := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"empty", nil, "is empty: record a deployment into it with PULUMI_DEBUG_GRPC="},
		{"blank lines", []byte("\n  \n\n"), "is empty: record a deployment into it with PULUMI_DEBUG_GRPC="},
		{"a stack's state", []byte("{\n  \"version\": 3,\n  \"deployment\": {}\n}\n"),
			"is not an engine gRPC log: none of its 4 lines is a JSON object with a \"method\""},
		{"text", []byte("pulumi up\nPreviewing update (dev)\n"), "is not an engine gRPC log"},
		{"entries in an array", []byte(`[{"method":"/pulumirpc.Callbacks/Invoke"}]` + "\n"), "is not an engine gRPC log"},
		{"no callback call", noCalls, "holds no callback call to replay: record a deployment of a program that registers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := writeLog(t, "up.jsonl", tc.content)
			ft := &fakeT{TB: t}
			ran := false
			Run(ft, log, func(*pulumi.Context) error { ran = true; return nil })
			mustSay(t, ft, 1, "replay: "+log+" ", tc.want)
			if ran {
				t.Error("the program ran")
			}
		})
	}
}

// TestReplayOfALogCutShort: a log whose last line the engine did not
// finish is replayed up to it, with the configuration from the Run's
// request_started, and the cut line is reported once, with what to do.
func TestReplayOfALogCutShort(t *testing.T) {
	t.Parallel()
	full := configuredLog(t)
	lines := strings.SplitAfter(string(full), "\n")
	// Cut inside the completing entry of the last stack transform call:
	// two transform calls before it, then the cut one.
	last := -1
	for i, l := range lines {
		if strings.Contains(l, `"token":"stack-transform"`) && strings.Contains(l, "response_completed") {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("no transform call in the log")
	}
	cut := strings.Join(lines[:last], "") + lines[last][:len(lines[last])/2]
	log := writeLog(t, "cut.jsonl", []byte(cut))
	line := strings.Count(cut, "\n") + 1
	cutShort := "its last line (log line " + itoa(line) + ") is cut short inside its entry"

	ft := &fakeT{TB: t}
	Run(ft, log, configuredProgram("tx"))
	mustSay(t, ft, 1, "replay: "+log+": "+cutShort, "the calls before it are replayed")

	// The calls before the cut are replayed: the two transform calls differ.
	ft = &fakeT{TB: t}
	Run(ft, log, configuredProgram("ty"))
	mustSay(t, ft, 3, cutShort, `properties.prefix: "tx" → "ty"`)

	// A log that ends before the Run completes, on a whole line, replays
	// with the configuration of its request_started, and says nothing.
	// (lines ends with the empty string after the last newline.)
	if !strings.Contains(lines[len(lines)-2], runMethod) {
		t.Fatal("the log does not end with its Run's completing entry")
	}
	endedLog := strings.Join(lines[:len(lines)-2], "")
	ended := writeLog(t, "ended.jsonl", []byte(endedLog))
	ft = &fakeT{TB: t}
	Run(ft, ended, configuredProgram("tx"))
	mustSay(t, ft, 0)

	// Such a log followed by another run's: two runs, the first ending
	// where the second starts.
	n := len(lines) - 2
	joined := writeLog(t, "joined.jsonl", []byte(endedLog+string(full)))
	ft = &fakeT{TB: t}
	Run(ft, joined, configuredProgram("ty"))
	mustSay(t, ft, 6, "in the update (LanguageRuntime/Run, log line 1)",
		"in the update (LanguageRuntime/Run, log line "+itoa(2*n+1)+")")
}

// TestReplayNamesTheRun: a program failing in a run, and a call of a log of
// several runs, name the run (preview or update) and its log line; a
// differing answer says how to take it; a log with no Run says the program
// ran without configuration.
func TestReplayNamesTheRun(t *testing.T) {
	t.Parallel()
	full := configuredLog(t)
	lines := strings.SplitAfter(string(full), "\n")
	preview := strings.ReplaceAll(string(full), `"parallel":8,`, `"dryRun":true,"parallel":8,`)
	if preview == string(full) {
		t.Fatal("the log's Run entries were not found")
	}
	twoRuns := writeLog(t, "two.jsonl", []byte(preview+string(full)))
	n := len(lines) - 1 // the lines of one log, the last one empty

	ft := &fakeT{TB: t}
	Run(ft, twoRuns, configuredProgram("ty"))
	mustSay(t, ft, 6,
		"in the preview (LanguageRuntime/Run, log line "+itoa(n)+")",
		"in the update (LanguageRuntime/Run, log line "+itoa(2*n)+")",
		"\n("+envUpdate+"=1 go test takes today's answers as the recording)")

	ft = &fakeT{TB: t}
	Run(ft, twoRuns, func(ctx *pulumi.Context) error {
		if ctx.DryRun() {
			return configuredProgram("tx")(ctx)
		}
		return errors.New("gave up")
	})
	mustSay(t, ft, 1, "replay: the program, in the update (LanguageRuntime/Run, log line "+itoa(2*n)+"), failed: ", "gave up")

	var noRun []byte
	for _, l := range lines {
		if !strings.Contains(l, runMethod) {
			noRun = append(noRun, l...)
		}
	}
	ft = &fakeT{TB: t}
	Run(ft, writeLog(t, "norun.jsonl", noRun), configuredProgram("tx"))
	mustSay(t, ft, 1, "has no LanguageRuntime/Run entry: the program ran with no configuration")
}
