package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
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
		{"missing log", []string{"show", missing}, exitUsage, "missing.log"},
		{"help", []string{"help"}, exitOK, "Usage:"},
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
