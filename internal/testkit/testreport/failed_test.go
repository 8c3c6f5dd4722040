package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failures is a stream as go test -json writes it (less the times and some
// stack frames) for a package of each way to fail: a build error, a failed
// subtest, a TestMain that fails after its tests pass, a panic, go test's
// timeout, and a package that passed.
const failures = `{"ImportPath":"ex/build [ex/build.test]","Action":"build-output","Output":"# ex/build [ex/build.test]\n"}
{"ImportPath":"ex/build [ex/build.test]","Action":"build-output","Output":"build/b_test.go:3:28: undefined: undefined\n"}
{"ImportPath":"ex/build [ex/build.test]","Action":"build-fail"}
{"Action":"start","Package":"ex/build"}
{"Action":"output","Package":"ex/build","Output":"FAIL\tex/build [build failed]\n"}
{"Action":"fail","Package":"ex/build","FailedBuild":"ex/build [ex/build.test]"}
{"Action":"run","Package":"ex/failing","Test":"TestBroken"}
{"Action":"output","Package":"ex/failing","Test":"TestBroken","Output":"=== RUN   TestBroken\n"}
{"Action":"run","Package":"ex/failing","Test":"TestBroken/case"}
{"Action":"output","Package":"ex/failing","Test":"TestBroken/case","Output":"=== RUN   TestBroken/case\n"}
{"Action":"output","Package":"ex/failing","Test":"TestBroken/case","Output":"    f_test.go:3: got 1,\n"}
{"Action":"output","Package":"ex/failing","Test":"TestBroken/case","Output":"        want 2\n"}
{"Action":"output","Package":"ex/failing","Test":"TestBroken/case","Output":"--- FAIL: TestBroken/case (0.00s)\n"}
{"Action":"fail","Package":"ex/failing","Test":"TestBroken/case"}
{"Action":"output","Package":"ex/failing","Test":"TestBroken","Output":"--- FAIL: TestBroken (0.00s)\n"}
{"Action":"fail","Package":"ex/failing","Test":"TestBroken"}
{"Action":"run","Package":"ex/failing","Test":"TestFine"}
{"Action":"output","Package":"ex/failing","Test":"TestFine","Output":"--- PASS: TestFine (0.00s)\n"}
{"Action":"pass","Package":"ex/failing","Test":"TestFine"}
{"Action":"output","Package":"ex/failing","Output":"FAIL\n"}
{"Action":"output","Package":"ex/failing","Output":"FAIL\tex/failing\t0.011s\n"}
{"Action":"fail","Package":"ex/failing"}
{"Action":"run","Package":"ex/mainfail","Test":"TestFine"}
{"Action":"output","Package":"ex/mainfail","Test":"TestFine","Output":"--- PASS: TestFine (0.00s)\n"}
{"Action":"pass","Package":"ex/mainfail","Test":"TestFine"}
{"Action":"output","Package":"ex/mainfail","Output":"PASS\n"}
{"Action":"output","Package":"ex/mainfail","Output":"goleak: found unexpected goroutines:\n"}
{"Action":"output","Package":"ex/mainfail","Output":"FAIL\tex/mainfail\t0.022s\n"}
{"Action":"fail","Package":"ex/mainfail"}
{"Action":"run","Package":"ex/ok","Test":"TestFine"}
{"Action":"pass","Package":"ex/ok","Test":"TestFine"}
{"Action":"output","Package":"ex/ok","Output":"ok  \tex/ok\t0.088s\n"}
{"Action":"pass","Package":"ex/ok"}
{"Action":"run","Package":"ex/panicky","Test":"TestCrash"}
{"Action":"output","Package":"ex/panicky","Test":"TestCrash","Output":"    p_test.go:4: before\n"}
{"Action":"output","Package":"ex/panicky","Test":"TestCrash","Output":"--- FAIL: TestCrash (0.00s)\n"}
{"Action":"output","Package":"ex/panicky","Test":"TestCrash","Output":"panic: assignment to entry in nil map [recovered, repanicked]\n"}
{"Action":"output","Package":"ex/panicky","Test":"TestCrash","Output":"\n"}
{"Action":"output","Package":"ex/panicky","Test":"TestCrash","Output":"goroutine 20 [running]:\n"}
{"Action":"fail","Package":"ex/panicky","Test":"TestCrash"}
{"Action":"output","Package":"ex/panicky","Output":"FAIL\tex/panicky\t0.114s\n"}
{"Action":"fail","Package":"ex/panicky"}
{"Action":"run","Package":"ex/timeout","Test":"TestSlow"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"run","Package":"ex/timeout","Test":"TestOther"}
{"Action":"output","Package":"ex/timeout","Test":"TestOther","Output":"    t_test.go:9: a log line before the end\n"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"panic: test timed out after 45m0s\n"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"\trunning tests:\n"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"\t\tTestOther (44m58s)\n"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"\t\tTestSlow (45m0s)\n"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"\n"}
{"Action":"output","Package":"ex/timeout","Test":"TestSlow","Output":"goroutine 5 [running]:\n"}
{"Action":"output","Package":"ex/timeout","Output":"FAIL\tex/timeout\t2700.053s\n"}
{"Action":"fail","Package":"ex/timeout"}
`

// Each failed package is named with the most telling reason it gave,
// in the order the packages ended; a package that passed is not named.
func TestNamesEveryFailedPackageAndWhy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte(failures), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	n, err := listFailed([]string{path}, &out)
	if err != nil || n != 5 {
		t.Fatalf("listFailed: %d, %v; want 5 packages", n, err)
	}
	want := "5 packages failed:\n" +
		"  ex/build: build failed\n" +
		"      build/b_test.go:3:28: undefined: undefined\n" +
		"  ex/failing: TestBroken/case failed\n" +
		"      f_test.go:3: got 1,\n" +
		"          want 2\n" +
		"  ex/mainfail: failed after its tests passed:\n" +
		"      goleak: found unexpected goroutines:\n" +
		"  ex/panicky: panic: assignment to entry in nil map [recovered, repanicked] (in TestCrash)\n" +
		"  ex/timeout: timed out after 45m0s, running TestOther (44m58s), TestSlow (45m0s)\n"
	if out.String() != want {
		t.Errorf("listed:\n%s\nwant:\n%s", out.String(), want)
	}
}

// Several failed tests are each named with what they said; past a few, the
// rest are counted; a long message is cut.
func TestNamesFailedTestsWithWhatTheySaid(t *testing.T) {
	var events strings.Builder
	for _, name := range []string{"TestA", "TestB", "TestC", "TestD", "TestE", "TestF", "TestG"} {
		events.WriteString(`{"Action":"output","Package":"ex/p","Test":"` + name + `","Output":"    p_test.go:1: ` + name + ` broke` + strings.Repeat("!", 300) + `\n"}` + "\n")
		events.WriteString(`{"Action":"fail","Package":"ex/p","Test":"` + name + `"}` + "\n")
	}
	events.WriteString(`{"Action":"fail","Package":"ex/p"}` + "\n")
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte(events.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if n, err := listFailed([]string{path}, &out); err != nil || n != 1 {
		t.Fatalf("listFailed: %d, %v; want 1 package", n, err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if want := "  ex/p: TestA, TestB, TestC, TestD, TestE failed, and 2 more"; len(lines) < 2 || lines[1] != want {
		t.Fatalf("listed:\n%s\nwant a second line %q", out.String(), want)
	}
	if len(lines) != 2+maxTests {
		t.Fatalf("listed %d lines, want %d:\n%s", len(lines), 2+maxTests, out.String())
	}
	for i, l := range lines[2:] {
		name := []string{"TestA", "TestB", "TestC", "TestD", "TestE"}[i]
		if !strings.HasPrefix(l, "      "+name+": p_test.go:1: "+name+" broke!!!") || !strings.HasSuffix(l, "!...") || len(l) != len("      "+name+": ")+maxLength {
			t.Errorf("line %q: want %s's message, cut at %d characters", l, name, maxLength)
		}
	}
}

// A run in which nothing failed says so, and counts nothing.
func TestNothingFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if n, err := listFailed([]string{path}, &out); err != nil || n != 0 {
		t.Fatalf("listFailed: %d, %v", n, err)
	}
	if out.String() != "No package failed.\n" {
		t.Errorf("listed %q", out.String())
	}
}

// A test's status is what became of it: a failure anywhere wins over a
// pass, a pass over a skip; a test that did not run, or never ended, is
// absent.
func TestStatusOfOneTest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	again := `{"Action":"fail","Package":"ex/z","Test":"TestFine"}` + "\n"
	if err := os.WriteFile(path, []byte(events+failures+second+again), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"TestBroken":      "fail",
		"TestBroken/case": "fail",
		"TestFine":        "fail",
		"TestCrash":       "fail",
		"TestLater":       "pass",
		"TestNode":        "skip",
		"TestSlow":        "absent",
		"TestNoSuchTest":  "absent",
	} {
		got, err := testStatus(name, path)
		if err != nil || got != want {
			t.Errorf("testStatus(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := testStatus("TestFine", filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Errorf("testStatus of a missing file: no error")
	}
}
