// Command testreport shows the events of `go test -json` as `go test` shows
// them without -json, and then says which packages failed and why, and
// which tests did not run and why.
//
//	go test -json ./... | testreport -save run.json
//	testreport -failed run.json [more.json ...]
//	testreport -skipped run.json [more.json ...]
//	testreport -status TestName run.json
//
// With -save, it reads the events from standard input, prints what go test
// would have printed (each package's result, and the output of each test
// that failed) and copies the events to the file. With -failed, it reads
// saved events and names every package that failed, each with its reason in
// a few lines: the build's errors, "timed out after" and the tests that were
// running, a panic and the test it came from, or the failed tests and what
// they said. With -skipped, it lists every test that was skipped in all the
// files, with the reason the test gave; a test that ran in any of them is
// not listed. Both exit with status 1 if they listed any. With -status, it
// prints what became of one test in the file: pass, fail, skip, or absent
// (the test did not run, or did not end). Every mode exits with status 2 if
// it could not do its work. test.sh at the repository root uses them all.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of `go test -json` (see `go doc cmd/test2json`), or of
// the build events the go command writes beside them.
type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	FailedBuild string
}

func main() {
	save := flag.String("save", "", "read events from standard input, show them, and copy them to this file")
	skipped := flag.Bool("skipped", false, "list the tests the saved event files (the arguments) skipped")
	failed := flag.Bool("failed", false, "list the packages that failed in the saved event files (the arguments), with their reasons")
	status := flag.String("status", "", "print what became of this test in the saved event file (the argument)")
	flag.Parse()
	modes := 0
	for _, on := range []bool{*save != "", *skipped, *failed, *status != ""} {
		if on {
			modes++
		}
	}
	var err error
	var n int
	switch {
	case modes != 1:
		err = errors.New("usage: testreport -save FILE < events, testreport -failed FILE [FILE ...], testreport -skipped FILE [FILE ...], or testreport -status TEST FILE")
	case *save != "":
		err = saveAndShow(*save, os.Stdin, os.Stdout)
	case *skipped:
		n, err = listSkipped(flag.Args(), os.Stdout)
	case *failed:
		n, err = listFailed(flag.Args(), os.Stdout)
	case flag.NArg() != 1:
		err = errors.New("usage: testreport -status TEST FILE")
	default:
		var st string
		st, err = testStatus(*status, flag.Arg(0))
		if err == nil {
			fmt.Println(st)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if n > 0 {
		os.Exit(1)
	}
}

// saveAndShow copies the events of in to the file path and shows them on w.
func saveAndShow(path string, in io.Reader, w io.Writer) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	s := newShower(w)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if _, err := f.Write(append(line, '\n')); err != nil {
			return err
		}
		var ev event
		if json.Unmarshal(line, &ev) != nil {
			// Not an event: something the go command printed as it is.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		s.show(ev)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return f.Close()
}

// shower prints events as go test prints its results without -json: for a
// package that passed, its result line; for one that failed, the output of
// its failed tests and its own.
type shower struct {
	w      io.Writer
	output map[string][]string // the output of each test and package still running, by package and test
	order  []string            // the keys of output, in the order they began
}

func newShower(w io.Writer) *shower {
	return &shower{w: w, output: map[string][]string{}}
}

// flush prints and forgets the output of key.
func (s *shower) flush(key string) {
	for _, o := range s.output[key] {
		fmt.Fprint(s.w, o)
	}
	s.forget(key)
}

func (s *shower) forget(key string) {
	delete(s.output, key)
	s.order = slices.DeleteFunc(s.order, func(k string) bool { return k == key })
}

func (s *shower) show(ev event) {
	key := ev.Package + " " + ev.Test
	switch {
	case ev.Action == "build-output":
		fmt.Fprint(s.w, ev.Output)
	case ev.Action == "output":
		if strings.HasPrefix(ev.Output, "=== ") {
			return
		}
		if _, ok := s.output[key]; !ok {
			s.order = append(s.order, key)
		}
		s.output[key] = append(s.output[key], ev.Output)
	case ev.Test == "" && ev.Action == "fail":
		// A test binary that crashed leaves tests without an end: their
		// output comes first, then the package's own.
		for _, k := range slices.Clone(s.order) {
			if k != key && strings.HasPrefix(k, ev.Package+" ") {
				s.flush(k)
			}
		}
		s.flush(key)
	case ev.Action == "fail":
		s.flush(key)
	case ev.Test == "" && (ev.Action == "pass" || ev.Action == "skip"):
		// Only the result line, which go test writes last ("ok ...",
		// or "?" for a package without tests).
		if out := s.output[key]; len(out) > 0 {
			fmt.Fprint(s.w, out[len(out)-1])
		}
		s.forget(key)
	case ev.Action == "pass" || ev.Action == "skip":
		s.forget(key)
	}
}

// skip is a test that did not run, and why.
type skip struct {
	pkg, test, why string
}

// listSkipped writes the tests every file of paths skipped, with their
// reasons, by package and test, and returns how many there were.
func listSkipped(paths []string, w io.Writer) (int, error) {
	var order []string
	skips := map[string]skip{}
	ran := map[string]bool{}
	for _, path := range paths {
		if err := readSkips(path, &order, skips, ran); err != nil {
			return 0, err
		}
	}
	var missed []skip
	for _, key := range order {
		if !ran[key] {
			missed = append(missed, skips[key])
		}
	}
	if len(missed) == 0 {
		fmt.Fprintln(w, "No test was skipped.")
		return 0, nil
	}
	slices.SortFunc(missed, func(a, b skip) int {
		return cmp.Or(strings.Compare(a.pkg, b.pkg), strings.Compare(a.test, b.test))
	})
	fmt.Fprintf(w, "%d tests did not run:\n", len(missed))
	for _, sk := range missed {
		fmt.Fprintf(w, "  %s %s: %s\n", sk.pkg, sk.test, sk.why)
	}
	return len(missed), nil
}

// readSkips reads the saved events of path: the tests it skipped, with the
// reason each gave, and the tests that ran.
func readSkips(path string, order *[]string, skips map[string]skip, ran map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	output := map[string][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		key := ev.Package + " " + ev.Test
		switch ev.Action {
		case "output":
			output[key] = append(output[key], ev.Output)
		case "pass", "fail":
			ran[key] = true
		case "skip":
			if _, seen := skips[key]; !seen {
				*order = append(*order, key)
			}
			skips[key] = skip{pkg: ev.Package, test: ev.Test, why: reason(output[key])}
		}
		if ev.Action != "output" && ev.Action != "run" && ev.Action != "cont" && ev.Action != "pause" {
			delete(output, key)
		}
	}
	return sc.Err()
}

// reason is what a skipped test said: its log lines, without the file and
// line they came from and without go test's own lines.
func reason(lines []string) string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		// "file_test.go:26: message"
		if i := strings.Index(l, ".go:"); i >= 0 {
			if j := strings.Index(l[i+4:], ": "); j >= 0 {
				l = l[i+4+j+2:]
			}
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return "(no reason given)"
	}
	return strings.Join(out, " ")
}
