// Package monitor wraps the Pulumi engine's ResourceMonitor for callback
// registration: it connects the way programs are told to, checks the
// engine's features before anything is registered, keeps the state that
// packages built on it hold per deployment (the hook name space, for one),
// knows when the engine ends the deployment, and ends
// a program's life in the order the engine needs (signal, wait for the
// delete hooks, then stop the callback server).
//
// Code on the Go SDK — a program, a component library, a component
// provider's Construct — gets the deployment's Monitor from
// program.Monitor rather than making one here.
package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// EnvMonitor is the environment variable through which the language host
// tells a `pulumi.Run` program the monitor's address.
const EnvMonitor = "PULUMI_MONITOR"

// ErrNoMonitor is wrapped by the error [FromEnv], [Dial] and [New] return
// when no monitor address or client was given.
var ErrNoMonitor = errors.New("monitor: no resource monitor address")

// Monitor is a ResourceMonitor client bound to the callback server whose
// callbacks it hands to the engine, plus what this module needs to know about
// the deployment. It is the one value every registration takes. It is safe
// for concurrent use.
type Monitor struct {
	client pulumirpc.ResourceMonitorClient
	srv    *callbacks.Server
	values *values // the deployment's, or the monitor's own for New

	infoMu    sync.Mutex
	infoKnown bool
	info      *pulumirpc.DeploymentInfo // nil on engines without GetDeploymentInfo

	legacyMu sync.Mutex
	legacy   map[string]bool // SupportsFeature answers, on old engines

	shutdownOnce sync.Once
	shutdownErr  error

	done <-chan struct{} // closed when the deployment is over; nil for New
}

// errNoServer is the error of a constructor given no server.
var errNoServer = fmt.Errorf("%w: monitor: nil callback server", callbacks.ErrNilArgument)

// New wraps an existing client, bound to srv. Monitors made with New keep
// values of their own (see [Monitor.Value]); monitors made with [Dial] and
// [FromEnv] share them per monitor address, that is, per deployment.
func New(client pulumirpc.ResourceMonitorClient, srv *callbacks.Server) (*Monitor, error) {
	switch {
	case client == nil:
		return nil, fmt.Errorf("%w: nil ResourceMonitor client", ErrNoMonitor)
	case srv == nil:
		return nil, errNoServer
	}
	return &Monitor{client: client, srv: srv, values: &values{}}, nil
}

// deployments holds, by monitor address, the deployments this process takes
// part in through [Dial]: one connection to the engine's monitor and the
// values of [Monitor.Value] each, which every Monitor dialled to that
// address shares. The
// engine checks hook names per deployment, and a component provider dials
// the same address once per Construct, so both must outlive each Monitor.
// A deployment is forgotten when the engine ends it (see [Monitor.Done]),
// so that a later deployment whose engine happens to listen on the same
// address starts afresh, and a long-lived process holds nothing per
// deployment that is over.
var deployments = struct {
	sync.Mutex
	m map[string]*deployment
}{m: make(map[string]*deployment)}

// deployment is what the monitors of one deployment share.
type deployment struct {
	conn   *grpc.ClientConn
	values *values
	done   chan struct{} // closed when the engine has ended the deployment
}

// Dial connects to the monitor at addr ("127.0.0.1:PORT", as the engine hands
// it out) with the engine's 400 MiB message limits, bound to srv. Every
// Monitor dialled to one address shares its connection and its values (see
// [Monitor.Value]) until the engine ends the deployment, which closes the connection
// (see [Monitor.Done]). Its calls are client spans, their trace context sent to
// the engine, made by the tracer provider of the server of the first Monitor
// dialled to addr (see [callbacks.Server.TracerProvider]).
func Dial(addr string, srv *callbacks.Server) (*Monitor, error) {
	if srv == nil {
		return nil, errNoServer
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: empty address", ErrNoMonitor)
	}
	d, err := joinDeployment(addr, srv.TracerProvider())
	if err != nil {
		return nil, err
	}
	m, _ := New(pulumirpc.NewResourceMonitorClient(d.conn), srv)
	m.values = d.values
	m.done = d.done
	return m, nil
}

// joinDeployment returns the live deployment whose monitor listens at addr,
// connecting to it first if there is none.
func joinDeployment(addr string, tp trace.TracerProvider) (*deployment, error) {
	deployments.Lock()
	defer deployments.Unlock()
	if d := deployments.m[addr]; d != nil {
		select {
		case <-d.done:
		default:
			return d, nil
		}
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Idleness would close the connection while the engine still
		// runs steps, and the watch would take it for the end.
		grpc.WithIdleTimeout(0),
		// A client span per call in the program's trace, its context sent
		// to the engine as W3C Trace Context, as the SDK's own calls are.
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp),
			otelgrpc.WithPropagators(propagation.TraceContext{}))),
		grpc.WithChainUnaryInterceptor(refuseInsideMigration),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(callbacks.DefaultMaxMessageSize),
			grpc.MaxCallSendMsgSize(callbacks.DefaultMaxMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("monitor: dial %q: %w", addr, err)
	}
	d := &deployment{conn: conn, values: &values{}, done: make(chan struct{})}
	deployments.m[addr] = d
	go d.watch(addr)
	return d, nil
}

// watch waits for the engine to end the deployment, then forgets it and
// closes its connection. The engine stops its monitor's server when the
// deployment ends (after the delete steps and their hooks), and its process
// exits soon after; either ends the connection. A connection that cannot be
// made at all ends the deployment too: nothing will call its callbacks.
func (d *deployment) watch(addr string) {
	d.conn.Connect()
	ready := false
	for ended := false; !ended; {
		state := d.conn.GetState()
		switch state {
		case connectivity.Ready:
			ready = true
		case connectivity.Idle:
			if ready {
				ended = true // the engine closed the connection
				continue
			}
			d.conn.Connect()
		case connectivity.TransientFailure, connectivity.Shutdown:
			ended = true
			continue
		}
		d.conn.WaitForStateChange(context.Background(), state)
	}
	deployments.Lock()
	if deployments.m[addr] == d {
		delete(deployments.m, addr)
	}
	deployments.Unlock()
	close(d.done)
	_ = d.conn.Close()
}

// Done returns a channel that is closed when the engine has ended the
// deployment of a monitor made with [Dial] or [FromEnv]:
// it closes the connection to its monitor once it has run the last step and
// hook of the deployment (its process exits soon after), or the connection
// could not be made. Nothing calls the deployment's callbacks afterwards.
// Monitors made with [New] have no connection of their own to watch: Done
// returns nil for them, a channel that is never closed.
func (m *Monitor) Done() <-chan struct{} { return m.done }

// FromEnv connects to the monitor named by PULUMI_MONITOR, the variable the
// language host sets for `pulumi.Run` programs, bound to srv.
func FromEnv(srv *callbacks.Server) (*Monitor, error) {
	addr := os.Getenv(EnvMonitor)
	if addr == "" {
		return nil, fmt.Errorf("%w: %s is not set (is this program run by `pulumi`?)", ErrNoMonitor, EnvMonitor)
	}
	return Dial(addr, srv)
}

// Server returns the callback server the monitor is bound to.
func (m *Monitor) Server() *callbacks.Server { return m.srv }

// Client returns the underlying ResourceMonitor client.
func (m *Monitor) Client() pulumirpc.ResourceMonitorClient { return m.client }

// SignalAndWaitForShutdown tells the engine the program has registered
// everything and blocks until the engine has run the remaining steps,
// including delete hooks of resources the program no longer declares. The
// callback server must keep serving until it returns. Engines that predate
// the call answer UNIMPLEMENTED, which counts as done. Only the first call
// talks to the engine; later calls return its result.
func (m *Monitor) SignalAndWaitForShutdown(ctx context.Context) error {
	m.shutdownOnce.Do(func() {
		_, err := m.client.SignalAndWaitForShutdown(ctx, &emptypb.Empty{})
		if status.Code(err) == codes.Unimplemented {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("monitor: signal and wait for shutdown: %w", err)
		}
		m.shutdownErr = err
	})
	return m.shutdownErr
}

// Finish ends the life of a program that does not run under the SDK's
// pulumi.Run or RunErr (those signal the engine themselves, and a second
// signal fails): signal the engine and wait (see
// [Monitor.SignalAndWaitForShutdown]), then shut the bound server down
// gracefully, bounded by ctx. The server is shut down even when the signal
// fails; both errors are returned.
//
// Never call Finish on a Monitor from program.Monitor, nor from any code the
// Go SDK runs (a pulumi.Run program, an Automation API inline program, a
// component provider's Construct): the SDK registers resources in the
// background, so Finish would signal the engine and stop the server while
// registrations are still pending, and their transforms and hooks would
// find no server. That server shuts itself down when the engine ends the
// deployment; there is nothing to call.
func (m *Monitor) Finish(ctx context.Context) error {
	sigErr := m.SignalAndWaitForShutdown(ctx)
	shutErr := m.srv.Shutdown(ctx)
	if shutErr != nil {
		shutErr = fmt.Errorf("monitor: shutting down the callback server: %w", shutErr)
	}
	return errors.Join(sigErr, shutErr)
}

// Value returns the value kept under key for the monitor's deployment,
// storing the result of create under it first if there is none. It is how
// packages that build on Monitor keep state per deployment: package hooks
// keeps the deployment's hook name space here, and package transforms the
// transform its attached bindings share. Every Monitor dialled to one
// address shares these values until the engine ends the deployment; a
// monitor made with [New] has values of its own. Use a key of an
// unexported type, as with context.Context.Value. create runs at most once
// per key and deployment, and must not call Value.
func (m *Monitor) Value(key any, create func() any) any {
	v := m.values
	v.mu.Lock()
	defer v.mu.Unlock()
	if got, ok := v.m[key]; ok {
		return got
	}
	if v.m == nil {
		v.m = make(map[any]any)
	}
	got := create()
	v.m[key] = got
	return got
}

// values are the values kept for one deployment (see Monitor.Value).
type values struct {
	mu sync.Mutex
	m  map[any]any
}
