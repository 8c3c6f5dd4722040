package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Engine is a simulated Pulumi engine serving one deployment. It serves the
// ResourceMonitor and Engine gRPC services on a loopback port, calls the
// program's callbacks (transforms, hooks, error hooks) over gRPC the way the
// real engine does, and runs the deployment's steps against a [Provider].
//
// An Engine is safe for concurrent use. Close it when done.
type Engine struct {
	cfg  *config
	prov Provider
	addr string
	srv  *grpc.Server

	// base is the deployment's context: hooks and provider calls use it.
	base   context.Context
	cancel context.CancelFunc

	dialer dialer
	rec    recorder

	// invokeMu is held while invoke transforms run, and to change their
	// list.
	invokeMu         sync.Mutex
	invokeTransforms []*pulumirpc.Callback

	mu               sync.Mutex // guards the fields below
	hooks            map[string]*hookEntry
	stackTransforms  []*pulumirpc.Callback
	remoteTransforms map[string][]*pulumirpc.Callback
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
	steps            []Step
	cancelled        bool
	rootURN          string
	signalled        bool
	closed           bool
	selfConn         *grpc.ClientConn
	result           *Result
	programPID       int

	inflight  sync.WaitGroup // RPCs that may create steps
	bg        sync.WaitGroup // goroutines the engine started
	postOnce  sync.Once
	done      chan struct{} // closed when the deployment is finished
	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
}

// Start starts an engine listening on 127.0.0.1 on a free port.
func Start(opts ...Option) (*Engine, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(cfg)
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
	e := &Engine{
		cfg:              cfg,
		prov:             prov,
		addr:             lis.Addr().String(),
		base:             base,
		cancel:           cancel,
		hooks:            map[string]*hookEntry{},
		remoteTransforms: map[string][]*pulumirpc.Callback{},
		resources:        map[string]*resource{},
		defaults:         map[string]*defaultProvider{},
		packages:         map[string]string{},
		prior:            map[string]*ResourceState{},
		claimed:          map[string]string{},
		deleted:          map[*ResourceState]bool{},
		failed:           map[string]bool{},
		done:             make(chan struct{}),
		closing:          make(chan struct{}),
	}
	if cfg.prior != nil {
		for _, r := range cfg.prior.Resources {
			if r.PendingDelete {
				e.replaced = append(e.replaced, r)
			} else {
				e.prior[r.URN] = r
			}
		}
	}
	e.srv = grpc.NewServer(
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.WaitForHandlers(true),
	)
	pulumirpc.RegisterResourceMonitorServer(e.srv, &monitorServer{e: e})
	pulumirpc.RegisterEngineServer(e.srv, &engineServer{e: e})
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		_ = e.srv.Serve(lis)
	}()
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
	return NewURN(e.cfg.stack, e.cfg.project, QualifiedType(parent), typ, name)
}

// StackURN returns the URN of the root stack resource as the Go SDK
// registers it ("<project>-<stack>").
func (e *Engine) StackURN() string {
	return e.URN("", RootStackType, e.cfg.project+"-"+e.cfg.stack)
}

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
	// Err joins the errors of the failed steps, in engine wording, or is
	// nil when every step succeeded.
	Err error
	// Diagnostics are the deployment's diagnostics, as
	// [Engine.Diagnostics].
	Diagnostics []Diagnostic
	// Steps lists the steps in the order they started.
	Steps []Step
}

// Step is one step of the deployment.
type Step struct {
	Op  Op
	URN string
	Err error
}

// Op is a step operation.
type Op string

// Step operations.
const (
	OpSame           Op = "same"
	OpCreate         Op = "create"
	OpUpdate         Op = "update"
	OpReplace        Op = "replace"
	OpImport         Op = "import"
	OpRead           Op = "read"
	OpDelete         Op = "delete"
	OpDeleteReplaced Op = "delete-replaced"
)

// Wait waits until the program has signalled its end (through
// SignalAndWaitForShutdown, or [Engine.Finish]) and the engine has run the
// remaining steps (deletes and their hooks), and returns the deployment's
// result.
func (e *Engine) Wait(ctx context.Context) (*Result, error) {
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
// SignalAndWaitForShutdown (older SDKs, or a program that failed), then
// waits like [Engine.Wait].
func (e *Engine) Finish(ctx context.Context) (*Result, error) {
	e.mu.Lock()
	e.signalled = true
	e.mu.Unlock()
	e.startPostSteps()
	return e.Wait(ctx)
}

// Close stops the engine: it cancels running hooks and provider calls,
// stops the gRPC server, releases a program waiting in
// SignalAndWaitForShutdown and closes every callbacks client. It waits for
// the goroutines it started. Close is idempotent.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		self := e.selfConn
		e.selfConn = nil
		e.mu.Unlock()
		e.cancel()
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
// matched by e.inflight.Done.
func (e *Engine) enter() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return status.Error(codes.Unavailable, "the engine is shutting down")
	}
	if e.signalled {
		return status.Error(codes.FailedPrecondition, "the program has already signalled that it is done")
	}
	e.inflight.Add(1)
	return nil
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

// startPostSteps starts, once, the end of the deployment: deletes, then the
// result.
func (e *Engine) startPostSteps() {
	e.postOnce.Do(func() {
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			defer close(e.done)
			e.inflight.Wait()
			e.runDeletes()
			e.finalize()
		}()
	})
}

// fail records a failed step. Unless ContinueOnError is set, it cancels
// every later step.
func (e *Engine) fail(urn string, err error) {
	e.errorDiag(urn, err.Error())
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errs = append(e.errs, err)
	if urn != "" {
		e.failed[urn] = true
	}
	if !e.cfg.continueOnError {
		e.cancelled = true
	}
}

func (e *Engine) isCancelled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cancelled
}

// startStep records the start of a step and returns its index in e.steps.
func (e *Engine) startStep(op Op, urn string) int {
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

// finalize builds the result.
func (e *Engine) finalize() {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := &State{}
	live := map[string]bool{}
	for _, urn := range e.order {
		if r := e.resources[urn]; r != nil && r.state != nil {
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
		case e.deleted[old]:
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
	e.result = &Result{
		State:       st,
		Err:         errors.Join(e.errs...),
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
