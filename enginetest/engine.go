package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Engine is a simulated Pulumi engine serving one deployment. It serves the
// ResourceMonitor and Engine gRPC services on a loopback port, calls the
// program's callbacks (transforms, hooks, error hooks) over gRPC the way the
// real engine does, and runs the deployment's steps against a [FakeProvider].
//
// An Engine is safe for concurrent use. Close it when done.
type Engine struct {
	cfg  *config
	prov *FakeProvider
	addr string
	srv  *grpc.Server

	// base is the deployment's context: hooks and provider calls use it.
	base   context.Context
	cancel context.CancelFunc
	// generating ends when a failure cancels the deployment: the engine's
	// step generation, which runs state migrations, stops then, and a
	// migration in flight or called afterwards ends with Canceled.
	generating     context.Context
	stopGenerating context.CancelFunc
	span           trace.Span // the deployment's, when traced (WithTracing)

	dialer dialer
	rec    recorder

	// invokeMu is held while invoke transforms run, and to change their
	// list.
	invokeMu sync.Mutex
	// gen is the engine's step generator: held while a registration's
	// steps are decided (its state migrations, the provider's Check and
	// Diff) and while a RegisterResourceOutputs or ReadResource is served,
	// so these happen one at a time, in the order they reach it.
	gen turnstile
	// execBarrier is read-held by every step from the moment gen decides
	// it until it ends, and write-held by a state migration that runs.
	execBarrier sync.RWMutex
	// barrierWaits counts the migrations waiting for execBarrier.
	barrierWaits     atomic.Int32
	invokeTransforms []*pulumirpc.Callback

	mu               sync.Mutex // guards the fields below
	hooks            map[string]*hookEntry
	stackTransforms  []*pulumirpc.Callback
	remoteTransforms map[string][]*pulumirpc.Callback
	remoteMigrations map[string][]*pulumirpc.Callback
	migrated         map[string]migratedURN // URNs state migrations replaced
	resources        map[string]*resource
	order            []string
	defaults         map[string]*defaultProvider
	packages         map[string]string
	prior            map[string]*ResourceState
	claimed          map[string]string // prior URN -> the URN that took it over
	replaced         []*ResourceState
	deleting         map[string]bool // URNs the post steps delete
	deleted          map[*ResourceState]bool
	failed           map[string]bool
	errs             []error
	programErr       error
	steps            []Step
	// cancelled is set by a failure that ends the deployment: no step
	// starts afterwards and no delete runs.
	cancelled bool
	// bailed is set when an error in generating steps ended the
	// deployment: the engine's event loop then returns before it reports
	// "update failed", as it does for a failure of the program.
	bailed bool
	// refused is set when a plain destroy refused to start.
	refused bool
	// ended is set when the deployment is over and its result built.
	ended     bool
	rootURN   string
	signalled bool
	closed    bool
	selfConn  *grpc.ClientConn
	result    *Result
	// runner is set when RunFunc or RunCommand runs the program and will
	// report its exit: the end of a successful deployment then waits for
	// it, as the engine waits for the program once it has released it.
	runner bool
	// exitReported is set by the first ProgramFailed, which closes exited;
	// exitErr is a failure reported after the program signalled its end,
	// which the engine reads only once it has released the program.
	exitReported bool
	exitErr      error
	// rpcs counts the RPCs in flight that may create steps; active counts
	// the steps running. changed is signalled when either drops, or when
	// the deployment is cancelled or closed.
	rpcs    int
	active  int
	changed *sync.Cond
	// programPID is the process RunCommand started.
	programPID int

	bg             sync.WaitGroup // goroutines the engine started
	endOnce        sync.Once
	waiterReleased chan struct{} // closed when SignalAndWaitForShutdown is answered: at the end of a deployment that succeeded
	exited         chan struct{} // closed when the program's exit is reported
	cut            chan struct{} // closed when RunFunc cuts off a program it cannot kill
	cutOnce        sync.Once
	done           chan struct{} // closed when the deployment is over and its result built
	monitorDown    chan struct{} // closed when a failed deployment shuts its monitor down (3.274)
	closing        chan struct{} // closed by Close
	closeOnce      sync.Once
	closeErr       error
}

// Start starts an engine listening on 127.0.0.1 on a free port.
func Start(opts ...Option) (*Engine, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(cfg)
	}
	if cfg.engine != engine3_274 && cfg.engine != engine3_260 {
		return nil, fmt.Errorf("enginetest: engine version %q: the simulator plays %s and %s", cfg.engine, engine3_274, engine3_260)
	}
	prov := cfg.provider
	if prov == nil {
		prov = &FakeProvider{}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("enginetest: listening: %w", err)
	}
	base, cancel := context.WithCancel(context.Background())
	base, span, srvTrace, dialTrace := cfg.traceOptions(base)
	grpcLog := newGRPCLog()
	generating, stopGenerating := context.WithCancel(base)
	e := &Engine{
		generating:       generating,
		stopGenerating:   stopGenerating,
		cfg:              cfg,
		prov:             prov,
		addr:             lis.Addr().String(),
		base:             base,
		span:             span,
		dialer:           dialer{opts: append(dialTrace, grpcLog.dialOptions()...)},
		cancel:           cancel,
		hooks:            map[string]*hookEntry{},
		remoteTransforms: map[string][]*pulumirpc.Callback{},
		remoteMigrations: map[string][]*pulumirpc.Callback{},
		migrated:         map[string]migratedURN{},
		resources:        map[string]*resource{},
		defaults:         map[string]*defaultProvider{},
		packages:         map[string]string{},
		prior:            map[string]*ResourceState{},
		claimed:          map[string]string{},
		deleted:          map[*ResourceState]bool{},
		failed:           map[string]bool{},
		waiterReleased:   make(chan struct{}),
		exited:           make(chan struct{}),
		cut:              make(chan struct{}),
		done:             make(chan struct{}),
		monitorDown:      make(chan struct{}),
		closing:          make(chan struct{}),
	}
	e.changed = sync.NewCond(&e.mu)
	if cfg.prior != nil {
		for _, r := range cfg.prior.Resources {
			if r.PendingDelete {
				e.replaced = append(e.replaced, r)
			} else {
				e.prior[r.URN] = r
			}
		}
	}
	e.srv = grpc.NewServer(append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.WaitForHandlers(true),
	}, append(srvTrace, grpcLog.serverOptions()...)...)...)
	pulumirpc.RegisterResourceMonitorServer(e.srv, &monitorServer{e: e})
	pulumirpc.RegisterEngineServer(e.srv, &engineServer{e: e})
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		_ = e.srv.Serve(lis)
	}()
	if cfg.destroy && !cfg.runProgram {
		e.startPlainDestroy()
	}
	return e, nil
}

// MonitorAddr is the ResourceMonitor address, "127.0.0.1:PORT".
func (e *Engine) MonitorAddr() string { return e.addr }

// EngineAddr is the Engine service address; the same server as
// [Engine.MonitorAddr].
func (e *Engine) EngineAddr() string { return e.addr }

// Project returns the project name.
func (e *Engine) Project() string { return e.cfg.project }

// Stack returns the stack name.
func (e *Engine) Stack() string { return e.cfg.stack }

// URN returns the URN a resource registered with this type and name under
// the given parent URN gets ("" for no parent).
func (e *Engine) URN(parent, typ, name string) string {
	return newURN(e.cfg.stack, e.cfg.project, QualifiedType(parent), typ, name)
}

// StackURN returns the URN of the root stack resource as the Go SDK
// registers it ("<project>-<stack>").
func (e *Engine) StackURN() string {
	return e.URN("", rootStackType, e.cfg.project+"-"+e.cfg.stack)
}

// Version returns the engine release the simulator plays ([EngineVersion]).
func (e *Engine) Version() string { return e.cfg.engine }

// DryRun reports whether the deployment is a preview.
func (e *Engine) DryRun() bool { return e.cfg.dryRun }

// Env returns the environment a language host gives a program so that
// pulumi.Run connects to this engine: the variables the Go SDK reads
// (PULUMI_MONITOR, PULUMI_ENGINE, PULUMI_PROJECT, PULUMI_STACK,
// PULUMI_DRY_RUN, PULUMI_PARALLEL, PULUMI_CONFIG, PULUMI_CONFIG_SECRET_KEYS,
// PULUMI_ORGANIZATION), and the PULUMI_NODEJS_ ones the Node.js SDK reads.
func (e *Engine) Env() []string {
	cfgJSON, _ := json.Marshal(e.cfg.config)
	keys := e.cfg.configSecretKeys
	if keys == nil {
		keys = []string{}
	}
	keysJSON, _ := json.Marshal(keys)
	env := []string{
		"PULUMI_MONITOR=" + e.addr,
		"PULUMI_ENGINE=" + e.addr,
		"PULUMI_PROJECT=" + e.cfg.project,
		"PULUMI_STACK=" + e.cfg.stack,
		"PULUMI_DRY_RUN=" + strconv.FormatBool(e.cfg.dryRun),
		"PULUMI_PARALLEL=" + strconv.Itoa(int(e.cfg.parallel)),
		"PULUMI_CONFIG=" + string(cfgJSON),
		"PULUMI_CONFIG_SECRET_KEYS=" + string(keysJSON),
	}
	if e.cfg.organization != "" {
		env = append(env, "PULUMI_ORGANIZATION="+e.cfg.organization)
	}
	// The Node.js SDK reads its settings from these, which its runner
	// sets from its flags; setting them here too lets a program that
	// loads @pulumi/pulumi without the runner find the engine.
	env = append(env,
		"PULUMI_NODEJS_MONITOR="+e.addr,
		"PULUMI_NODEJS_ENGINE="+e.addr,
		"PULUMI_NODEJS_PROJECT="+e.cfg.project,
		"PULUMI_NODEJS_STACK="+e.cfg.stack,
		"PULUMI_NODEJS_DRY_RUN="+strconv.FormatBool(e.cfg.dryRun),
		"PULUMI_NODEJS_PARALLEL="+strconv.Itoa(int(e.cfg.parallel)),
	)
	if e.cfg.organization != "" {
		env = append(env, "PULUMI_NODEJS_ORGANIZATION="+e.cfg.organization)
	}
	return env
}

// Result is the outcome of a deployment.
type Result struct {
	// State is the stack's state after the deployment (after a preview:
	// the state the update would produce).
	State *State
	// Failed reports whether the deployment failed: a step or an after hook
	// failed, or the program did. It is true whenever ProgramErr is set.
	//
	// When a step or a hook failed, the engine's last diagnostic is the
	// error "update failed" ("preview failed" in a preview) with no URN.
	// When the program's own failure ended the deployment, or an error in
	// generating a step did (see the package doc), the engine reports that
	// failure and says nothing more: no "update failed".
	Failed bool
	// Err joins the errors of the failed steps, in engine wording, then the
	// program's failure. It is nil exactly when Failed is false. A test
	// that checks Err alone sees every failure, the reason first.
	Err error
	// ProgramErr is the error the program ended with, as given to
	// [Engine.ProgramFailed] or seen by [Engine.RunFunc] and
	// [Engine.RunCommand], or nil. When the deployment failed first, the
	// engine stops the program: [Engine.RunCommand] interrupts it, and
	// ProgramErr is nil; [Engine.RunFunc] cannot kill a program in the
	// test's process and ends its pending calls instead, so ProgramErr is
	// what the program returned then, which is about those calls (with the
	// Go SDK: "waiting for RPCs: … connection closed: the deployment
	// failed …"), not why the deployment failed: that is in Err, first.
	ProgramErr error
	// Diagnostics are the deployment's diagnostics, as
	// [Engine.Diagnostics].
	Diagnostics []Diagnostic
	// Steps lists the steps in the order they started.
	Steps []Step
}

// Step is one step of the deployment.
type Step struct {
	// Op is the step's operation in the engine's own words: "same",
	// "create", "update", "replace", "import", "read", "delete" or
	// "delete-replaced".
	Op string
	// URN is the resource's.
	URN string
	// Err is why the step failed, or nil.
	Err error
}

// Step operations.
const (
	opSame           = "same"
	opCreate         = "create"
	opUpdate         = "update"
	opReplace        = "replace"
	opImport         = "import"
	opRead           = "read"
	opDelete         = "delete"
	opDeleteReplaced = "delete-replaced"
)

// Wait waits until the deployment is over and returns its result. A
// deployment is over once the program has signalled its end (through
// SignalAndWaitForShutdown, [Engine.Finish] or [Engine.ProgramFailed]) and
// the engine has run the remaining steps (deletes and their hooks), or, as
// in the engine, as soon as the steps running when a step failed have
// finished: a failure does not wait for the program. When [Engine.RunFunc]
// or [Engine.RunCommand] runs the program, a deployment that succeeded is
// over only once the program, released from SignalAndWaitForShutdown, has
// exited, since the engine reports a failure of the program even then.
func (e *Engine) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-e.done:
		return e.result, nil
	default:
	}
	select {
	case <-e.done:
		return e.result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.closing:
		select {
		case <-e.done:
			return e.result, nil
		default:
			return nil, errClosed
		}
	}
}

// Finish treats the program as finished now, for programs that never call
// SignalAndWaitForShutdown (older SDKs, or a program run as a command that
// exited with status 0), then waits like [Engine.Wait].
func (e *Engine) Finish(ctx context.Context) (*Result, error) {
	e.mu.Lock()
	e.signalled = true
	e.changed.Broadcast()
	e.mu.Unlock()
	e.startEnd()
	return e.Wait(ctx)
}

// ErrProgramReported marks a program failure the program has already
// reported to the user itself, as a Go program does before it exits with
// status 32: the language host then adds no message of its own. Wrap it in
// the error given to [Engine.ProgramFailed].
var ErrProgramReported = errors.New("the program has already reported its failure")

// ProgramFailed tells the engine how the program ended, as a language host
// tells the engine when the program exits or its Run function returns. A
// nil err means the program exited successfully. Otherwise err is the
// language host's report, for example "an unhandled error occurred:
// program exited with non-zero exit code: 1" (the program's standard error
// is not part of it: the engine shows each of its lines as a diagnostic of
// its own, see [Engine.RunCommand]).
//
// Only the first report counts. What it does depends on when it comes, as
// in the engine:
//
//   - Before the program signalled its end: a nil err is the same as
//     [Engine.Finish] without the wait. A failure ends the deployment: err's
//     message becomes an error diagnostic with no URN (none if err wraps
//     [ErrProgramReported]), no step starts afterwards, no delete runs, and
//     the deployment ends as soon as the steps already running have
//     finished, with no "update failed": the program's failure is not a
//     failed deployment.
//   - After it signalled (through SignalAndWaitForShutdown or
//     [Engine.Finish]): the engine reads the program's exit only once the
//     deployment has succeeded and it has released the program. A failure
//     then fails the deployment with the diagnostic err's message, or "BAIL:
//     run bailed" if err wraps [ErrProgramReported] (the engine's wording
//     for a program that exited with status 32 at that point). If the
//     deployment failed, the engine never releases the program and never
//     reads its exit.
//   - After a failure stopped the deployment, or once it is over: nothing.
//     The engine no longer reads the program's outcome.
//
// [Result] reports a failure it took into account in Failed, Err and
// ProgramErr. ProgramFailed does not wait; call [Engine.Wait] for the
// result.
func (e *Engine) ProgramFailed(err error) {
	e.mu.Lock()
	if e.exitReported {
		e.mu.Unlock()
		return
	}
	e.exitReported = true
	close(e.exited)
	switch {
	case e.ended || e.closed || e.cancelled:
		e.mu.Unlock()
		return
	case e.signalled:
		e.exitErr = err
		e.mu.Unlock()
		return
	case err == nil:
		e.signalled = true
		e.changed.Broadcast()
		e.mu.Unlock()
		e.startEnd()
		return
	}
	e.programErr = err
	e.cancelled = true
	e.signalled = true
	e.changed.Broadcast()
	e.mu.Unlock()
	if !errors.Is(err, ErrProgramReported) {
		e.errorDiag("", err.Error())
	}
	e.startEnd()
}

// attachRunner records that RunFunc or RunCommand runs the program and will
// report its exit with ProgramFailed.
func (e *Engine) attachRunner() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runner = true
}

// overAndFailed reports whether the deployment is over and failed.
func (e *Engine) overAndFailed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended && e.result.Failed
}

// Close stops the engine: it cancels running hooks and provider calls,
// stops the gRPC server, ends every RPC the engine left unanswered (with
// Unavailable, as a connection that closes) and closes every callbacks
// client. It waits for the goroutines it started. Close is idempotent.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		self := e.selfConn
		e.selfConn = nil
		e.changed.Broadcast()
		e.mu.Unlock()
		e.cancel()
		e.endSpan()
		close(e.closing)
		e.srv.Stop()
		e.bg.Wait()
		var errs []error
		if err := e.dialer.close(); err != nil {
			errs = append(errs, err)
		}
		if self != nil {
			if err := self.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// enter admits an RPC that may create steps. Every successful enter must be
// matched by e.leave.
func (e *Engine) enter() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errShuttingDown
	}
	if e.ended && e.result.Failed {
		// The engine reads no more of the program's events.
		return errUnansweredLate
	}
	if e.signalled {
		return status.Error(codes.FailedPrecondition, "the program has already signalled that it is done")
	}
	e.rpcs++
	return nil
}

func (e *Engine) leave() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rpcs--
	e.changed.Broadcast()
}

// errShuttingDown ends the RPCs still waiting when the engine is closed.
var errShuttingDown = status.Error(codes.Unavailable, "the engine is shutting down")

// The errors of the RPCs a failed deployment leaves unanswered once 3.274
// shuts its monitor down: one that was waiting for its step, and one that
// came after the shutdown.
var (
	errMonitorDownWaiting = status.Error(codes.Unavailable, "resource monitor shut down while waiting on step's done channel")
	errMonitorDownSending = status.Error(codes.Unavailable, "resource monitor shut down while sending resource registration")
)

// errCutOff ends the RPCs still waiting when RunFunc cuts off a program
// that runs in the test's process, which it cannot kill.
var errCutOff = status.Error(codes.Unavailable,
	"connection closed: the deployment failed (Result.Err says why) and a program in the test's process cannot be killed")

// errUnanswered is returned inside the engine for an RPC the engine does
// not answer: its step failed, the deployment was cancelled before it got
// one, or it came after a failed deployment ended. The RPC then waits in
// unanswered.
var errUnanswered = errors.New("not answered: the deployment failed")

// errUnansweredLate is errUnanswered for an RPC that came after a failed
// deployment ended.
var errUnansweredLate = fmt.Errorf("%w: the RPC came after its end", errUnanswered)

// beginStep admits a step, unless the deployment was cancelled. Every
// successful beginStep must be matched by e.endStepRun.
func (e *Engine) beginStep() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancelled || e.ended {
		return false
	}
	e.active++
	return true
}

func (e *Engine) endStepRun() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active--
	e.changed.Broadcast()
}

// unanswered holds an RPC the engine does not answer. As in the engine,
// nothing answers it, not even the end of the deployment: it ends only when
// the program goes away (the call's context ends, as when the program is
// killed or its connection closes), RunFunc cuts the program off, or the
// engine is closed.
func (e *Engine) unanswered(ctx context.Context, err error) error {
	if errors.Is(err, errUnansweredLate) {
		select {
		case <-e.monitorDown:
			return errMonitorDownSending
		default:
		}
	}
	select {
	case <-e.monitorDown:
		return errMonitorDownWaiting
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-e.cut:
		return errCutOff
	case <-e.closing:
		return errShuttingDown
	}
}

// cutOff ends a program that runs in the test's process once its
// deployment has failed, as near as the engine's killing it can be done
// there: the RPCs the engine left unanswered end as a closed connection
// ends them, the answers already given are delivered, and the engine
// serves nothing more.
func (e *Engine) cutOff() {
	e.cutOnce.Do(func() {
		close(e.cut)
		e.srv.GracefulStop()
	})
}

// self returns a monitor client connected to this engine, for component
// providers.
func (e *Engine) self() (pulumirpc.ResourceMonitorClient, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errClosed
	}
	if e.selfConn == nil {
		conn, err := grpc.NewClient(e.addr,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(
				grpc.MaxCallRecvMsgSize(maxMessageSize),
				grpc.MaxCallSendMsgSize(maxMessageSize),
			),
		)
		if err != nil {
			return nil, err
		}
		e.selfConn = conn
	}
	return pulumirpc.NewResourceMonitorClient(e.selfConn), nil
}

// startEnd starts, once, the end of the deployment. It waits until either
// the program has signalled its end and no RPC that may create steps is in
// flight, or a failure has cancelled the deployment and no step is running.
// Then, unless cancelled, it runs the deletes. If nothing has failed, it
// releases the program from SignalAndWaitForShutdown and, when a runner
// reports the program's exit, waits for it and takes a failure into
// account, as the engine's cleanup after a successful deployment does. It
// builds the result. A failed deployment releases nothing and answers
// nothing more: it cancels what still runs (hooks, provider calls), and
// the program is left to be stopped (RunCommand and RunFunc do it).
func (e *Engine) startEnd() {
	e.endOnce.Do(func() {
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			e.mu.Lock()
			for !e.closed && !(e.cancelled && e.active == 0) && !(e.signalled && e.rpcs == 0) {
				e.changed.Wait()
			}
			skipDeletes := e.cancelled || e.closed
			e.mu.Unlock()
			if !skipDeletes {
				e.runDeletes()
			}
			e.releaseProgram()
			e.reportStepsFailed()
			if e.cfg.engine != engine3_260 && e.failedOpen() {
				e.shutDownMonitor()
			}
			e.finalize()
			if e.result.Failed {
				e.cancel()
			}
			e.endSpan()
			close(e.done)
		}()
	})
}

// releaseProgram answers SignalAndWaitForShutdown if the deployment has
// succeeded so far, then waits for the program's exit if a runner will
// report it, and takes a failure reported after the signal into account.
// The engine does the same in the cleanup that runs only after a successful
// deployment: it releases the waiter, waits for the program to exit and
// reports the program's error, with no "update failed".
func (e *Engine) releaseProgram() {
	e.mu.Lock()
	ok := !e.closed && !e.cancelled && len(e.errs) == 0 && e.programErr == nil
	if ok {
		close(e.waiterReleased)
	}
	wait := ok && e.runner
	e.mu.Unlock()
	if !ok {
		return
	}
	if wait {
		select {
		case <-e.exited:
		case <-e.closing:
		}
	}
	e.mu.Lock()
	err := e.exitErr
	if err != nil && !e.closed {
		e.programErr = err
	}
	closed := e.closed
	e.mu.Unlock()
	if err == nil || closed {
		return
	}
	if errors.Is(err, ErrProgramReported) {
		// The language host's bail reaches the engine's cleanup, which
		// prints it as it is.
		e.errorDiag("", "BAIL: run bailed")
	} else {
		e.errorDiag("", err.Error())
	}
}

// fail records a failed step. Unless ContinueOnError is set, it cancels
// every later step and starts the end of the deployment.
func (e *Engine) fail(urn string, err error) {
	e.failStep(urn, err, false)
}

// failStep records a failed step; keepGoing lets the deployment go on even
// without ContinueOnError, as the engine does for protected resources it
// cannot delete.
func (e *Engine) failStep(urn string, err error, keepGoing bool) {
	e.errorDiag(urn, err.Error())
	e.failReported(urn, err, keepGoing)
}

// failReported records a failure whose diagnostics were already emitted.
func (e *Engine) failReported(urn string, err error, keepGoing bool) {
	e.recordFailure(urn, err, !e.cfg.continueOnError && !keepGoing)
}

// abortReported records a failure that ends the deployment even with
// ContinueOnError, as an error in the engine's step generation (an invalid
// resource, a failed Diff or Construct) does; its diagnostics were already
// emitted. Unless a failed step has already stopped the deployment, the
// engine then returns before it says "update failed", as for a failure of
// the program.
func (e *Engine) abortReported(urn string, err error) {
	e.mu.Lock()
	if !e.cancelled {
		e.bailed = true
	}
	e.mu.Unlock()
	e.recordFailure(urn, err, true)
}

func (e *Engine) recordFailure(urn string, err error, stop bool) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	if urn != "" {
		e.failed[urn] = true
	}
	if stop {
		e.cancelled = true
		e.changed.Broadcast()
	}
	e.mu.Unlock()
	if stop {
		e.stopGenerating()
	}
	if stop {
		e.startEnd()
	}
}

func (e *Engine) isCancelled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cancelled
}

// startStep records the start of a step and returns its index in e.steps.
func (e *Engine) startStep(op string, urn string) int {
	e.rec.add(Event{Kind: KindStep, Op: op, URN: urn})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steps = append(e.steps, Step{Op: op, URN: urn})
	return len(e.steps) - 1
}

func (e *Engine) endStep(i int, err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.steps[i].Err = err
}

// reportStepsFailed says "update failed" ("preview failed") when a step or
// a hook failed, as the engine's event loop does last. A failure of the
// program, or an error in generating the steps, ends the deployment before
// that.
func (e *Engine) reportStepsFailed() {
	e.mu.Lock()
	say := len(e.errs) > 0 && e.programErr == nil && !e.refused && !e.bailed
	e.mu.Unlock()
	if say {
		kind := "update"
		if e.cfg.dryRun {
			kind = "preview"
		}
		e.errorDiag("", kind+" failed")
	}
}

// failedOpen reports whether the deployment failed and the engine has not
// been closed.
func (e *Engine) failedOpen() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return (len(e.errs) > 0 || e.programErr != nil) && !e.closed
}

// programGrace bounds how long a failed deployment waits, after shutting
// its monitor down, for a program that a runner will report the exit of.
// A program told that the monitor shut down reports it and exits at once;
// the bound only keeps a program that ignores it from holding the
// deployment open.
const programGrace = 30 * time.Second

// shutDownMonitor does what 3.274 does once a deployment has failed, in its
// steps or in the program (3.260 did nothing): it cancels the resource
// monitor, so every RPC the engine left unanswered ends with Unavailable,
// "resource monitor shut down while waiting on step's done channel" (one
// that comes afterwards: "… while sending resource registration"), and a
// program waiting in SignalAndWaitForShutdown is released. A Go program
// whose registration ends so reports it under the stack, as pulumi.Run
// reports any failure ("an unhandled error occurred: program failed:", then
// "waiting for RPCs: rpc error: code = Unavailable desc = resource monitor
// shut down while waiting on step's done channel"), and the user sees that
// after "update failed" if it comes before the CLI ends, which it usually
// does. So that the result holds what the user sees, the deployment
// then waits for the exit of a program RunFunc or RunCommand runs, at most
// programGrace.
func (e *Engine) shutDownMonitor() {
	close(e.monitorDown)
	e.mu.Lock()
	wait := e.runner && !e.exitReported
	e.mu.Unlock()
	if !wait {
		return
	}
	grace := time.NewTimer(programGrace)
	defer grace.Stop()
	select {
	case <-e.exited:
	case <-e.closing:
	case <-grace.C:
	}
}

// finalize builds the result.
func (e *Engine) finalize() {
	e.mu.Lock()
	defer e.mu.Unlock()
	failed := len(e.errs) > 0 || e.programErr != nil
	e.ended = true
	st := &State{}
	live := map[string]bool{}
	gone := map[string]bool{}
	for _, urn := range e.order {
		r := e.resources[urn]
		switch {
		case r == nil || r.state == nil:
		case e.deleted[r.state]:
			gone[urn] = true
		default:
			st.Resources = append(st.Resources, r.state.Clone())
			live[urn] = true
		}
	}
	var all []*ResourceState
	if e.cfg.prior != nil {
		all = e.cfg.prior.Resources
	}
	for _, old := range all {
		switch {
		case e.deleted[old], gone[old.URN], gone[e.claimed[old.URN]]:
		case e.isReplacedLocked(old):
			c := old.Clone()
			c.PendingDelete = true
			st.Resources = append(st.Resources, c)
		case live[old.URN] || live[e.claimed[old.URN]]:
			// Taken over by this deployment's registration.
		default:
			// Not registered again, or its new step failed: the old
			// resource stays.
			st.Resources = append(st.Resources, old.Clone())
		}
	}
	steps := make([]Step, len(e.steps))
	copy(steps, e.steps)
	errs := e.errs
	if e.programErr != nil {
		errs = append(errs[:len(errs):len(errs)], e.programErr)
	}
	e.result = &Result{
		State:       st,
		Failed:      failed,
		Err:         errors.Join(errs...),
		ProgramErr:  e.programErr,
		Diagnostics: e.rec.diagnostics(),
		Steps:       steps,
	}
}

func (e *Engine) isReplacedLocked(old *ResourceState) bool {
	for _, r := range e.replaced {
		if r == old {
			return true
		}
	}
	return false
}
