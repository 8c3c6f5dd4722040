package main

import (
	"context"
	"encoding/json"
	"errors"
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

// reportRow is one line of the report: a clause's verdict for one kind of
// callback.
type reportRow struct {
	Clause   string `json:"clause"`
	Level    string `json:"level"`
	Kind     string `json:"kind"`
	Verdict  string `json:"verdict"`
	Evidence string `json:"evidence"`
	// Runs counts the verdicts of the clause's runs on the kind's
	// callbacks, with -count above 1.
	Runs map[string]int `json:"runs,omitempty"`
	// Inputs are the bad inputs the clause sent, byte for byte.
	Inputs []wireInput `json:"inputs,omitempty"`
}

// report is what the kit found, as printed and as written by -json.
type report struct {
	Program   []string     `json:"program"`
	Callbacks []registered `json:"callbacks"`
	Rows      []reportRow  `json:"rows"`
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
// returns the report. It goes through its phases in order: start the
// program and wait for it to signal (startProgram), connect to the
// servers of the callbacks it registered (connect), run the clauses
// (runClauses) and compute those that judge the others (judgeAfter), let
// the program finish (finish), then build the rows and conclude
// (conclude).
func check(ctx context.Context, prog []string, filter *regexp.Regexp, count int, verbose bool, log io.Writer) *report {
	rep := &report{Program: prog}
	cantRun := func(format string, args ...any) *report {
		rep.Error = fmt.Sprintf(format, args...)
		rep.Exit = exitCantRun
		return rep
	}
	if err := checkRequestsComplete(); err != nil {
		return cantRun("%v", err)
	}
	p, err := startProgram(ctx, prog, verbose, log)
	if err != nil {
		return cantRun("%v", err)
	}
	defer p.stop()

	rep.Callbacks = callbacksOf(p.eng)
	if len(rep.Callbacks) == 0 {
		return cantRun("the program registered no callbacks")
	}
	checkers, closeConns, err := connect(rep.Callbacks, p.eng.ProgramPID(), verbose, log)
	defer closeConns()
	if err != nil {
		return cantRun("%v", err)
	}

	selected := func(cl clause) bool { return filter == nil || filter.MatchString(cl.ID) }
	t := newTally()
	if !runClauses(ctx, checkers, selected, count, t) {
		return cantRun("interrupted")
	}
	judgeAfter(checkers, selected, t)

	rep.ProgramExit = p.finish()
	if verbose {
		fmt.Fprintln(log, p.eng.Trace())
	}
	conclude(rep, t, checkers, selected, count)
	return rep
}

// running is the program under test, run by the simulator, held at its
// SignalAndWaitForShutdown until release is closed.
type running struct {
	eng     *enginetest.Engine
	release chan struct{}
	exited  chan outcome
	cancel  context.CancelFunc
}

// outcome is how the program's run ended.
type outcome struct {
	res *enginetest.Result
	err error
}

// startProgram starts the simulator and the program prog on it, and waits
// until the program calls SignalAndWaitForShutdown, which the simulator
// then holds. Its error is the report's when the program exits first, does
// not signal within registerTimeout, or ctx ends; it has then stopped
// everything it started.
func startProgram(ctx context.Context, prog []string, verbose bool, log io.Writer) (*running, error) {
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
		return nil, fmt.Errorf("starting the engine: %v", err)
	}
	args := expandArgs(prog, eng.Env())
	cmd := exec.Command(args[0], args[1:]...)
	dieWithParent(cmd)
	var output lockedBuffer
	if verbose {
		cmd.Stdout, cmd.Stderr = log, log
	} else {
		cmd.Stdout, cmd.Stderr = &output, &output
	}
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	p := &running{eng: eng, release: release, exited: make(chan outcome, 1), cancel: cancelRun}
	go func() {
		res, err := eng.RunCommand(runCtx, cmd)
		p.exited <- outcome{res, err}
	}()

	timer := time.NewTimer(registerTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return p, nil
	case o := <-p.exited:
		msg := "the program exited before calling SignalAndWaitForShutdown"
		switch {
		case o.err != nil:
			msg = o.err.Error()
		case o.res != nil && o.res.Err != nil:
			msg += ": " + o.res.Err.Error()
		}
		err = fmt.Errorf("%s\n%s", msg, output.String())
	case <-timer.C:
		err = fmt.Errorf("the program did not call SignalAndWaitForShutdown within %v\n%s", registerTimeout, output.String())
	case <-ctx.Done():
		err = errors.New("interrupted")
	}
	p.stop()
	return nil, err
}

// expandArgs expands, in the program's arguments, the variables of the
// engine's environment env (${PULUMI_MONITOR} and the like), for runners
// that take the engine's addresses as flags; other variables are left as
// written.
func expandArgs(prog, env []string) []string {
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	expanded := make([]string, len(prog))
	for i, a := range prog {
		expanded[i] = os.Expand(a, func(k string) string {
			if v, ok := vars[k]; ok {
				return v
			}
			return "${" + k + "}"
		})
	}
	return expanded
}

// let answers the program's SignalAndWaitForShutdown, once.
func (p *running) let() {
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

// stop lets the program go on, stops its run without waiting for it, and
// closes the simulator.
func (p *running) stop() {
	p.let()
	p.cancel()
	_ = p.eng.Close()
}

// finish lets the program finish and says how it ended: it is stopped if
// it still runs 10 seconds after SignalAndWaitForShutdown returned.
func (p *running) finish() string {
	p.let()
	select {
	case o := <-p.exited:
		switch {
		case o.err != nil:
			return o.err.Error()
		case o.res.Err != nil:
			return o.res.Err.Error()
		default:
			return "exited 0"
		}
	case <-time.After(10 * time.Second):
		p.cancel()
		<-p.exited
		return "still running 10s after SignalAndWaitForShutdown returned; stopped"
	}
}

// connect dials the server of each callback, once per server, and returns
// a checker for each callback, in the order of cbs, and a function that
// closes the connections (to be called whatever the error).
func connect(cbs []registered, pid int, verbose bool, log io.Writer) ([]*checker, func(), error) {
	conns := map[string]*grpc.ClientConn{}
	targets := map[string]*target{}
	closeConns := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	logf := func(format string, args ...any) {
		if verbose {
			fmt.Fprintf(log, format+"\n", args...)
		}
	}
	var checkers []*checker
	for _, cb := range cbs {
		conn, ok := conns[cb.Target]
		if !ok {
			var err error
			conn, err = grpc.NewClient(cb.Target,
				grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
			if err != nil {
				return nil, closeConns, fmt.Errorf("dialing %s: %v", cb.Target, err)
			}
			conns[cb.Target] = conn
			targets[cb.Target] = &target{}
		}
		checkers = append(checkers, &checker{cb: cb, k: kinds[cb.Kind], conn: conn, pid: pid, target: targets[cb.Target], logf: logf})
	}
	return checkers, closeConns, nil
}

// tally keeps each clause's result for each callback: with -count, the
// worst of its runs, and how many times each verdict came; and the bad
// inputs the clause sent.
type tally struct {
	results map[string]map[*checker]result
	inputs  map[string]map[*checker][]wireInput
	runs    map[string]map[*checker]map[string]int
}

func newTally() *tally {
	return &tally{
		results: map[string]map[*checker]result{},
		inputs:  map[string]map[*checker][]wireInput{},
		runs:    map[string]map[*checker]map[string]int{},
	}
}

// record keeps one run's result r of clause cl for c, with the bad inputs
// c sent during it.
func (t *tally) record(cl clause, c *checker, r result) {
	if t.results[cl.ID] == nil {
		t.results[cl.ID] = map[*checker]result{}
		t.inputs[cl.ID] = map[*checker][]wireInput{}
		t.runs[cl.ID] = map[*checker]map[string]int{}
	}
	if t.runs[cl.ID][c] == nil {
		t.runs[cl.ID][c] = map[string]int{}
	}
	t.runs[cl.ID][c][r.verdict]++
	if prev, ok := t.results[cl.ID][c]; !ok || rank[r.verdict] >= rank[prev.verdict] {
		t.results[cl.ID][c] = r
	}
	if len(t.inputs[cl.ID][c]) == 0 {
		t.inputs[cl.ID][c] = c.inputs
	}
	c.inputs = nil
	c.logf("%s %s %q: %s: %s", cl.ID, c.cb.Kind, c.cb.Name, r.verdict, r.evidence)
}

// runClauses runs the selected clauses that call the server, count times
// each on each callback, in four phases: ordinary requests for every
// callback (0), bad inputs (1), then the largest payloads, 64 MiB (2) then
// 300 MiB (3). Each phase goes through every callback before the next
// phase starts, in the report's order of kinds, except the last two, which
// go backwards: the hooks only receive the largest payloads, the
// transforms must send them back too, and a server that dies of that
// should not leave the hooks unmeasured. Once a server stops answering,
// every later clause of every callback it serves is not run. It returns
// false if ctx ended first.
func runClauses(ctx context.Context, checkers []*checker, selected func(clause) bool, count int, t *tally) bool {
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
				if cl.run == nil || cl.phase != phase || !selected(cl) || !cl.appliesTo(c.cb.Kind) {
					continue
				}
				if ctx.Err() != nil {
					return false
				}
				for rep := range count {
					if c.target.dead != "" {
						t.record(cl, c, skippedResult("the server had stopped answering after %s", c.target.dead))
						continue
					}
					c.unavailable, c.repetition = false, rep
					r := cl.run(ctx, c)
					t.record(cl, c, r)
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
	return true
}

// judgeAfter computes the selected clauses that judge what the others saw
// (stays-up, no-stack-trace), for each callback.
func judgeAfter(checkers []*checker, selected func(clause) bool, t *tally) {
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
			if cl.run != nil || !selected(cl) || !cl.appliesTo(c.cb.Kind) {
				continue
			}
			switch cl.ID {
			case "stays-up":
				t.record(cl, c, c.stayedUp(selectedID))
			case "no-stack-trace":
				t.record(cl, c, c.noStackTrace())
			}
		}
	}
}

// conclude fills the report's rows from the tally, with each row's count
// of verdicts when each clause ran count times, and its conclusion.
func conclude(rep *report, t *tally, checkers []*checker, selected func(clause) bool, count int) {
	rep.Rows = rows(t.results, t.inputs, checkers, selected)
	if count > 1 {
		for i, r := range rep.Rows {
			for _, c := range checkers {
				if c.cb.Kind != r.Kind {
					continue
				}
				for v, n := range t.runs[r.Clause][c] {
					if rep.Rows[i].Runs == nil {
						rep.Rows[i].Runs = map[string]int{}
					}
					rep.Rows[i].Runs[v] += n
				}
			}
		}
	}
	rep.Exit, rep.Result = verdict(rep.Rows)
}

// rank orders verdicts from the best to the worst: n/a, pass, not run,
// fail.
var rank = map[string]int{fail: 3, skipped: 2, pass: 1, na: 0}

// verdict concludes a run from its rows: it passes only when at least one
// MUST clause passed and every MUST row of a registered kind passed (or
// does not apply); a MUST row that failed fails it; a MUST row that was not
// run, or a run in which no MUST clause passed, concludes nothing. The
// words end with how many clauses passed (see clauseCount).
func verdict(rows []reportRow) (int, string) {
	var failedRows, notRun []string
	failedClauses := map[string]bool{}
	passes := 0
	for _, r := range rows {
		if r.Level != must {
			continue
		}
		switch r.Verdict {
		case fail:
			failedRows = append(failedRows, r.Clause+" "+r.Kind)
			failedClauses[r.Clause] = true
		case skipped:
			notRun = append(notRun, r.Clause+" "+r.Kind)
		case pass:
			passes++
		}
	}
	count := clauseCount(rows)
	switch {
	case len(failedRows) > 0:
		word := "clauses"
		if len(failedClauses) == 1 {
			word = "clause"
		}
		return exitFail, fmt.Sprintf("%d MUST %s failed (%s); %s", len(failedClauses), word, strings.Join(failedRows, ", "), count)
	case len(notRun) > 0:
		return exitCantRun, fmt.Sprintf("inconclusive: %d MUST rows were not run (%s); %s", len(notRun), strings.Join(notRun, ", "), count)
	case passes == 0:
		return exitCantRun, "inconclusive: no MUST clause was checked (see -run); " + count
	}
	return exitPass, "every MUST clause passed; " + count
}

// clauseCount counts the clauses of rows by verdict, a clause's verdict
// being the worst of its rows' (so a clause passes when none of its rows
// failed or went unrun and one passed), and says how many rows they
// span: "20 of 22 clauses passed, 2 failed (88 rows)".
func clauseCount(rows []reportRow) string {
	worst := map[string]string{}
	for _, r := range rows {
		if v, ok := worst[r.Clause]; !ok || rank[r.Verdict] > rank[v] {
			worst[r.Clause] = r.Verdict
		}
	}
	counts := map[string]int{}
	for _, v := range worst {
		counts[v]++
	}
	s := fmt.Sprintf("%d of %d clauses passed", counts[pass], len(worst))
	for _, v := range []struct{ verdict, words string }{{fail, "failed"}, {skipped, "not run"}, {na, "n/a"}} {
		if n := counts[v.verdict]; n > 0 {
			s += fmt.Sprintf(", %d %s", n, v.words)
		}
	}
	return fmt.Sprintf("%s (%d rows)", s, len(rows))
}

// callbacksOf lists the callbacks the program registered, in order: the
// stack transforms and hooks, then the state migrations of its resources.
// Each has a name: a hook its own, a stack transform its registration's
// method and its number ("RegisterStackTransform#1"), a migration its
// resource's name and its number.
func callbacksOf(eng *enginetest.Engine) []registered {
	var out []registered
	numbered := map[enginetest.EventKind]int{}
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
		if r.Name == "" {
			// A stack transform has no name of its own: it is named by its
			// registration, counted by kind as migrations are.
			numbered[ev.Kind]++
			r.Name = fmt.Sprintf("%s#%d", ev.Kind, numbered[ev.Kind])
		}
		out = append(out, r)
	}
	return out
}

// rows builds the report's rows: one per clause and kind the clause
// applies to, in the contract's order; kinds the program did not register
// are not applicable.
func rows(results map[string]map[*checker]result, inputs map[string]map[*checker][]wireInput, checkers []*checker, selected func(clause) bool) []reportRow {
	var out []reportRow
	for _, cl := range contract {
		if !selected(cl) {
			continue
		}
		for _, k := range kindOrder {
			if !cl.appliesTo(k) {
				continue
			}
			row := reportRow{Clause: cl.ID, Level: cl.Level, Kind: k}
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

func printTable(w io.Writer, rep *report) {
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
