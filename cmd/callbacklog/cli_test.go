package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// callbacklog runs the command with args and stdin, and returns its exit
// status and output.
func callbacklog(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// logs are the recorded logs in testdata/logs, scrubbed, each with the
// golden account in a file beside it.
func logs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "logs", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no logs in testdata/logs")
	}
	return files
}

func TestShowRecordedLogs(t *testing.T) {
	for _, file := range logs(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			code, text, stderr := callbacklog("", "show", file)
			if code != exitOK {
				t.Fatalf("exit %d, want 0\n%s%s", code, text, stderr)
			}
			golden(t, filepath.Join("logs", name+".txt"), []byte(text))
			code, js, stderr := callbacklog("", "show", "-json", file)
			if code != exitOK {
				t.Fatalf("-json: exit %d, want 0\n%s", code, stderr)
			}
			golden(t, filepath.Join("logs", name+".json.txt"), []byte(js))
		})
	}
}

func TestShowReadsStandardInput(t *testing.T) {
	file := logs(t)[0]
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, fromFile, _ := callbacklog("", "show", file)
	code, fromStdin, stderr := callbacklog(string(data), "show", "-")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// Only the name of the source differs.
	want := strings.Replace(fromFile, filepath.Base(file), "standard input", 1)
	if fromStdin != want {
		t.Errorf("show - printed\n%s\nwant what show FILE prints:\n%s", fromStdin, want)
	}
}

// TestShowNamesUnreadableLines breaks a recorded log in the ways a log
// breaks (a line cut short as a crash leaves it, a corrupt line, a line
// that is not JSON at all) and checks that the rest of it is still shown
// and the broken lines are named, with exit status 1.
func TestShowNamesUnreadableLines(t *testing.T) {
	file := filepath.Join("testdata", "logs", "errorhook.jsonl")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	// The line that completes the first callback call.
	first := -1
	for i, l := range lines {
		if strings.Contains(l, `"/pulumirpc.Callbacks/Invoke"`) && (strings.Contains(l, `"response_completed"`) || !strings.Contains(l, `"progress"`)) {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("the log has no callback call")
	}
	_, whole, _ := callbacklog("", "show", file)

	broken := append([]string(nil), lines...)
	broken[first] = broken[first][:len(broken[first])/2] + "\n" // cut short
	broken[0] = "this is not JSON\n"
	last := len(broken) - 1
	broken[last] = strings.TrimSuffix(broken[last], "\n")
	broken[last] = broken[last][:len(broken[last])/3] // a truncated end
	code, text, stderr := callbacklog(strings.Join(broken, ""), "show", "-")
	if code != exitUnreadable {
		t.Errorf("exit %d, want %d\n%s", code, exitUnreadable, stderr)
	}
	for _, n := range []int{1, first + 1, last + 1} {
		if !regexp.MustCompile(`(?m)^  line ` + itoa(n) + `: \S`).MatchString(text) {
			t.Errorf("the account does not name line %d and why:\n%s", n, text)
		}
	}
	if !strings.Contains(stderr, "could not be read") {
		t.Errorf("stderr does not say that lines could not be read: %q", stderr)
	}
	// The other calls are still there.
	wholeCalls := regexp.MustCompile(`(?m)^  #\d+ `).FindAllString(whole, -1)
	brokenCalls := regexp.MustCompile(`(?m)^  #\d+ `).FindAllString(text, -1)
	if len(brokenCalls) != len(wholeCalls)-1 {
		t.Errorf("with one call's line broken the account shows %d calls, want %d:\n%s", len(brokenCalls), len(wholeCalls)-1, text)
	}
}

func TestUsage(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.log")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, exitUsage, "Usage:"},
		{"unknown command", []string{"replay", "x.log"}, exitUsage, `unknown command "replay"`},
		{"no log", []string{"show"}, exitUsage, "want one LOG argument"},
		{"two logs", []string{"show", "a.log", "b.log"}, exitUsage, "got 2"},
		{"unknown flag", []string{"show", "-colour", "a.log"}, exitUsage, "-colour"},
		{"html without a file", []string{"show", "a.log", "-html"}, exitUsage, "-html"},
		{"missing log", []string{"show", missing}, exitFile, "missing.log"},
		{"scrub with no log", []string{"scrub"}, exitUsage, "want one LOG argument"},
		{"scrub with two logs", []string{"scrub", "a.log", "b.log"}, exitUsage, "got 2"},
		{"help", []string{"help"}, exitOK, "Usage:"},
		{"show -h", []string{"show", "-h"}, exitOK, "Usage:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := callbacklog("", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("the output does not say %q:\n%s%s", tc.want, stdout, stderr)
			}
		})
	}
}

func TestFlagsAfterTheLog(t *testing.T) {
	file := logs(t)[0]
	_, before, _ := callbacklog("", "show", "-json", file)
	code, after, stderr := callbacklog("", "show", file, "-json")
	if code != exitOK || after != before {
		t.Errorf("show LOG -json: exit %d, printed\n%s%s\nwant what show -json LOG prints", code, after, stderr)
	}
}

// TestShowNamesAPayloadThatDoesNotDecode breaks the payload of one call of
// a recorded log: the call's line is named, the other calls are shown.
func TestShowNamesAPayloadThatDoesNotDecode(t *testing.T) {
	file := filepath.Join("testdata", "logs", "errorhook.jsonl")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	payload := regexp.MustCompile(`("request":\{"token":"[^"]*","request":")[^"]*"`)
	broken := -1
	for i, l := range lines {
		if strings.Contains(l, `"/pulumirpc.Callbacks/Invoke"`) && strings.Contains(l, `"response_completed"`) {
			broken = i // the last call's
		}
	}
	if broken < 0 {
		t.Fatal("the log has no callback call")
	}
	lines[broken] = payload.ReplaceAllString(lines[broken], `${1}AAAA////"`)
	_, whole, _ := callbacklog("", "show", file)
	code, text, _ := callbacklog(strings.Join(lines, ""), "show", "-")
	if code != exitUnreadable {
		t.Errorf("exit %d, want %d", code, exitUnreadable)
	}
	if !regexp.MustCompile(`(?m)^  line ` + itoa(broken+1) + `: \S`).MatchString(text) {
		t.Errorf("the account does not name line %d and why:\n%s", broken+1, text)
	}
	wholeCalls := regexp.MustCompile(`(?m)^  #\d+ `).FindAllString(whole, -1)
	brokenCalls := regexp.MustCompile(`(?m)^  #\d+ `).FindAllString(text, -1)
	if len(brokenCalls) < len(wholeCalls)-1 {
		t.Errorf("with one payload broken the account shows %d calls, want at least %d:\n%s", len(brokenCalls), len(wholeCalls)-1, text)
	}
}

// TestNoSecretPrintedByDefault shows a recorded log whose program put a
// secret into a resource's inputs through a transform (scrubbed: the secret
// is a placeholder, still marked secret): no form of the account prints its
// value unless -secrets is given.
func TestNoSecretPrintedByDefault(t *testing.T) {
	file := filepath.Join("testdata", "logs", "sdkprogram-3.260.0.jsonl")
	code, withSecrets, stderr := callbacklog("", "show", "-json", "-secrets", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The secret's value, as -secrets shows it.
	var values []string
	for _, l := range strings.Split(strings.TrimSpace(withSecrets), "\n") {
		var c struct {
			Changes []change `json:"changes"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Changes {
			if strings.Contains(ch.Path, "password") {
				values = append(values, ch.New)
			}
		}
	}
	if len(values) != 1 || values[0] == "[secret]" || values[0] == absent {
		t.Fatalf("with -secrets, the password's changes are %q, want its value once", values)
	}
	// The value itself, without the quotes and the secret(…) around it.
	values[0] = strings.TrimSuffix(strings.TrimPrefix(values[0], "secret("), ")")
	if v, err := strconv.Unquote(values[0]); err == nil {
		values[0] = v
	}
	html := filepath.Join(t.TempDir(), "timeline.html")
	_, text, _ := callbacklog("", "show", "-html", html, file)
	_, js, _ := callbacklog("", "show", "-json", file)
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for form, out := range map[string]string{"text": text, "json": js, "html": string(page)} {
		if strings.Contains(out, values[0]) {
			t.Errorf("the %s form prints the secret %s", form, values[0])
		}
		if !strings.Contains(out, "[secret]") {
			t.Errorf("the %s form does not say where the secret is", form)
		}
	}
}

// TestBothFormsOfALogGiveTheSameAccount shows a log of two entries per call
// and the same log in the older form, one entry per call: only the line
// numbers differ (a run's among them: the older form writes it at its end).
func TestBothFormsOfALogGiveTheSameAccount(t *testing.T) {
	lines := regexp.MustCompile(`(?m)  line \d+$|log line \d+`)
	account := func(file string) string {
		code, text, stderr := callbacklog("", "show", filepath.Join("testdata", "logs", file))
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", file, code, stderr)
		}
		_, text, _ = strings.Cut(text, "\n") // the first line names the file
		return lines.ReplaceAllString(text, "")
	}
	two, one := account("traced-3.260.0.jsonl"), account("traced-one-entry-per-call.jsonl")
	if two != one {
		t.Errorf("the account of a log of one entry per call:\n%s\ndiffers from that of the same log with two:\n%s", one, two)
	}
}

// TestScrubKeepsAScrubbedLog scrubs the logs in testdata, which were
// scrubbed when they were recorded: callbacklog scrub writes each back
// byte for byte (its placeholders are stable), from a file or standard
// input.
func TestScrubKeepsAScrubbedLog(t *testing.T) {
	for _, file := range logs(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		code, out, stderr := callbacklog("", "scrub", file)
		if code != exitOK || out != string(data) {
			t.Errorf("scrub %s: exit %d, %d bytes out of %d in, want the log unchanged: %s", file, code, len(out), len(data), stderr)
		}
		code, out, _ = callbacklog(string(data), "scrub", "-")
		if code != exitOK || out != string(data) {
			t.Errorf("scrub - < %s: exit %d, want the log unchanged", file, code)
		}
	}
}

// TestScrubReadsAFileTwice: a secret that a gRPC log repeats in clear
// before the entry that marks it (a provider's error) is replaced when the
// log is a file, which scrub reads twice, to standard output and with -o;
// from standard input, read once, it stays, as replay.Scrub documents.
func TestScrubReadsAFileTwice(t *testing.T) {
	const secret = "hunter2-before"
	log := `{"method":"/pulumirpc.ResourceProvider/Create","request":{"properties":{"name":"db-hunter2-before"}},"errors":["failed with hunter2-before as the password"]}` + "\n" +
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"object":{"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"hunter2-before"}}}}` + "\n"
	file := filepath.Join(t.TempDir(), "up.jsonl")
	if err := os.WriteFile(file, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := callbacklog("", "scrub", file)
	if code != exitOK || strings.Contains(out, secret) || !strings.Contains(out, "failed with [secret 1] as the password") {
		t.Errorf("scrub FILE: exit %d %s\n%s", code, stderr, out)
	}
	scrubbed := filepath.Join(t.TempDir(), "scrubbed.jsonl")
	if code, _, stderr := callbacklog("", "scrub", "-o", scrubbed, file); code != exitOK {
		t.Fatalf("scrub -o: exit %d %s", code, stderr)
	}
	if got, err := os.ReadFile(scrubbed); err != nil || string(got) != out {
		t.Errorf("scrub -o wrote otherwise than to standard output (%v):\n%s", err, got)
	}
	if code, out, _ := callbacklog(log, "scrub", "-"); code != exitOK || strings.Count(out, secret) != 2 {
		t.Errorf("scrub - (read once): exit %d, want the secret left in the first entry's two strings:\n%s", code, out)
	}
}

// failingWriter fails every write, as standard output does when its reader
// is gone or its disk full.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestExitStatuses checks each exit status the package comment gives.
func TestExitStatuses(t *testing.T) {
	file := filepath.Join("testdata", "logs", "errorhook.jsonl")
	noDir := filepath.Join(t.TempDir(), "no", "such", "dir")
	for _, tc := range []struct {
		name string
		args []string
		out  bool // standard output fails
		code int
		want string
	}{
		{"a whole log", []string{"show", file}, false, exitOK, ""},
		{"usage", []string{"show", "-x", file}, false, exitUsage, "Usage:"},
		{"scrub usage", []string{"scrub", "-o"}, false, exitUsage, "Usage:"},
		{"a log that cannot be opened", []string{"show", filepath.Join(noDir, "up.jsonl")}, false, exitFile, "no such file"},
		{"scrub of a log that cannot be opened", []string{"scrub", filepath.Join(noDir, "up.jsonl")}, false, exitFile, "no such file"},
		{"an -html file that cannot be written", []string{"show", "-html", filepath.Join(noDir, "up.html"), file}, false, exitFile, "up.html"},
		{"an -o file that cannot be written", []string{"scrub", "-o", filepath.Join(noDir, "up.jsonl"), file}, false, exitFile, "no such file"},
		{"the account cannot be written", []string{"show", file}, true, exitWrite, "no space left"},
		{"the JSON cannot be written", []string{"show", "-json", file}, true, exitWrite, "no space left"},
		{"the scrubbed log cannot be written", []string{"scrub", file}, true, exitWrite, "no space left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout bytes.Buffer
			var stderr strings.Builder
			var w io.Writer = &stdout
			if tc.out {
				w = failingWriter{}
			}
			code := run(tc.args, strings.NewReader(""), w, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
		})
	}
}
