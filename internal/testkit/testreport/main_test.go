package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// events is a stream as go test -json writes it: a package whose test
// failed in a subtest, one that skipped a test and a subtest, and one that
// passed, with a test that only the second stream runs.
const events = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestBroken"}
{"Action":"output","Package":"ex/a","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"run","Package":"ex/a","Test":"TestBroken/case"}
{"Action":"output","Package":"ex/a","Test":"TestBroken/case","Output":"    a_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"ex/a","Test":"TestBroken/case","Output":"    --- FAIL: TestBroken/case (0.00s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestBroken/case"}
{"Action":"output","Package":"ex/a","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"ex/a","Test":"TestBroken"}
{"Action":"output","Package":"ex/a","Output":"FAIL\n"}
{"Action":"output","Package":"ex/a","Output":"FAIL\tex/a\t0.01s\n"}
{"Action":"fail","Package":"ex/a"}
{"Action":"run","Package":"ex/b","Test":"TestNode"}
{"Action":"output","Package":"ex/b","Test":"TestNode","Output":"=== RUN   TestNode\n"}
{"Action":"output","Package":"ex/b","Test":"TestNode","Output":"    b_test.go:26: node is not installed\n"}
{"Action":"output","Package":"ex/b","Test":"TestNode","Output":"--- SKIP: TestNode (0.00s)\n"}
{"Action":"skip","Package":"ex/b","Test":"TestNode"}
{"Action":"run","Package":"ex/b","Test":"TestRows/long"}
{"Action":"output","Package":"ex/b","Test":"TestRows/long","Output":"    b_test.go:40: slow; runs without -short\n"}
{"Action":"skip","Package":"ex/b","Test":"TestRows/long"}
{"Action":"run","Package":"ex/b","Test":"TestLater"}
{"Action":"output","Package":"ex/b","Test":"TestLater","Output":"    b_test.go:50: runs in the second run\n"}
{"Action":"skip","Package":"ex/b","Test":"TestLater"}
{"Action":"run","Package":"ex/b","Test":"TestFine"}
{"Action":"output","Package":"ex/b","Test":"TestFine","Output":"    b_test.go:60: a log line of a passing test\n"}
{"Action":"pass","Package":"ex/b","Test":"TestFine"}
{"Action":"output","Package":"ex/b","Output":"PASS\n"}
{"Action":"output","Package":"ex/b","Output":"ok  \tex/b\t0.02s\n"}
{"Action":"pass","Package":"ex/b"}
{"Action":"start","Package":"ex/c"}
{"Action":"output","Package":"ex/c","Output":"testing: warning: no tests to run\n"}
{"Action":"output","Package":"ex/c","Output":"PASS\n"}
{"Action":"output","Package":"ex/c","Output":"ok  \tex/c\t0.01s [no tests to run]\n"}
{"Action":"pass","Package":"ex/c"}
{"Action":"output","Package":"ex/d","Output":"?   \tex/d\t[no test files]\n"}
{"Action":"skip","Package":"ex/d"}
{"Action":"run","Package":"ex/e","Test":"TestCrash"}
{"Action":"output","Package":"ex/e","Test":"TestCrash","Output":"panic: boom\n"}
{"Action":"output","Package":"ex/e","Output":"FAIL\tex/e\t0.01s\n"}
{"Action":"fail","Package":"ex/e"}
`

const second = `{"Action":"run","Package":"ex/b","Test":"TestLater"}
{"Action":"pass","Package":"ex/b","Test":"TestLater"}
`

// What go test prints without -json: the failed tests' output, a failed
// package's own, and each package's result line, nothing of the tests that
// passed or skipped nor of a passing package's other lines.
func TestShowsWhatGoTestShows(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	if err := saveAndShow(filepath.Join(dir, "run.json"), strings.NewReader(events+"go: a line that is not an event\n"), &out); err != nil {
		t.Fatal(err)
	}
	want := "    a_test.go:9: got 1, want 2\n" +
		"    --- FAIL: TestBroken/case (0.00s)\n" +
		"--- FAIL: TestBroken (0.00s)\n" +
		"FAIL\n" +
		"FAIL\tex/a\t0.01s\n" +
		"ok  \tex/b\t0.02s\n" +
		"ok  \tex/c\t0.01s [no tests to run]\n" +
		"?   \tex/d\t[no test files]\n" +
		"panic: boom\n" +
		"FAIL\tex/e\t0.01s\n" +
		"go: a line that is not an event\n"
	if out.String() != want {
		t.Errorf("shown:\n%s\nwant:\n%s", out.String(), want)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(saved), events) {
		t.Errorf("the events were not saved as read")
	}
}

// Every test skipped in all runs is listed, with what it said; a test that
// ran in another run is not.
func TestListsWhatDidNotRun(t *testing.T) {
	dir := t.TempDir()
	first, again := filepath.Join(dir, "1.json"), filepath.Join(dir, "2.json")
	if err := os.WriteFile(first, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(again, []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if n, err := listSkipped([]string{first, again}, &out); err != nil || n != 2 {
		t.Fatalf("listSkipped: %d, %v", n, err)
	}
	want := "2 tests did not run:\n" +
		"  ex/b TestNode: node is not installed\n" +
		"  ex/b TestRows/long: slow; runs without -short\n"
	if out.String() != want {
		t.Errorf("listed:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	if n, err := listSkipped([]string{again}, &out); err != nil || n != 0 {
		t.Fatalf("listSkipped: %d, %v", n, err)
	}
	if out.String() != "No test was skipped.\n" {
		t.Errorf("listed %q for a run that skipped nothing", out.String())
	}
}
