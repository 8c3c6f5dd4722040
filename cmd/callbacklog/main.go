package main

import (
	"bufio"
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
	exitFile       = 3 // the log cannot be opened, or the -html file cannot be written
	exitWrite      = 4 // writing to standard output failed

	exitHelp = -1 // from parse: the usage was asked for and shown; exit 0
)

const usage = `callbacklog shows what a Pulumi deployment's callbacks did, from the engine's
gRPC log (PULUMI_DEBUG_GRPC=FILE pulumi up).

Usage:
  callbacklog show [-json] [-html FILE] [-secrets] LOG
  callbacklog scrub LOG > SCRUBBED

show    prints an account of every callback call, resource by resource: which
        transforms, hooks, error hooks and state migrations ran, in order, with
        their outcome and duration; what each transform or migration changed,
        by property path (old → new); each hook refusal; each error hook retry
        with the error it saw.
          -json       one JSON object per call instead (JSON Lines)
          -html FILE  also write a timeline of the calls per resource, as one
                      self-contained HTML file
          -secrets    print secret values (by default each is "[secret]",
                      wherever it appears: in a value, a message, an error)
scrub   writes LOG with every secret and configuration value replaced by a
        placeholder, so that it can be shared or committed as test data.

LOG is a file, or - for standard input. The exit status is
  0  every line of the log was read
  1  some lines could not be read: the rest is shown, and they are named
  2  a usage error
  3  the log cannot be opened, or the file of -html cannot be written
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

func open(name string, stdin io.Reader) (io.Reader, string, func(), error) {
	if name == "-" {
		return stdin, "standard input", func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, "", nil, err
	}
	return f, name, func() { f.Close() }, nil
}

func show(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("show", stderr)
	asJSON := fs.Bool("json", false, "")
	htmlFile := fs.String("html", "", "")
	secrets := fs.Bool("secrets", false, "")
	name, code := parse(fs, args, stderr)
	if code == exitHelp {
		return exitOK
	}
	if code != exitOK {
		return code
	}
	in, source, done, err := open(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: %v\n", err)
		return exitFile
	}
	defer done()
	if name != "-" {
		source = filepath.Base(name)
	}
	recs, problems := readLog(in, *secrets)

	out := bufio.NewWriter(stdout)
	if *asJSON {
		err = writeJSON(out, recs, problems)
	} else {
		err = writeText(out, source, recs, problems)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: writing the account: %v\n", err)
		return exitWrite
	}
	if *htmlFile != "" {
		if err := writeHTMLFile(*htmlFile, source, recs, problems); err != nil {
			fmt.Fprintf(stderr, "callbacklog: %v\n", err)
			return exitFile
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "callbacklog: %s of %s could not be read (listed at the end)\n",
			plural(len(problems), "line", "lines"), source)
		return exitUnreadable
	}
	return exitOK
}

func writeHTMLFile(name, source string, recs []*record, problems []problem) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = writeHTML(w, source, recs, problems)
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
	name, code := parse(fs, args, stderr)
	if code == exitHelp {
		return exitOK
	}
	if code != exitOK {
		return code
	}
	in, source, done, err := open(name, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "callbacklog: %v\n", err)
		return exitFile
	}
	defer done()
	out := &errWriter{w: stdout}
	if err := scrubLog(out, in); err != nil {
		if out.err != nil {
			fmt.Fprintf(stderr, "callbacklog: writing the scrubbed log: %v\n", out.err)
			return exitWrite
		}
		fmt.Fprintf(stderr, "callbacklog: scrubbing %s: %v\n", source, err)
		return exitFile
	}
	return exitOK
}

// errWriter writes to w and keeps the error doing so.
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
