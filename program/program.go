// Package program runs a Pulumi Go program that registers callbacks: it is
// pulumi.Run with a callback server around it.
//
// [Run] and [RunErr] take the place of pulumi.Run and pulumi.RunErr. Before
// the program's body runs they start a callback server (with the engine's
// address from PULUMI_ENGINE, so callbacks.Warn and callbacks.Info show
// under the resource in `pulumi up`) and open the engine's ResourceMonitor
// bound to that server. The body gets the Go SDK's *pulumi.Context and that
// *monitor.Monitor, registers its transforms and hooks and creates its
// resources. After the body, the Go SDK signals the engine and waits for it
// to run what is left, delete hooks included; only then does the server
// shut down, gracefully and within a bound. There is nothing to call at the
// end and no order to know.
//
// Run reports like pulumi.Run: an error is logged to the engine as "an
// unhandled error occurred: program failed: …" and the process exits with
// status 32, which the CLI reads as "already reported". RunErr returns the
// error instead.
//
// # Binding hooks and transforms to the program's resources
//
// The Go SDK's ResourceOption interface is closed, and its ResourceHooks
// option fails (a nil pointer in the SDK) on a hook the SDK did not register
// itself. So hooks registered with this module's hooks package, and
// per-resource transforms of its transforms package, bind to resources the
// program creates with the SDK through hooks.Attach: a stack transform that
// adds the hooks to every resource its selector matches.
//
// Stack transforms registered in the body apply to the resources the body
// registers after them. The stack resource itself, which the SDK registers
// while the body starts, may or may not pass through them.
//
// Stack transforms of this module see a resource's properties as
// resource.PropertyMap; the SDK's own transforms see nested objects as
// pulumi.Map. Both run in the same deployment, in registration order.
//
// Nothing here depends on file paths or debug information, so programs built
// the way the Go language host builds them (-trimpath -ldflags "-w -s")
// behave the same.
package program

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/constant"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
)

// Func is the body of a program. ctx is the Go SDK's context, as pulumi.Run
// gives it; mon is the engine's ResourceMonitor, bound to the callback
// server, for the registrations of the transforms, invoketransforms, hooks
// and migrations packages. ctx.Context() is the context.Context to pass them.
type Func func(ctx *pulumi.Context, mon *monitor.Monitor) error

// ExitStatus is the status [Run] exits with when the program fails: the
// status pulumi.Run uses to tell the CLI the error has been reported.
const ExitStatus = constant.ExitStatusLoggedError

// DefaultShutdownTimeout bounds how long the callback server waits for calls
// in flight once the deployment has ended.
const DefaultShutdownTimeout = 30 * time.Second

// logTimeout bounds the report of a failure to the engine.
const logTimeout = 10 * time.Second

// envPlugins is the variable with which the CLI asks a program to print the
// plugins it needs and exit.
const envPlugins = "PULUMI_PLUGINS"

// An Option configures [Run] and [RunErr].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	server   []callbacks.ServerOption
	run      []pulumi.RunOption
	shutdown time.Duration
	errs     []error
}

// ServerOptions configures the callback server: a logger, an observer,
// deadlines per kind. The engine address is set already; an
// EngineAddress given here wins.
func ServerOptions(opts ...callbacks.ServerOption) Option {
	return optionFunc(func(c *config) { c.server = append(c.server, opts...) })
}

// RunOptions passes options to the Go SDK's run function. An option that
// changes the monitor or engine address changes it for the callbacks too.
// pulumi.WithMocks is refused: a program with mocks has no engine to call it
// back; test it with the enginetest package instead.
func RunOptions(opts ...pulumi.RunOption) Option {
	return optionFunc(func(c *config) { c.run = append(c.run, opts...) })
}

// ShutdownTimeout bounds how long the callback server waits for calls in
// flight after the deployment has ended (default [DefaultShutdownTimeout]).
// It must be positive.
func ShutdownTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("program: ShutdownTimeout(%v): must be positive", d))
			return
		}
		c.shutdown = d
	})
}

// Run runs the program's body like pulumi.Run, serving its callbacks for as
// long as the engine may call them. On failure it logs the error to the
// engine as pulumi.Run does ("an unhandled error occurred: program failed:
// …") and exits the process with [ExitStatus]; it returns only on success.
func Run(body Func, opts ...Option) {
	if requested(os.Getenv(envPlugins)) {
		pulumi.Run(func(*pulumi.Context) error { return nil }, runOptions(opts)...) // prints the plugins and exits
		return
	}
	err := run(body, true, opts)
	if err == nil {
		return
	}
	os.Exit(ExitStatus)
}

// RunErr runs the program's body like pulumi.RunErr and returns its error,
// joined with any error of the callback server's shutdown.
func RunErr(body Func, opts ...Option) error {
	return run(body, false, opts)
}

func runOptions(opts []Option) []pulumi.RunOption {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	return c.run
}

func requested(v string) bool {
	b, _ := strconv.ParseBool(v)
	return b
}

// run does the work of Run (report true) and RunErr.
func run(body Func, report bool, opts []Option) error {
	cfg := config{shutdown: DefaultShutdownTimeout}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := errors.Join(cfg.errs...); err != nil {
		return err
	}
	if body == nil {
		return errors.New("program: nil body")
	}
	if requested(os.Getenv(envPlugins)) {
		return pulumi.RunErr(func(*pulumi.Context) error { return nil }, cfg.run...)
	}

	// The addresses as the SDK will see them: the environment, then the
	// run options. Checked in the SDK's order and words, so that a program
	// started outside `pulumi` fails the same way with or without callbacks.
	info := pulumi.RunInfo{
		Project:     os.Getenv(pulumi.EnvProject),
		Stack:       os.Getenv(pulumi.EnvStack),
		MonitorAddr: os.Getenv(pulumi.EnvMonitor),
		EngineAddr:  os.Getenv(pulumi.EnvEngine),
	}
	for _, o := range cfg.run {
		o(&info)
	}
	switch {
	case info.Mocks != nil:
		return errors.New("program: pulumi.WithMocks is not supported: mocks never call callbacks back; test with enginetest")
	case info.Project == "":
		return errors.New("missing project name")
	case info.Stack == "":
		return errors.New("missing stack name")
	case info.MonitorAddr == "":
		return errors.New("missing resource monitor RPC address")
	case info.EngineAddr == "":
		return errors.New("missing engine RPC address")
	}

	var reportErr func(error)
	if report {
		reportErr = func(err error) { logUnhandled(info.EngineAddr, err) }
	}
	return serve(body, info, cfg, reportErr)
}

// serve starts the callback server, runs the SDK's run function and shuts
// the server down once that has returned. RunErr returns only after the
// SDK's SignalAndWaitForShutdown, when the engine has run its last step and
// called its last hook, so the server stops when nothing can call it. An
// error is given to reportErr (if not nil) as soon as it is known, so that
// the engine gets it before the server's shutdown, as it gets pulumi.Run's.
func serve(body Func, info pulumi.RunInfo, cfg config, reportErr func(error)) error {
	fail := func(err error) error {
		if reportErr != nil {
			reportErr(err)
		}
		return err
	}
	srvOpts := append([]callbacks.ServerOption{callbacks.EngineAddress(info.EngineAddr)}, cfg.server...)
	srv, err := callbacks.Listen(srvOpts...)
	if err != nil {
		return fail(fmt.Errorf("program: starting the callback server: %w", err))
	}
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.shutdown)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			return fmt.Errorf("program: shutting down the callback server: %w", err)
		}
		return nil
	}

	mon, err := monitor.Dial(info.MonitorAddr, srv)
	if err != nil {
		return errors.Join(fail(err), shutdown())
	}
	err = pulumi.RunErr(func(ctx *pulumi.Context) error {
		return body(ctx, mon)
	}, cfg.run...)
	_ = mon.Close() // the SDK has signalled the engine: nothing is registered any more
	if err != nil {
		return errors.Join(fail(err), shutdown())
	}
	if err := shutdown(); err != nil {
		return fail(err)
	}
	return nil
}

// logUnhandled reports err to the engine in the words of pulumi.Run, at
// error severity and attached to no resource.
func logUnhandled(engineAddr string, err error) {
	msg := fmt.Sprintf("an unhandled error occurred: program failed: \n%v", err)
	conn, dialErr := grpc.NewClient(engineAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if dialErr == nil {
		defer func() { _ = conn.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), logTimeout)
		defer cancel()
		_, dialErr = pulumirpc.NewEngineClient(conn).Log(ctx, &pulumirpc.LogRequest{
			Severity: pulumirpc.LogSeverity_ERROR,
			Message:  strings.ToValidUTF8(msg, "\uFFFD"),
		})
	}
	if dialErr != nil {
		// The engine is gone: stderr is all that is left.
		fmt.Fprintln(os.Stderr, msg)
	}
}
