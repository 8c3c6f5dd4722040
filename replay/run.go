package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
)

// envUpdate is the environment variable that puts Run in update mode:
// with CALLBACKS_REPLAY_UPDATE=1 it rewrites the log's recorded answers with
// the current ones instead of comparing them.
const envUpdate = "CALLBACKS_REPLAY_UPDATE"

// runLimit bounds one run of the program when the test has no deadline of
// its own, so that a program that never returns fails the test instead of
// hanging it.
const runLimit = 5 * time.Minute

// Run replays the callback calls of the engine gRPC log logFile (written by
// PULUMI_DEBUG_GRPC=FILE) against the functions program (the body given to
// pulumi.Run) registers now; opts are [IgnorePaths] and
// [RequireSameResources]. The package documentation gives the overview;
// step by step:
//
// Before program runs, Run fails t, saying what to do, for an empty file,
// a file that is not an engine gRPC log (no line is a JSON entry with a
// method) and a log with no callback call. A log whose last line is cut
// short (the engine stopped while writing it) fails t too, and is replayed
// up to that line.
//
// Run runs program in this process, as pulumi.Run does, against
// [enginetest]'s engine with the project, stack, organization,
// configuration and dry-run flag of the recording (the log's
// LanguageRuntime/Run request, from its completing entry or, in a log that
// ends before it, its request_started entry) and the features its engine
// advertised (GetDeploymentInfo; every feature if the log has none), so
// that resources get the recorded URNs; the program takes its project and
// stack from the log, so a log of another project or stack cannot be told
// apart. That engine, under [enginetest.NoCallbacks], answers every
// registration as the engine would, its steps against a zero
// [enginetest.FakeProvider] (the inputs as outputs), and calls no callback;
// the program runs as under [enginetest.Engine.RunFunc], so no two runs of
// a process overlap. Once
// the program has registered everything and signalled the engine, Run
// sends each recorded request, byte for byte, over gRPC, to the function
// now registered in the recorded call's place: hooks and error hooks by
// name; stack transforms and stack invoke transforms by the order in which
// the program registered them; a resource's own transforms and state
// migrations by the resource's URN and their position in its list.
//
// Run reads the log once. A log of several runs of the program (a preview
// and an update) is replayed run by run, each against a fresh run of
// program, once the run after it has ended (until then, the calls after a
// run's end may still be its own), so Run holds the calls of at most two
// runs. A message about a run, or about a call in a log of several, names
// the run: the preview or the update, and the log line of its
// LanguageRuntime/Run.
//
// Each call whose answer differs fails t once (t.Errorf), naming the call's
// order in the log, its log line, its kind, its registration and its
// resource, with what changed (a transform's properties and options by
// property path, old → new; a hook's refusal; an error hook's retry
// decision; a migration's new state by path; an error now but not then, or
// the reverse) and how to take today's answers as the recording. Secrets
// are hidden as in [Change]. A recorded call with nothing registered
// in its place now fails t; a current registration the log never called,
// and a call the recording never answered (Pending, not replayed), are
// logged with t.Logf. A log that cannot be read, lines that cannot be
// understood, and a program that fails or panics fail t.
//
// The resources compared after each run are the recording's RegisterResource
// and ReadResource entries, less those a remote component's provider
// registered under it, which the replay does not construct; the report
// counts them. A resource renamed without an alias passes every call
// (hooks are matched by name, stack transforms by order): this comparison
// is what shows it.
//
// In update mode (CALLBACKS_REPLAY_UPDATE=1), Run rewrites each recorded
// answer that differs (the response and errors of the call's completing
// entry) with the current one, keeping every other line byte for byte,
// through a temporary file renamed over logFile; it logs what it changed
// and does not fail t for a differing answer.
//
// Run does not change the process's environment. Callbacks the SDK's own
// callback server serves (a plain SDK program's transforms and hooks, and
// this module's program.Migrations) are replayed as well; the SDK never
// stops that server for a plain SDK program, after Run as after any
// deployment. Run calls t.Helper and may be used from parallel tests.
func Run(t testing.TB, logFile string, program pulumi.RunFunc, opts ...Option) {
	t.Helper()
	var set settings
	if program == nil {
		set.errs = append(set.errs, errors.New("nil program"))
	}
	for _, o := range opts {
		if o == nil {
			set.errs = append(set.errs, errors.New("a nil Option"))
			continue
		}
		o.apply(&set)
	}
	for _, err := range set.errs {
		t.Errorf("replay: %v", err)
	}
	if len(set.errs) > 0 {
		return
	}
	f, err := os.Open(logFile)
	if err != nil {
		t.Errorf("replay: %v", err)
		return
	}
	r := &replayer{settings: set, t: t, file: logFile, program: program, update: os.Getenv(envUpdate) == "1",
		answers: map[int]*Call{}, matched: make([]bool, len(set.ignore)), rd: newReader(f), deadline: time.Now().Add(runLimit)}
	r.rd.resources = true
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			r.deadline = dl.Add(-5 * time.Second)
		}
	}
	ok := r.read()
	_ = f.Close()
	if !ok {
		return
	}
	if r.calls == 0 && r.readErrs == 0 {
		t.Errorf("replay: %s holds no callback call to replay%s", logFile, noCalls)
	}
	for i, p := range r.ignore {
		if r.compared > 0 && !r.matched[i] {
			t.Errorf("replay: IgnorePaths(%q) names no value in any answer of the %d call(s) compared, recorded or current: "+
				"a misspelt path? Paths are written as the differences print them: properties.tags.team, properties[\"a.b\"], "+
				"properties.items[0].id, options.protect, args.x, state[0].outputs.x, retry, refusal", p.text, r.compared)
		}
	}
	if r.update && len(r.answers) > 0 {
		if err := rewrite(logFile, r.answers); err != nil {
			t.Errorf("replay: updating %s: %v", logFile, err)
			return
		}
		t.Logf("replay: updated the recorded answers of %d call(s) in %s", len(r.answers), logFile)
	}
}

// noCalls says what to do about a log with no callback call.
const noCalls = ": record a deployment of a program that registers transforms, hooks, error hooks or state migrations, " +
	"under a Pulumi CLI that logs callback calls (/pulumirpc.Callbacks/Invoke)"

// checkLog fails t, before the program runs, for a file that cannot be
// replayed: empty, not an engine gRPC log, holding no callback call.
func checkLog(t testing.TB, file string, facts logFacts) bool {
	t.Helper()
	const record = "PULUMI_DEBUG_GRPC=/absolute/path/up.jsonl pulumi up"
	switch {
	case facts.lines == 0:
		t.Errorf("replay: %s is empty: record a deployment into it with %s, then replay it", file, record)
	case !facts.entries:
		t.Errorf("replay: %s is not an engine gRPC log: none of its %d lines is a JSON object with a \"method\", "+
			"one entry a line, as %s writes them", file, facts.lines, record)
	case !facts.invokes:
		t.Errorf("replay: %s holds no callback call to replay%s", file, noCalls)
	default:
		return true
	}
	return false
}

// read reads the log once, replaying each run of the program as soon as
// its calls are known: when the next run ends, or the log does, since the
// calls after a run's end belong to it unless another run follows. What
// it finds waits until the log is known to be one Run can replay: once it
// has an entry and a callback call, or has ended. It reports false if Run
// must stop: the log cannot be replayed, or a program did not finish.
func (r *replayer) read() bool {
	t := r.t
	t.Helper()
	var todo []func() bool // what waits until the log is known replayable
	later := func(f func()) { todo = append(todo, func() bool { f(); return true }) }
	replay := func(run *logRun) { todo = append(todo, func() bool { return r.runOnce(run) }) }
	checked, ok := false, true
	var done *logRun  // the last run that ended, with its calls
	var calls []*Call // the calls read since
	r.rd.run(func(h *held) bool {
		c, err, run := h.call, h.err, h.run
		if n := r.rd.facts.truncated; h.last && n > 0 {
			later(func() {
				t.Errorf("replay: %s: its last line (log line %d) is cut short inside its entry, as when the engine stops while it writes; "+
					"the calls before it are replayed. Record the deployment again, or delete that line to keep the rest", r.file, n)
			})
		}
		var le *LineError
		switch {
		case err != nil && !errors.As(err, &le):
			// Reading the file failed: the log ends here, whatever it held.
			t.Errorf("replay: %s: %v", r.file, err)
			ok = false
			return false
		case err != nil:
			later(func() {
				if le.Line != r.rd.facts.truncated { // else the last line cut short, reported once the log ends
					r.readErrs++
					t.Errorf("replay: %s: %v", r.file, err)
				}
			})
		case run == nil && c.Pending:
			// Nothing to compare today's answer with.
			later(func() { t.Logf("replay: %s was never answered in the recording: not replayed", callName(c)) })
		case run == nil:
			calls = append(calls, c)
			r.calls++
		case run.line > 0 || done == nil: // a run ended, or the log did, in a run started or in none
			r.runs++
			if done != nil {
				replay(done)
			}
			done, run.calls, calls = run, calls, nil
		default: // the log ended after its last run: what comes after that run is its own
			done.calls = append(done.calls, calls...)
			done.resources = append(done.resources, run.resources...)
		}
		if h.last {
			if done.line == 0 { // no run at all: the project and stack of the first call's resource
				done.info.Project, done.info.Stack = "project", "stack"
				if i := slices.IndexFunc(done.calls, func(c *Call) bool { return c.URN.IsValid() }); i >= 0 {
					u := done.calls[i].URN
					done.info.Project, done.info.Stack = string(u.Project()), string(u.Stack())
				}
			}
			replay(done)
		}
		if facts := r.rd.facts; !checked && (h.last || facts.entries && facts.invokes) {
			checked, ok = true, checkLog(t, r.file, facts)
		}
		for checked && ok && len(todo) > 0 {
			ok, todo = todo[0](), todo[1:]
		}
		return ok
	})
	return ok
}

// replayer holds what one Run has found.
type replayer struct {
	settings // the options: IgnorePaths, RequireSameResources
	t        testing.TB
	file     string
	program  pulumi.RunFunc
	update   bool
	rd       *reader
	deadline time.Time     // when a run of the program is given up on
	runs     int           // the runs of the log read so far: with several, calls name theirs
	calls    int           // the calls read to replay
	readErrs int           // the lines reported as not read or not understood
	answers  map[int]*Call // update mode: the calls whose answers differ, with today's, by log line
	matched  []bool        // the patterns of IgnorePaths that named a value
	compared int           // the calls whose answers were compared
}

// runOnce runs the program once on enginetest's engine with run's
// information, answering its registrations and calling no callback, and,
// while the program waits in its SignalAndWaitForShutdown, replays run's
// calls on the test's goroutine, where what they find is reported. It
// reports false if the program did not finish by the deadline.
func (r *replayer) runOnce(run *logRun) bool {
	t := r.t
	t.Helper()
	info := run.info
	signalled, replayed := make(chan struct{}), make(chan struct{})
	opts := []enginetest.Option{
		enginetest.NoCallbacks(),
		enginetest.WithProject(info.Project), enginetest.WithStack(info.Stack),
		enginetest.WithOrganization(info.Organization),
		enginetest.WithConfig(info.Config, info.ConfigSecretKeys...),
		enginetest.WithParallel(info.Parallel), enginetest.DryRun(info.DryRun),
		enginetest.BeforeShutdown(func(ctx context.Context) {
			close(signalled)
			select {
			case <-replayed:
			case <-ctx.Done():
			}
		}),
	}
	if info.Features != nil {
		opts = append(opts, enginetest.WithFeatures(info.Features...))
	}
	eng, err := enginetest.Start(opts...)
	if err != nil {
		t.Errorf("replay: %v", err)
		return true
	}
	defer func() { _ = eng.Close() }()

	ctx, cancel := context.WithDeadline(context.Background(), r.deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := eng.RunFunc(ctx, func() error { return runProgram(ctx, eng.MonitorAddr(), info, r.program) })
		if err == nil {
			err = res.Err
		}
		done <- err
	}()
	in := ""
	if r.runs > 1 {
		in = ", in " + run.name()
	}
	replay, finished := signalled, true
wait:
	for {
		select {
		case <-replay:
			r.replayRun(ctx, eng, run.calls, in)
			close(replayed)
			replay = nil // replayed: a nil channel is never ready
		case err = <-done:
			break wait
		case <-ctx.Done():
			err, finished = fmt.Errorf("the program did not finish by %s", r.deadline.Format(time.RFC3339)), false
			break wait
		}
	}
	what, hint := "the program, in "+run.name()+",", ""
	if run.line == 0 {
		what, hint = "the program", fmt.Sprintf("\n\t(%s has no LanguageRuntime/Run entry: the program ran with no configuration, "+
			"as project %q and stack %q, taken from the calls' URNs)", r.file, info.Project, info.Stack)
	}
	if err != nil {
		t.Errorf("replay: %s failed: %v%s", what, err, hint)
	}
	for _, ev := range eng.Events(enginetest.KindLog) {
		if req, ok := ev.Request.(*pulumirpc.LogRequest); ok && req.GetSeverity() >= pulumirpc.LogSeverity_WARNING {
			msg := strings.ToLower(req.GetSeverity().String()) + ": " + req.GetMessage()
			if req.GetUrn() != "" {
				msg += " (" + req.GetUrn() + ")"
			}
			t.Logf("replay: the program logged %s", msg)
		}
	}
	if err == nil && replay != nil {
		t.Errorf("replay: %s never signalled the engine; nothing was replayed", what)
	}
	if err == nil {
		r.compareResources(run, in, eng)
	}
	return finished
}

// runProgram runs program as pulumi.RunErr does, against the engine at
// addr: a context with the run's information, the stack resource, the
// program, its outputs, and the signal to the engine, whose
// SignalAndWaitForShutdown replays the calls. A panic of the program
// becomes an error.
func runProgram(ctx context.Context, addr string, info runInfo, program pulumi.RunFunc) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v\n%s", v, debug.Stack())
		}
	}()
	pctx, err := pulumi.NewContext(ctx, pulumi.RunInfo{
		Project: info.Project, Stack: info.Stack, Organization: info.Organization,
		RootDirectory: info.RootDirectory, Config: info.Config, ConfigSecretKeys: info.ConfigSecretKeys,
		Parallel: info.Parallel, DryRun: info.DryRun,
		MonitorAddr: addr, EngineAddr: addr,
	})
	if err != nil {
		return err
	}
	defer func() { _ = pctx.Close() }()
	if err := pulumi.RunWithContext(pctx, program); err != nil {
		return err
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_, err = pulumirpc.NewResourceMonitorClient(conn).SignalAndWaitForShutdown(ctx, &emptypb.Empty{})
	return err
}

// registrations returns the callbacks the program registered with eng that
// the engine accepted, by the key a recorded call names, and their keys in
// the order made.
func registrations(eng *enginetest.Engine) ([]regKey, map[regKey]*pulumirpc.Callback) {
	var order []regKey
	regs := map[regKey]*pulumirpc.Callback{}
	counted := map[string]int{} // registrations counted in order, by method
	// callbacksOf passes over the events of other methods.
	for _, ev := range eng.Events() {
		if ev.Err != "" || ev.Request == nil {
			continue
		}
		callbacksOf(counted, string(ev.Kind), ev.Request, resource.URN(ev.URN), nil, func(row *kindRow, cb *pulumirpc.Callback, r Registration) {
			k := keyFor(row.kind, r)
			if _, dup := regs[k]; !dup {
				order = append(order, k)
			}
			regs[k] = cb
		})
	}
	return order, regs
}

// replayRun replays a run's calls against eng's registrations, reporting
// each difference, each call with nothing in its place and each
// registration the log never called; in names the run in a log of several.
func (r *replayer) replayRun(ctx context.Context, eng *enginetest.Engine, calls []*Call, in string) {
	t := r.t
	t.Helper()
	order, regs := registrations(eng)
	used := map[regKey]bool{}
	conns := dialer{}
	defer conns.close()
	for _, c := range calls {
		key := keyFor(c.Kind, c.Registration)
		name := callName(c) + in
		cb, ok := regs[key]
		if !ok {
			t.Errorf("replay: %s: nothing is registered now in its place (the program registers %s)",
				name, listRegs(order))
			continue
		}
		used[key] = true
		res, callErr := conns.invoke(ctx, cb, c.Request)
		r.compared++
		diff, ignored := r.sift(c, cb.GetToken(), res, callErr)
		if len(ignored) > 0 {
			t.Logf("replay: %s: differences ignored (IgnorePaths):\n\t%s", name, strings.Join(ignored, "\n\t"))
		}
		switch {
		case len(diff) == 0:
		case r.update:
			// Only an answer that differs is rewritten: an equal answer
			// in other bytes (maps encode in any order) stays as it was.
			// The call, compared, takes today's answer for rewrite.
			c.Response, c.Err = res, callErr
			r.answers[c.Line] = c
			t.Logf("replay: %s: the recorded answer is updated:\n\t%s", name, strings.Join(diff, "\n\t"))
		default:
			t.Errorf("replay: %s: the answer differs from the recording:\n\t%s\n(%s=1 go test takes today's answers as the recording)",
				name, strings.Join(diff, "\n\t"), envUpdate)
		}
	}
	if unused := slices.DeleteFunc(order, func(k regKey) bool { return used[k] }); len(unused) > 0 {
		t.Logf("replay: the program registers %s, which the log never called", listRegs(unused))
	}
}

// sift compares a call's recorded answer with the current one, from the
// registration with token, and splits their differences into those
// IgnorePaths leaves to fail the test and those it ignores, each as its
// line, an ignored one naming the path that ignored it. It marks the
// patterns that name a value in either answer.
func (r *replayer) sift(c *Call, token string, current []byte, currentErr string) (kept, ignored []string) {
	if slices.Contains(r.matched, false) { // else the answers need not be decoded
		var trees []map[string]any
		if c.Err == "" && c.Response != nil {
			trees = append(trees, answerTree(c.Kind, c.Request, c.Response))
		}
		if currentErr == "" {
			trees = append(trees, answerTree(c.Kind, c.Request, current))
		}
		for i, p := range r.ignore {
			r.matched[i] = r.matched[i] || slices.ContainsFunc(trees, func(t map[string]any) bool { return t != nil && present(p.segs, t) })
		}
	}
	for _, d := range diffCall(c, token, current, currentErr) {
		by := -1
		if segs, err := parsePath(d.path); err == nil {
			by = slices.IndexFunc(r.ignore, func(p *pattern) bool { return p.covers(segs) })
		}
		if by < 0 {
			kept = append(kept, d.text)
			continue
		}
		r.matched[by] = true
		ignored = append(ignored, fmt.Sprintf("%s (by %q)", d.text, r.ignore[by].text))
	}
	return kept, ignored
}

// compareResources reports the resources the program registered or read
// with eng that the run's recording lacks, and those it recorded that the
// program no longer registers: with t.Errorf under RequireSameResources,
// else with t.Logf; in names the run in a log of several.
func (r *replayer) compareResources(run *logRun, in string, eng *enginetest.Engine) {
	t := r.t
	t.Helper()
	recorded := run.recordedResources()
	if len(recorded) == 0 {
		t.Logf("replay: %s records no resource registration%s (the monitor's RegisterResource or ReadResource): "+
			"the resources are not compared", r.file, in)
		return
	}
	var now []resource.URN
	for _, ev := range eng.Events(registerRes, "ReadResource") {
		if ev.URN != "" {
			now = append(now, resource.URN(ev.URN))
		}
	}
	msg := resourceReport(resourceChanges(recorded, now))
	switch {
	case msg == "":
	case r.sameResources:
		t.Errorf("replay: the resources differ from the recording%s: %s", in, msg)
	default:
		t.Logf("replay: the resources differ from the recording%s: %s\n(replay.RequireSameResources() makes this fail the test)", in, msg)
	}
}

// regKey names a registration the way a recorded call names its own:
// Method, plus the hook's name, the order among the stack (invoke)
// transforms or in the resource's list, the resource, and the kind that
// tells a resource's transforms from its migrations.
type regKey struct {
	Method   string
	Kind     callbacks.Kind
	Name     string
	Order    int
	Resource resource.URN
}

// keyFor is the key of a registration of kind k.
func keyFor(k callbacks.Kind, r Registration) regKey {
	return regKey{Method: r.Method, Kind: k, Name: r.Name, Order: r.Order, Resource: r.Resource}
}

// callName names a call for a person: its order, its log line, its kind,
// its registration and its resource.
func callName(c *Call) string {
	s := fmt.Sprintf("call %d (log line %d), %v, %s", c.Seq, c.Line, c.Kind, c)
	switch {
	case c.URN != "":
		s += ", for " + string(c.URN)
	case c.Invoke != "":
		s += ", for " + c.Invoke
	}
	return s
}

// listRegs lists registrations for a message, each by its name and kind.
func listRegs(order []regKey) string {
	if len(order) == 0 {
		return "no callback at all"
	}
	names := make([]string, 0, len(order))
	for _, k := range order {
		names = append(names, fmt.Sprintf("%v (%v)", k, k.Kind))
	}
	if len(names) > 8 {
		names = append(names[:8], fmt.Sprintf("and %d more", len(names)-8))
	}
	return strings.Join(names, ", ")
}

// dialer keeps one connection per callback server, dialled as the engine
// dials them: 400 MiB limits both ways.
// It is used from one goroutine.
type dialer map[string]*grpc.ClientConn

func (d dialer) invoke(ctx context.Context, cb *pulumirpc.Callback, req []byte) ([]byte, string) {
	conn := d[cb.GetTarget()]
	if conn == nil {
		var err error
		conn, err = grpc.NewClient(cb.GetTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(callbacks.DefaultMaxMessageSize),
				grpc.MaxCallSendMsgSize(callbacks.DefaultMaxMessageSize)))
		if err != nil {
			return nil, err.Error()
		}
		d[cb.GetTarget()] = conn
	}
	res, err := pulumirpc.NewCallbacksClient(conn).Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: req})
	if err != nil {
		return nil, err.Error()
	}
	return res.GetResponse(), ""
}

func (d dialer) close() {
	for _, c := range d {
		_ = c.Close()
	}
}
