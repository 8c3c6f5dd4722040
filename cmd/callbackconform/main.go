package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/langhost/callbacks/enginetest"
)

// Exit statuses.
const (
	exitPass    = 0
	exitFail    = 1
	exitCantRun = 2
)

// memoryLimit is the kit's soft memory limit: a 300 MiB request and its
// answer, with room to spare.
const memoryLimit = 1 << 30

// registerTimeout bounds how long the kit waits for the program to register
// its callbacks and call SignalAndWaitForShutdown.
const registerTimeout = 3 * time.Minute

func main() {
	// The largest payloads are held once each way; a soft limit makes the
	// collector return them before the next one instead of letting the
	// heap double.
	debug.SetMemoryLimit(memoryLimit)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Row is one line of the report: a clause's verdict for one kind of
// callback.
type Row struct {
	Clause   string `json:"clause"`
	Level    string `json:"level"`
	Kind     string `json:"kind"`
	Verdict  string `json:"verdict"`
	Evidence string `json:"evidence"`
}

// Report is what the kit found, as printed and as written by -json.
type Report struct {
	Program   []string     `json:"program"`
	Callbacks []registered `json:"callbacks"`
	Rows      []Row        `json:"rows"`
	// ProgramExit says how the program ended after the checks.
	ProgramExit string `json:"programExit"`
	// Exit is the kit's exit status: 0 every MUST clause passed, 1 one
	// failed, 2 the kit could not run.
	Exit  int    `json:"exit"`
	Error string `json:"error,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("callbackconform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.String("json", "", "also write the report as JSON to `FILE`")
	verbose := fs.Bool("v", false, "show the program's output and the engine's trace")
	runRE := fs.String("run", "", "check only the clauses whose id matches `REGEXP`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: callbackconform [-json FILE] [-v] [-run REGEXP] -- PROGRAM [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitCantRun
	}
	prog := fs.Args()
	if len(prog) == 0 {
		fs.Usage()
		return exitCantRun
	}
	var filter *regexp.Regexp
	if *runRE != "" {
		re, err := regexp.Compile(*runRE)
		if err != nil {
			fmt.Fprintf(stderr, "callbackconform: -run: %v\n", err)
			return exitCantRun
		}
		filter = re
	}
	rep := check(ctx, prog, filter, *verbose, stderr)
	printTable(stdout, rep)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "callbackconform: writing %s: %v\n", *jsonOut, err)
			return exitCantRun
		}
	}
	return rep.Exit
}

// check runs the program on the simulator, checks its callbacks and
// returns the report.
func check(ctx context.Context, prog []string, filter *regexp.Regexp, verbose bool, log io.Writer) *Report {
	rep := &Report{Program: prog}
	cantRun := func(format string, args ...any) *Report {
		rep.Error = fmt.Sprintf(format, args...)
		rep.Exit = exitCantRun
		return rep
	}
	if err := checkRequestsComplete(); err != nil {
		return cantRun("%v", err)
	}
	ready := make(chan struct{})
	release := make(chan struct{})
	eng, err := enginetest.Start(
		enginetest.WithProject("kit"), enginetest.WithStack("conform"),
		enginetest.BeforeShutdown(func(ctx context.Context) {
			close(ready)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}))
	if err != nil {
		return cantRun("starting the engine: %v", err)
	}
	defer eng.Close()

	// The program's arguments may name the engine's addresses, for runners
	// that take them as flags: ${PULUMI_MONITOR} and the like.
	env := map[string]string{}
	for _, kv := range eng.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	expanded := make([]string, len(prog))
	for i, a := range prog {
		expanded[i] = os.Expand(a, func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return "${" + k + "}"
		})
	}
	cmd := exec.Command(expanded[0], expanded[1:]...)
	dieWithParent(cmd)
	var output lockedBuffer
	if verbose {
		cmd.Stdout, cmd.Stderr = log, log
	} else {
		cmd.Stdout, cmd.Stderr = &output, &output
	}
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	type outcome struct {
		res *enginetest.Result
		err error
	}
	exited := make(chan outcome, 1)
	go func() {
		res, err := eng.RunCommand(runCtx, cmd)
		exited <- outcome{res, err}
	}()
	finish := func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}
	defer finish()

	timer := time.NewTimer(registerTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case o := <-exited:
		msg := "the program exited before calling SignalAndWaitForShutdown"
		switch {
		case o.err != nil:
			msg = o.err.Error()
		case o.res != nil && o.res.Err != nil:
			msg += ": " + o.res.Err.Error()
		}
		return cantRun("%s\n%s", msg, output.String())
	case <-timer.C:
		return cantRun("the program did not call SignalAndWaitForShutdown within %v\n%s", registerTimeout, output.String())
	case <-ctx.Done():
		return cantRun("interrupted")
	}

	rep.Callbacks = callbacksOf(eng)
	if len(rep.Callbacks) == 0 {
		return cantRun("the program registered no callbacks")
	}
	conns := map[string]*grpc.ClientConn{}
	targets := map[string]*target{}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	pid := eng.ProgramPID()
	var checkers []*checker
	for _, cb := range rep.Callbacks {
		conn, ok := conns[cb.Target]
		if !ok {
			conn, err = grpc.NewClient(cb.Target,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
			if err != nil {
				return cantRun("dialing %s: %v", cb.Target, err)
			}
			conns[cb.Target] = conn
			targets[cb.Target] = &target{}
		}
		checkers = append(checkers, &checker{cb: cb, k: kinds[cb.Kind], conn: conn, pid: pid, target: targets[cb.Target],
			logf: func(format string, args ...any) {
				if verbose {
					fmt.Fprintf(log, format+"\n", args...)
				}
			}})
	}

	results := map[string]map[*checker]result{}
	record := func(cl clause, c *checker, r result) {
		if results[cl.ID] == nil {
			results[cl.ID] = map[*checker]result{}
		}
		results[cl.ID][c] = r
		c.logf("%s %s %q: %s: %s", cl.ID, c.cb.Kind, c.cb.Name, r.verdict, r.evidence)
	}
	selected := func(cl clause) bool { return filter == nil || filter.MatchString(cl.ID) }
	// Every phase goes through the kinds in the report's order, except the
	// last, which goes backwards: the hooks only receive the largest
	// payload, the transforms must send it back too, and a server that
	// dies of that should not leave the hooks unmeasured.
	slices.SortStableFunc(checkers, func(a, b *checker) int {
		return slices.Index(kindOrder, a.cb.Kind) - slices.Index(kindOrder, b.cb.Kind)
	})
	reversed := slices.Clone(checkers)
	slices.Reverse(reversed)
	for phase := range 3 {
		order := checkers
		if phase == 2 {
			order = reversed
		}
		for _, c := range order {
			for _, cl := range contract {
				if cl.run == nil || cl.phase != phase || !selected(cl) {
					continue
				}
				if ctx.Err() != nil {
					return cantRun("interrupted")
				}
				if c.target.dead != "" {
					record(cl, c, result{skipped, "the server stopped answering after " + c.target.dead})
					continue
				}
				record(cl, c, cl.run(ctx, c))
			}
		}
	}
	for _, c := range checkers {
		for _, cl := range contract {
			if cl.run != nil || !selected(cl) {
				continue
			}
			switch cl.ID {
			case "stays-up":
				record(cl, c, c.stayedUp())
			case "no-stack-trace":
				record(cl, c, c.noStackTrace())
			}
		}
	}

	// Let the program finish, and say how it ended.
	finish()
	select {
	case o := <-exited:
		switch {
		case o.err != nil:
			rep.ProgramExit = o.err.Error()
		case o.res.Err != nil:
			rep.ProgramExit = o.res.Err.Error()
		default:
			rep.ProgramExit = "exited 0"
		}
	case <-time.After(10 * time.Second):
		rep.ProgramExit = "still running 10s after SignalAndWaitForShutdown returned; stopped"
		cancelRun()
		<-exited
	}
	if verbose {
		fmt.Fprintln(log, eng.Trace())
	}

	rep.Rows = rows(results, checkers, selected)
	rep.Exit = exitPass
	for _, r := range rep.Rows {
		if r.Level == must && r.Verdict == fail {
			rep.Exit = exitFail
		}
	}
	return rep
}

// callbacksOf lists the callbacks the program registered, in order.
func callbacksOf(eng *enginetest.Engine) []registered {
	var out []registered
	for _, ev := range eng.Events(enginetest.KindRegisterStackTransform, enginetest.KindRegisterStackInvokeTransform,
		enginetest.KindRegisterResourceHook, enginetest.KindRegisterErrorHook) {
		if ev.Err != "" {
			continue
		}
		r := registered{Name: ev.Name}
		var cb *pulumirpc.Callback
		switch req := ev.Request.(type) {
		case *pulumirpc.Callback:
			cb = req
		case *pulumirpc.RegisterResourceHookRequest:
			cb = req.GetCallback()
			r.Name = req.GetName()
		case *pulumirpc.RegisterErrorHookRequest:
			cb = req.GetCallback()
			r.Name = req.GetName()
		}
		if cb == nil {
			continue
		}
		switch ev.Kind {
		case enginetest.KindRegisterStackTransform:
			r.Kind = kindResourceTransform
		case enginetest.KindRegisterStackInvokeTransform:
			r.Kind = kindInvokeTransform
		case enginetest.KindRegisterResourceHook:
			r.Kind = kindResourceHook
		case enginetest.KindRegisterErrorHook:
			r.Kind = kindErrorHook
		}
		r.Target, r.Token, r.AcceptsByteString = cb.GetTarget(), cb.GetToken(), cb.GetAcceptsByteString()
		out = append(out, r)
	}
	return out
}

// rows builds the report's rows: one per clause and kind, in the
// contract's order; kinds the program did not register are not applicable.
func rows(results map[string]map[*checker]result, checkers []*checker, selected func(clause) bool) []Row {
	var out []Row
	for _, cl := range contract {
		if !selected(cl) {
			continue
		}
		for _, k := range kindOrder {
			row := Row{Clause: cl.ID, Level: cl.Level, Kind: k}
			var mine []*checker
			for _, c := range checkers {
				if c.cb.Kind == k {
					mine = append(mine, c)
				}
			}
			if len(mine) == 0 {
				row.Verdict, row.Evidence = na, "the program registered no "+k
				out = append(out, row)
				continue
			}
			row.Verdict = na
			var evidence []string
			for _, c := range mine {
				r, ok := results[cl.ID][c]
				if !ok {
					continue
				}
				ev := r.evidence
				if len(mine) > 1 {
					ev = fmt.Sprintf("%s: %s", c.cb.Name, ev)
				}
				switch {
				case r.verdict == fail:
					if row.Verdict != fail {
						evidence = nil
					}
					row.Verdict = fail
					evidence = append(evidence, ev)
				case r.verdict == pass && row.Verdict != fail:
					row.Verdict = pass
					evidence = append(evidence, ev)
				case r.verdict == skipped && row.Verdict != fail && row.Verdict != pass:
					row.Verdict = skipped
					evidence = append(evidence, ev)
				case r.verdict == na && row.Verdict == na:
					evidence = append(evidence, ev)
				}
			}
			row.Evidence = strings.Join(slices.Compact(evidence), " | ")
			out = append(out, row)
		}
	}
	return out
}

func printTable(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "program: %s\n", strings.Join(rep.Program, " "))
	for _, cb := range rep.Callbacks {
		fmt.Fprintf(w, "callback: %s %q at %s (accepts byte strings: %v)\n", cb.Kind, cb.Name, cb.Target, cb.AcceptsByteString)
	}
	if rep.Error != "" {
		fmt.Fprintf(w, "the kit could not run: %s\n", strings.TrimSpace(rep.Error))
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLAUSE\tLEVEL\tKIND\tVERDICT\tEVIDENCE")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Clause, r.Level, r.Kind, r.Verdict, oneLine(r.Evidence))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "program: %s\n", oneLine(rep.ProgramExit))
	switch rep.Exit {
	case exitPass:
		fmt.Fprintln(w, "result: every MUST clause passed")
	case exitFail:
		fmt.Fprintln(w, "result: a MUST clause failed")
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// lockedBuffer collects the program's output, written from two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
