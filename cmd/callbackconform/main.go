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
	"google.golang.org/grpc/codes"
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
	// Runs counts the verdicts of the clause's runs on the kind's
	// callbacks, with -count above 1.
	Runs map[string]int `json:"runs,omitempty"`
	// Inputs are the bad inputs the clause sent, byte for byte.
	Inputs []Input `json:"inputs,omitempty"`
}

// Report is what the kit found, as printed and as written by -json.
type Report struct {
	Program   []string     `json:"program"`
	Callbacks []registered `json:"callbacks"`
	Rows      []Row        `json:"rows"`
	// ProgramExit says how the program ended after the checks.
	ProgramExit string `json:"programExit"`
	// Result says in words what Exit says.
	Result string `json:"result"`
	// Exit is the kit's exit status: 0 every MUST clause ran and passed, 1
	// one failed, 2 the kit could not run or no MUST clause could be
	// concluded.
	Exit  int    `json:"exit"`
	Error string `json:"error,omitempty"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("callbackconform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.String("json", "", "also write the report as JSON to `FILE`")
	verbose := fs.Bool("v", false, "show the program's output and the engine's trace")
	runRE := fs.String("run", "", "check only the clauses whose id matches `REGEXP`")
	count := fs.Int("count", 1, "run each clause `N` times on each callback, and report how many times each verdict came (a clause must give one verdict each time)")
	protos := fs.String("protos", "", "write the protocol the kit speaks to `DIR` (a FileDescriptorSet and a README) and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: callbackconform [-json FILE] [-v] [-run REGEXP] [-count N] -- PROGRAM [ARGS...]")
		fmt.Fprintln(stderr, "       callbackconform -protos DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitCantRun
	}
	if *protos != "" {
		if err := writeProtos(*protos); err != nil {
			fmt.Fprintf(stderr, "callbackconform: -protos: %v\n", err)
			return exitCantRun
		}
		fmt.Fprintf(stdout, "wrote %s\n", *protos)
		return exitPass
	}
	prog := fs.Args()
	if *count < 1 {
		fmt.Fprintf(stderr, "callbackconform: -count %d: want 1 or more\n", *count)
		return exitCantRun
	}
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
	rep := check(ctx, prog, filter, *count, *verbose, stderr)
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
func check(ctx context.Context, prog []string, filter *regexp.Regexp, count int, verbose bool, log io.Writer) *Report {
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
	inputs := map[string]map[*checker][]Input{}
	runs := map[string]map[*checker]map[string]int{}
	// record keeps a clause's result for a callback: with -count, the
	// worst of its runs, and how many times each verdict came.
	record := func(cl clause, c *checker, r result) {
		if results[cl.ID] == nil {
			results[cl.ID] = map[*checker]result{}
			inputs[cl.ID] = map[*checker][]Input{}
			runs[cl.ID] = map[*checker]map[string]int{}
		}
		if runs[cl.ID][c] == nil {
			runs[cl.ID][c] = map[string]int{}
		}
		runs[cl.ID][c][r.verdict]++
		if prev, ok := results[cl.ID][c]; !ok || rank[r.verdict] >= rank[prev.verdict] {
			results[cl.ID][c] = r
		}
		if len(inputs[cl.ID][c]) == 0 {
			inputs[cl.ID][c] = c.inputs
		}
		c.inputs = nil
		c.logf("%s %s %q: %s: %s", cl.ID, c.cb.Kind, c.cb.Name, r.verdict, r.evidence)
	}
	selected := func(cl clause) bool { return filter == nil || filter.MatchString(cl.ID) }
	// The phases: ordinary requests for every callback (0), bad inputs (1),
	// then the largest payloads, 64 MiB (2) then 300 MiB (3). Each phase
	// goes through every callback before the next phase starts, in the
	// report's order of kinds, except the last two, which go backwards:
	// the hooks only receive the largest payloads, the transforms must send
	// them back too, and a server that dies of that should not leave the
	// hooks unmeasured.
	slices.SortStableFunc(checkers, func(a, b *checker) int {
		return slices.Index(kindOrder, a.cb.Kind) - slices.Index(kindOrder, b.cb.Kind)
	})
	reversed := slices.Clone(checkers)
	slices.Reverse(reversed)
	for phase := range 4 {
		order := checkers
		if phase >= 2 {
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
				for rep := range count {
					if c.target.dead != "" {
						record(cl, c, skippedResult("the server had stopped answering after %s", c.target.dead))
						continue
					}
					c.unavailable, c.repetition = false, rep
					r := cl.run(ctx, c)
					record(cl, c, r)
					// A call that found the server not answering: if it
					// still does not, every later clause of every callback
					// it serves is not run, and says why.
					if c.unavailable && c.target.dead == "" {
						if err := c.alive(ctx); codeOf(err) == codes.Unavailable {
							c.target.dead = fmt.Sprintf("%s %s", c.cb.Kind, cl.ID)
						}
					}
				}
			}
		}
	}
	selectedID := func(id string) bool {
		for _, cl := range contract {
			if cl.ID == id {
				return selected(cl)
			}
		}
		return false
	}
	for _, c := range checkers {
		for _, cl := range contract {
			if cl.run != nil || !selected(cl) {
				continue
			}
			switch cl.ID {
			case "stays-up":
				record(cl, c, c.stayedUp(selectedID))
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

	rep.Rows = rows(results, inputs, checkers, selected)
	if count > 1 {
		for i, r := range rep.Rows {
			for _, c := range checkers {
				if c.cb.Kind != r.Kind {
					continue
				}
				for v, n := range runs[r.Clause][c] {
					if rep.Rows[i].Runs == nil {
						rep.Rows[i].Runs = map[string]int{}
					}
					rep.Rows[i].Runs[v] += n
				}
			}
		}
	}
	rep.Exit, rep.Result = verdict(rep.Rows)
	return rep
}

// rank orders verdicts from the best to the worst: n/a, pass, not run,
// fail.
var rank = map[string]int{fail: 3, skipped: 2, pass: 1, na: 0}

// verdict concludes a run from its rows: it passes only when at least one
// MUST clause passed and every MUST row of a registered kind passed (or
// does not apply); a MUST row that failed fails it; a MUST row that was not
// run, or a run in which no MUST clause passed, concludes nothing.
func verdict(rows []Row) (int, string) {
	var failedRows, notRun []string
	passes := 0
	for _, r := range rows {
		if r.Level != must {
			continue
		}
		switch r.Verdict {
		case fail:
			failedRows = append(failedRows, r.Clause+" "+r.Kind)
		case skipped:
			notRun = append(notRun, r.Clause+" "+r.Kind)
		case pass:
			passes++
		}
	}
	switch {
	case len(failedRows) > 0:
		return exitFail, fmt.Sprintf("%d MUST rows failed (%s)", len(failedRows), strings.Join(failedRows, ", "))
	case len(notRun) > 0:
		return exitCantRun, fmt.Sprintf("inconclusive: %d MUST rows were not run (%s)", len(notRun), strings.Join(notRun, ", "))
	case passes == 0:
		return exitCantRun, "inconclusive: no MUST clause was checked (see -run)"
	}
	return exitPass, fmt.Sprintf("every MUST row passed (%d rows)", passes)
}

// callbacksOf lists the callbacks the program registered, in order: the
// stack transforms and hooks, then the state migrations of its resources.
func callbacksOf(eng *enginetest.Engine) []registered {
	var out []registered
	for _, ev := range eng.Events("RegisterStackTransform", "RegisterStackInvokeTransform",
		"RegisterResourceHook", "RegisterErrorHook", "RegisterResource") {
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
		case *pulumirpc.RegisterResourceRequest:
			urn := ev.URN
			if res, ok := ev.Response.(*pulumirpc.RegisterResourceResponse); ok && res.GetUrn() != "" {
				urn = res.GetUrn()
			}
			for i, m := range req.GetStateMigrations() {
				out = append(out, registered{Kind: kindStateMigration, Name: fmt.Sprintf("%s#%d", req.GetName(), i+1),
					Target: m.GetTarget(), Token: m.GetToken(), AcceptsByteString: m.GetAcceptsByteString(),
					URN: urn, Type: req.GetType(), Parent: req.GetParent()})
			}
			continue
		}
		if cb == nil {
			continue
		}
		switch ev.Kind {
		case "RegisterStackTransform":
			r.Kind = kindResourceTransform
		case "RegisterStackInvokeTransform":
			r.Kind = kindInvokeTransform
		case "RegisterResourceHook":
			r.Kind = kindResourceHook
		case "RegisterErrorHook":
			r.Kind = kindErrorHook
		}
		r.Target, r.Token, r.AcceptsByteString = cb.GetTarget(), cb.GetToken(), cb.GetAcceptsByteString()
		out = append(out, r)
	}
	return out
}

// rows builds the report's rows: one per clause and kind, in the
// contract's order; kinds the program did not register are not applicable.
func rows(results map[string]map[*checker]result, inputs map[string]map[*checker][]Input, checkers []*checker, selected func(clause) bool) []Row {
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
				row.Inputs = append(row.Inputs, inputs[cl.ID][c]...)
				r, ok := results[cl.ID][c]
				if !ok {
					continue
				}
				ev := r.evidence
				if len(mine) > 1 {
					ev = fmt.Sprintf("%s: %s", c.cb.Name, ev)
				}
				// A row is the worst of its callbacks' verdicts.
				switch {
				case rank[r.verdict] > rank[row.Verdict]:
					row.Verdict = r.verdict
					evidence = []string{ev}
				case rank[r.verdict] == rank[row.Verdict]:
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
		verdict := r.Verdict
		if len(r.Runs) > 0 {
			var counts []string
			for _, v := range []string{pass, fail, skipped, na} {
				if n := r.Runs[v]; n > 0 {
					counts = append(counts, fmt.Sprintf("%d %s", n, v))
				}
			}
			verdict += " (" + strings.Join(counts, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Clause, r.Level, r.Kind, verdict, oneLine(r.Evidence))
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "program: %s\n", oneLine(rep.ProgramExit))
	fmt.Fprintf(w, "result: %s\n", rep.Result)
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
