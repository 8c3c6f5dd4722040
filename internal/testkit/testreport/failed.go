package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// How much of a failure the closing lines show: the whole output is above
// them, as go test printed it.
const (
	maxTests  = 5   // failed tests named per package
	maxLines  = 8   // lines of detail per test, or of a build's errors
	maxLength = 240 // characters per line
)

// pkgRun is what one package's events in one file said.
type pkgRun struct {
	name        string
	failed      bool
	failedBuild string
	output      []line              // every output line of the package and its tests, in order
	testOutput  map[string][]string // each test's output lines
	failedTests []string            // the tests that failed, in the order they ended
}

// line is one line of output and the test it belongs to ("" for the
// package's own).
type line struct {
	test, text string
}

// failure is a package that failed: a summary for one line, and lines of
// detail.
type failure struct {
	pkg, summary string
	detail       []string
}

// listFailed writes every package that failed in the files of paths, with
// its reason, and returns how many there were.
func listFailed(paths []string, w io.Writer) (int, error) {
	var all []failure
	for _, path := range paths {
		fs, err := readFailures(path)
		if err != nil {
			return 0, err
		}
		all = append(all, fs...)
	}
	if len(all) == 0 {
		fmt.Fprintln(w, "No package failed.")
		return 0, nil
	}
	if len(all) == 1 {
		fmt.Fprintln(w, "1 package failed:")
	} else {
		fmt.Fprintf(w, "%d packages failed:\n", len(all))
	}
	for _, f := range all {
		fmt.Fprintf(w, "  %s: %s\n", f.pkg, f.summary)
		for _, d := range f.detail {
			fmt.Fprintf(w, "      %s\n", d)
		}
	}
	return len(all), nil
}

// readFailures reads the saved events of path and returns the packages that
// failed, in the order they ended.
func readFailures(path string) ([]failure, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pkgs := map[string]*pkgRun{}
	build := map[string][]string{} // build output by import path
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Action == "build-output" {
			build[ev.ImportPath] = append(build[ev.ImportPath], ev.Output)
			continue
		}
		if ev.Package == "" {
			continue
		}
		p := pkgs[ev.Package]
		if p == nil {
			p = &pkgRun{name: ev.Package, testOutput: map[string][]string{}}
			pkgs[ev.Package] = p
		}
		switch {
		case ev.Action == "output":
			p.output = append(p.output, line{ev.Test, ev.Output})
			if ev.Test != "" {
				p.testOutput[ev.Test] = append(p.testOutput[ev.Test], ev.Output)
			}
		case ev.Action == "fail" && ev.Test != "":
			p.failedTests = append(p.failedTests, ev.Test)
		case ev.Action == "fail":
			if !p.failed {
				order = append(order, ev.Package)
			}
			p.failed, p.failedBuild = true, ev.FailedBuild
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []failure
	for _, name := range order {
		out = append(out, explain(pkgs[name], build))
	}
	return out, nil
}

// explain says why a package failed, from the most telling sign to the
// least: its build, go test's timeout, a panic, its failed tests, and then
// what it printed after its tests.
func explain(p *pkgRun, build map[string][]string) failure {
	f := failure{pkg: p.name}
	if p.failedBuild != "" {
		f.summary = "build failed"
		for _, l := range build[p.failedBuild] {
			if !strings.HasPrefix(l, "# ") {
				f.detail = append(f.detail, clip(l))
			}
		}
		f.detail = firstLines(f.detail)
		return f
	}
	for i, l := range p.output {
		text := strings.TrimRight(l.text, "\n")
		if after, ok := strings.CutPrefix(text, "panic: test timed out after "); ok {
			f.summary = "timed out after " + after
			if running := runningTests(p.output[i+1:]); len(running) > 0 {
				f.summary += ", running " + strings.Join(running, ", ")
			}
			return f
		}
	}
	for _, l := range p.output {
		text := strings.TrimSpace(l.text)
		if strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: ") {
			f.summary = clip(text)
			if l.test != "" {
				f.summary += " (in " + l.test + ")"
			}
			return f
		}
	}
	if leaves := failedLeaves(p.failedTests); len(leaves) > 0 {
		shown := leaves[:min(len(leaves), maxTests)]
		f.summary = strings.Join(shown, ", ") + " failed"
		if more := len(leaves) - len(shown); more > 0 {
			f.summary += fmt.Sprintf(", and %d more", more)
		}
		for _, t := range shown {
			said := testSaid(p.testOutput[t])
			if len(shown) > 1 && len(said) > 0 {
				said[0] = t + ": " + said[0]
			}
			f.detail = append(f.detail, firstLines(said)...)
		}
		return f
	}
	var said []string
	for _, l := range p.output {
		text := strings.TrimSpace(l.text)
		if l.test != "" || text == "" || text == "PASS" || text == "FAIL" || strings.HasPrefix(text, "FAIL\t") || strings.HasPrefix(text, "ok ") {
			continue
		}
		said = append(said, clip(text))
	}
	if len(said) == 0 {
		f.summary = "failed with no test failing and nothing printed (see its output above)"
		return f
	}
	f.summary = "failed after its tests passed:"
	f.detail = said[max(0, len(said)-maxLines):]
	return f
}

// runningTests reads the lines go test prints after "panic: test timed out
// after ...": "running tests:", then a tab-indented test and how long it had
// run on each line.
func runningTests(lines []line) []string {
	var out []string
	started := false
	for _, l := range lines {
		text := strings.TrimRight(l.text, "\n")
		switch {
		case strings.TrimSpace(text) == "running tests:":
			started = true
		case started && strings.HasPrefix(text, "\t\t"):
			out = append(out, strings.TrimSpace(text))
		case started:
			return out
		}
	}
	return out
}

// failedLeaves keeps the failed tests none of whose subtests failed: their
// output says what went wrong, their parents' only that a subtest failed.
func failedLeaves(tests []string) []string {
	var out []string
	for _, t := range tests {
		leaf := true
		for _, u := range tests {
			if strings.HasPrefix(u, t+"/") {
				leaf = false
				break
			}
		}
		if leaf {
			out = append(out, t)
		}
	}
	return out
}

// testSaid is what a failed test printed, without go test's own lines.
func testSaid(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		// go test indents a test's lines by four spaces, and the lines
		// of a message after its first by four more.
		out = append(out, clip(strings.TrimPrefix(strings.TrimRight(l, "\n"), "    ")))
	}
	return out
}

func firstLines(lines []string) []string {
	if len(lines) <= maxLines {
		return lines
	}
	return append(lines[:maxLines:maxLines], fmt.Sprintf("... (%d more lines above)", len(lines)-maxLines))
}

func clip(s string) string {
	s = strings.TrimRight(s, "\n")
	if len(s) > maxLength {
		return s[:maxLength-3] + "..."
	}
	return s
}

// testStatus says what became of the test named in the events of path:
// fail if it failed in any package, else pass if it passed, else skip if it
// was skipped, else absent.
func testStatus(name, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Test == name {
			seen[ev.Action] = true
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	for _, st := range []string{"fail", "pass", "skip"} {
		if seen[st] {
			return st, nil
		}
	}
	return "absent", nil
}
