package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Exit statuses.
const (
	exitOK         = 0
	exitUnreadable = 1 // the log had lines that could not be read; the rest was shown
	exitUsage      = 2 // bad arguments
	exitFile       = 3 // the log cannot be opened or read or is not a log, or -html's or -o's file cannot be written
	exitWrite      = 4 // writing to standard output failed

	exitHelp = -1 // from parse: the usage was asked for and shown; exit 0
)

const usage = `callbacklog shows what a Pulumi deployment's callbacks did, from the log every
pulumi command writes (pulumi logs decrypt --latest | callbacklog show -) or
the engine's gRPC log (PULUMI_DEBUG_GRPC=FILE pulumi up), told by content.

Usage:
  callbacklog show [-v] [-json] [-html FILE] [-trace FILE] [-secrets] [filters] LOG
  callbacklog diff [-json] [-secrets] OLD NEW
  callbacklog scrub [-o FILE] LOG

show    prints an account of every callback call, resource by resource: which
        transforms, hooks, error hooks and state migrations ran, in order, with
        their outcome and duration; what each transform or migration changed,
        by property path (old → new); each hook refusal; each error hook retry
        with the error it saw. From the gRPC log also: the calls never
        answered (first), the runs (preview, update) the calls are grouped by,
        a header (project, stack, versions, each run's result and first
        error), and each resource's provider steps (Check, Create, ...); for a
        preview, the hooks an update would run, per resource, and the step
        they follow from.
          -v          also show, under each call, its whole request and its
                      whole answer, by property path (as JSON values with
                      -json)
          -json       one JSON object per call instead (JSON Lines)
          -html FILE  also write a timeline of the calls per resource, as one
                      self-contained HTML file
          -trace FILE also write the calls as a trace (Trace Event JSON) that
                      ui.perfetto.dev and about://tracing open: a lane per
                      resource, a slice per call
          -secrets    print secret values (by default each is "[secret]",
                      wherever it appears: in a value, a message, an error)
        Filters keep only some calls and steps, in every view; each may be
        given several times or with values separated by commas (any value
        matches), and together they keep what all of them keep:
          -resource GLOB  the resource's name, type or URN (* matches any
                          text, / included; ? any one character)
          -kind KIND      resource-transform, invoke-transform,
                          resource-hook, error-hook, state-migration,
                          provider-step
          -outcome WORD   changed, unchanged, ok, refused, retry, failed,
                          unanswered, ... (the account's words)
          -run RUN        preview or update
diff    compares the accounts of two logs, resource by resource: the calls
        that appeared, disappeared, or changed their outcome, their changes,
        a hook's refusal, the failure an error hook saw. Calls are matched by
        resource, kind and registration, in order. Times are not compared.
        It exits 0 when the accounts are the same (and says so in one line),
        1 when they differ or lines of either log could not be read.
          -json       one JSON object per call that differs instead
          -secrets    as for show; a value either log marks secret is
                      hidden in both
scrub   writes LOG, either log, with every secret and configuration value
        replaced by a placeholder, so that it can be shared or committed as
        test data.
          -o FILE     write FILE (replaced whole, at once; it may be LOG)
                      instead of standard output

LOG, OLD and NEW are files, or - for standard input. The exit status is
  0  every line of the log was read (a log without callback calls included);
     for diff, the accounts are the same
  1  some lines could not be read: the rest is shown, and they are named;
     for diff, also: the accounts differ
  2  a usage error
  3  the log cannot be opened or read or is not a log (a directory, an empty
     or compressed file, text that is not the engine's JSON Lines), or the
     file of -html, -trace or -o cannot be written
  4  writing to standard output failed
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command, with its streams given; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "show":
		return show(args[1:], stdin, stdout, stderr)
	case "scrub":
		return scrub(args[1:], stdin, stdout, stderr)
	case "diff":
		return diffLogs(args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return usageError(stderr, "unknown command %q", args[0])
}

func usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "callbacklog: "+format+"\n\n", args...)
	fmt.Fprint(stderr, usage)
	return exitUsage
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // usage errors are reported once, with the whole usage
	return fs
}

// parse parses args with fs and wants exactly one LOG argument. Flags may
// come before or after it.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (string, int) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) { // -h asks for the usage: not an error
				fmt.Fprint(stderr, usage)
				return "", exitHelp
			}
			return "", usageError(stderr, "%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		return "", usageError(stderr, "%s: want one LOG argument (a file, or - for standard input), got %d", fs.Name(), len(positional))
	}
	return positional[0], exitOK
}

func show(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("show", stderr)
	asJSON := fs.Bool("json", false, "")
	htmlFile := fs.String("html", "", "")
	traceFile := fs.String("trace", "", "")
	secrets := fs.Bool("secrets", false, "")
	verbose := fs.Bool("v", false, "")
	var only filter
	only.flags(fs)
	name, code := parse(fs, args, stderr)
	if code == exitHelp {
		return exitOK
	}
	if code != exitOK {
		return code
	}
	in, err := openLog(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: %v\n", err)
		return exitFile
	}
	defer in.close()
	var recs []*record
	var problems []problem
	d := &deployment{}
	from := fromGRPC
	if in.auto {
		var info autoInfo
		recs, problems, info = readAutoLog(in, *secrets)
		from = info.origin()
		if len(recs) == 0 {
			err = in.checkAuto(info)
		}
	} else {
		recs, problems, d = readLog(in, *secrets, *verbose)
		if len(recs) == 0 {
			err = in.check()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: %v\n", err)
		return exitFile
	}
	if !*verbose {
		dropPayloads(recs)
	}
	source := in.source
	if only.on() {
		recs = only.apply(recs, d)
		if len(recs) == 0 && len(d.Steps) == 0 && len(d.Plans) == 0 {
			fmt.Fprintf(stderr, "callbacklog: %s: no call matches %s\n", in.source, only.String())
			return exitOK
		}
		source += " (only " + only.String() + ")"
	}
	if len(recs) == 0 && *asJSON {
		fmt.Fprintf(stderr, "callbacklog: %s: no callback calls\n%s\n", in.source, from.noCalls())
	}

	out := bufio.NewWriter(stdout)
	if *asJSON {
		err = writeJSON(out, from, recs, problems, d)
	} else {
		err = writeText(out, source, from, recs, problems, d)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: writing the account: %v\n", err)
		return exitWrite
	}
	if *htmlFile != "" {
		if err := writeHTMLFile(*htmlFile, source, from, recs, problems, d); err != nil {
			fmt.Fprintf(stderr, "callbacklog: %v\n", err)
			return exitFile
		}
	}
	if *traceFile != "" {
		if err := writeTraceFile(*traceFile, source, recs, d); err != nil {
			fmt.Fprintf(stderr, "callbacklog: %v\n", err)
			return exitFile
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "callbacklog: %s of %s could not be read (listed at the end)\n",
			plural(len(problems), "line", "lines"), in.source)
		return exitUnreadable
	}
	return exitOK
}

// noCallsWhy is what the account says of a gRPC log without callback
// calls, after "no callback calls".
const noCallsWhy = "The log is not empty, but no callback was called: the program registered no\n" +
	"transform, hook, error hook or state migration, or its CLI is older than the\n" +
	"logging of callbacks (mid-2025)."

// noCallsWhyAuto is what the account says of an automatic log of a
// deployment without callback calls.
const noCallsWhyAuto = "The log is of a deployment, but the engine logged no callback call: the\n" +
	"program registered no transform, hook, error hook or state migration, or none\n" +
	"applied to what the deployment did."

func (o origin) noCalls() string {
	if o.Key == fromAuto.Key {
		return noCallsWhyAuto
	}
	return noCallsWhy
}

func writeHTMLFile(name, source string, from origin, recs []*record, problems []problem, d *deployment) error {
	return writeBuffered(name, func(w io.Writer) error { return writeHTML(w, source, from, recs, problems, d) })
}

// writeBuffered creates the file name and writes it with write, buffered.
func writeBuffered(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

func scrub(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("scrub", stderr)
	outFile := fs.String("o", "", "")
	name, code := parse(fs, args, stderr)
	if code == exitHelp {
		return exitOK
	}
	if code != exitOK {
		return code
	}
	in, err := openLog(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: %v\n", err)
		return exitFile
	}
	defer in.close()
	if in.auto {
		return scrubAuto(name, in, *outFile, stdout, stderr)
	}
	// replay.Scrub reads a log it can go back in twice, so that a secret is
	// replaced even before the entry that marks it: a file is given to it
	// so, still counted as in counts.
	src := io.Reader(in)
	if f := openRegular(name); f != nil {
		defer f.Close()
		in.counter = &counter{r: f}
		src = &seekableLog{counter: in.counter, f: f}
	}
	if *outFile != "" {
		err := writeAtomically(*outFile, func(w io.Writer) error {
			if err := scrubLog(w, src); err != nil {
				return fmt.Errorf("scrubbing %s: %w", in.source, err)
			}
			return in.check()
		})
		if err != nil {
			fmt.Fprintf(stderr, "callbacklog: %v\n", err)
			return exitFile
		}
		return exitOK
	}
	// Nothing is written before the input shows itself a log: what comes
	// before its first entry is held back.
	out := &heldWriter{w: stdout, in: in}
	err = scrubLog(out, src)
	if err == nil && in.entries == 0 {
		err = in.check()
	}
	if err == nil {
		err = out.release()
	}
	switch {
	case err == nil:
		return exitOK
	case out.err != nil:
		fmt.Fprintf(stderr, "callbacklog: writing the scrubbed log: %v\n", out.err)
		return exitWrite
	}
	var nl *notLogError
	if !errors.As(err, &nl) {
		err = fmt.Errorf("scrubbing %s: %w", in.source, err)
	}
	fmt.Fprintf(stderr, "callbacklog: %v\n", err)
	return exitFile
}

// openRegular opens the file name again if it is a regular file, which can
// be read twice; it returns nil for standard input, a pipe, or a file that
// cannot be opened.
func openRegular(name string) *os.File {
	if name == "-" {
		return nil
	}
	if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	return f
}

// seekableLog is a log file read through a counter that can go back to its
// start, as replay.Scrub wants of a log it reads twice.
type seekableLog struct {
	*counter
	f *os.File
}

// Seek seeks the file; back at its start, the counter is at a line's start.
func (s *seekableLog) Seek(offset int64, whence int) (int64, error) {
	n, err := s.f.Seek(offset, whence)
	if err == nil && n == 0 {
		s.pos = 0
	}
	return n, err
}

// scrubAuto scrubs Pulumi's automatic log in, read from the file name
// (or standard input, "-"), which it reads twice: what is not a regular
// file (standard input, a pipe) is held in memory for the second reading.
func scrubAuto(name string, in *input, outFile string, stdout, stderr io.Writer) int {
	first := io.Reader(in)
	again := func() (io.ReadCloser, error) { return os.Open(name) }
	if fi, err := os.Stat(name); name == "-" || err != nil || !fi.Mode().IsRegular() {
		data, err := io.ReadAll(in)
		if err != nil {
			fmt.Fprintf(stderr, "callbacklog: reading %s: %v\n", in.source, err)
			return exitFile
		}
		first = bytes.NewReader(data)
		again = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	if outFile != "" {
		err := writeAtomically(outFile, func(w io.Writer) error {
			if err := scrubAutoLog(w, first, again); err != nil {
				return fmt.Errorf("scrubbing %s: %w", in.source, err)
			}
			return nil
		})
		if err != nil {
			fmt.Fprintf(stderr, "callbacklog: %v\n", err)
			return exitFile
		}
		return exitOK
	}
	out := &errWriter{w: stdout}
	err := scrubAutoLog(out, first, again)
	switch {
	case err == nil:
		return exitOK
	case out.err != nil:
		fmt.Fprintf(stderr, "callbacklog: writing the scrubbed log: %v\n", out.err)
		return exitWrite
	}
	fmt.Fprintf(stderr, "callbacklog: scrubbing %s: %v\n", in.source, err)
	return exitFile
}

// errWriter writes to w and keeps the error writing to it.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// heldWriter writes to w once in has shown an entry of a log, holding back
// what comes before; it keeps the error writing to w.
type heldWriter struct {
	w    io.Writer
	in   *input
	held []byte
	err  error
}

func (h *heldWriter) Write(p []byte) (int, error) {
	if h.in.entries == 0 {
		h.held = append(h.held, p...)
		return len(p), nil
	}
	if err := h.release(); err != nil {
		return 0, err
	}
	n, err := h.w.Write(p)
	if err != nil {
		h.err = err
	}
	return n, err
}

// release writes what was held back.
func (h *heldWriter) release() error {
	if h.err != nil || len(h.held) == 0 {
		return h.err
	}
	_, h.err = h.w.Write(h.held)
	h.held = nil
	return h.err
}

// writeAtomically writes the file name with write, through a temporary file
// in the same directory renamed over it: name is whole or untouched, even
// when it is the file being read.
func writeAtomically(name string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	if err := write(w); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(name); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return os.Rename(tmp.Name(), name)
}
