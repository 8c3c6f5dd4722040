package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFile writes data to a file in a test's directory and returns its
// path.
func writeFile(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func readTestFile(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func gzipped(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// TestInputThatIsNotALog gives show and scrub what is not a log: each says
// so in one line, writes nothing else, and exits 3.
func TestInputThatIsNotALog(t *testing.T) {
	recorded := readTestFile(t, filepath.Join("testdata", "logs", "errorhook.jsonl"))
	readme := readTestFile(t, filepath.Join("..", "..", "README.md"))
	for _, tc := range []struct {
		name  string
		path  string // or stdin, with path "-"
		stdin string
		want  string
	}{
		{"directory", t.TempDir(), "", "is a directory"},
		{"empty file", writeFile(t, "up.jsonl", nil), "", "up.jsonl is empty: was PULUMI_DEBUG_GRPC set for the CLI?"},
		{"blank lines", writeFile(t, "up.jsonl", []byte(strings.Repeat(" \n", 1000))), "", "is empty: was PULUMI_DEBUG_GRPC set"},
		{"empty standard input", "-", "", "standard input is empty: was PULUMI_DEBUG_GRPC set"},
		{"gzipped log", writeFile(t, "up.jsonl.gz", gzipped(t, recorded)), "", "gunzip it first"},
		{"binary file", writeFile(t, "up.bin", []byte("PK\x03\x04\x00\x00binary")), "", "not text"},
		{"README", writeFile(t, "README.md", readme), "", "README.md is not an engine gRPC log"},
		{"JSON that is not a log", "-", "{\"a\": 1}\n[1, 2]\n", "standard input is not an engine gRPC log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{{"show"}, {"show", "-json"}, {"scrub"}} {
				code, stdout, stderr := callbacklog(tc.stdin, append(args, tc.path)...)
				if code != exitFile {
					t.Errorf("%s: exit %d, want %d", args, code, exitFile)
				}
				if stdout != "" {
					t.Errorf("%s printed an account of what is not a log:\n%s", args, stdout)
				}
				if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
					t.Errorf("%s: stderr is %q, want one line saying %q", args, stderr, tc.want)
				}
			}
		})
	}
}

// withoutCallbacks is a recorded log with its callback calls left out.
func withoutCallbacks(tb testing.TB) string {
	tb.Helper()
	var kept []string
	for _, l := range strings.SplitAfter(string(readTestFile(tb, filepath.Join("testdata", "logs", "errorhook.jsonl"))), "\n") {
		if !strings.Contains(l, `"/pulumirpc.Callbacks/Invoke"`) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "")
}

// TestLogWithoutCallbacks: a log of a program that registered no callback
// is a log: show says there was no callback call and that the log is not
// empty, and exits 0; scrub scrubs it.
func TestLogWithoutCallbacks(t *testing.T) {
	log := withoutCallbacks(t)
	code, text, stderr := callbacklog(log, "show", "-")
	if code != exitOK || !strings.Contains(text, "no callback calls") || !strings.Contains(text, "The log is not empty") {
		t.Errorf("show: exit %d, printed\n%s%s\nwant exit 0 and that the log is not empty but has no callback call", code, text, stderr)
	}
	code, js, stderr := callbacklog(log, "show", "-json", "-")
	if code != exitOK || strings.Contains(js, `"seq"`) || !strings.HasPrefix(js, `{"deployment":`) || !strings.Contains(stderr, "no callback calls") || !strings.Contains(stderr, "The log is not empty") {
		t.Errorf("show -json: exit %d, printed %q, stderr %q; want exit 0, the deployment and no callback call, and why on stderr", code, js, stderr)
	}
	code, scrubbed, stderr := callbacklog(log, "scrub", "-")
	if code != exitOK || scrubbed == "" {
		t.Errorf("scrub: exit %d, %d bytes out: %s", code, len(scrubbed), stderr)
	}
}

// TestScrubToAFile scrubs a log holding a secret into a file with -o, and
// into the log itself: the file is what scrub prints, and no temporary file
// is left.
func TestScrubToAFile(t *testing.T) {
	const secret = "hunter2-Hunter2"
	dir := t.TempDir()
	log := filepath.Join(dir, "up.jsonl")
	original := secretLog(t, secret, "no secret here", inHooksRefusal)
	if err := os.WriteFile(log, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	code, want, stderr := callbacklog("", "scrub", log)
	if code != exitOK || want == original || want == "" {
		t.Fatalf("scrub: exit %d, %d bytes, the log unchanged: %v: %s", code, len(want), want == original, stderr)
	}
	out := filepath.Join(dir, "scrubbed.jsonl")
	for _, tc := range []struct {
		args   []string
		target string
	}{
		{[]string{"scrub", "-o", out, log}, out},
		{[]string{"scrub", log, "-o", log}, log}, // in place
	} {
		args, target := tc.args, tc.target
		code, stdout, stderr := callbacklog("", args...)
		if code != exitOK || stdout != "" {
			t.Errorf("%s: exit %d, printed %q: %s", args, code, stdout, stderr)
		}
		if got := string(readTestFile(t, target)); got != want {
			t.Errorf("%s wrote\n%s\nwant what scrub prints:\n%s", args, got, want)
		}
	}
	if fi, err := os.Stat(log); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("scrubbing the log in place changed its mode: %v, %v", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("the directory holds %d files, want the log and the scrubbed one: %v", len(entries), entries)
	}
}

// TestScrubLeavesTheFileWhenItFails: scrub -o of what is not a log leaves
// the file as it was, and no temporary file.
func TestScrubLeavesTheFileWhenItFails(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "kept.jsonl")
	if err := os.WriteFile(out, []byte("as it was\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := callbacklog("this is not a log\n", "scrub", "-o", out, "-")
	if code != exitFile || !strings.Contains(stderr, "not an engine gRPC log") {
		t.Errorf("exit %d, stderr %q; want %d and why", code, stderr, exitFile)
	}
	if got := string(readTestFile(t, out)); got != "as it was\n" {
		t.Errorf("the file was changed to %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %v, want the file alone", entries)
	}
}
