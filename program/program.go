// Package program connects code running on the Go SDK — a program under
// `pulumi up`, an Automation API inline program, a component library, a
// component provider's Construct — to this module's callbacks.
//
// Such code keeps the SDK's own shape: pulumi.Run (or auto's inline
// source, or the SDK's provider.Construct) hands it a *pulumi.Context, and
// [Monitor] turns that into the deployment's *monitor.Monitor, which every
// registration of the transforms, invoketransforms, hooks and migrations
// packages takes:
//
//	func main() {
//		pulumi.Run(func(ctx *pulumi.Context) error {
//			mon, err := program.Monitor(ctx)
//			if err != nil {
//				return err
//			}
//			_, err = transforms.RegisterStack(ctx.Context(), mon, tag)
//			…
//		})
//	}
//
// The first call for a deployment starts a callback server in this process
// (with the engine's address, so callbacks.Warn and callbacks.Info show
// under the resource in `pulumi up`; in a component provider's Construct,
// the address of the provider's connection to the engine) and opens the
// engine's monitor bound to it; later calls for the same deployment, from
// any *pulumi.Context of it, return the same Monitor, so a component
// library calls Monitor itself and keeps the SDK's shape,
// NewX(ctx, name, args, opts...).
//
// Three more pieces fit the SDK's programming model to this module's hooks,
// migrations and transforms: [Hooks] is the SDK's own pulumi.ResourceHooks
// option, carrying this module's hooks into the registration of a resource
// the SDK creates (no transform involved), [Migrations] is its
// pulumi.StateMigrations option, carrying this module's state migrations
// (the SDK's own callback server carries their calls: see there), and
// [Descendants] is the scope of a component the SDK registered, for
// hooks.Attach and transforms.Attach to reach the resources a program puts
// under it. The server serves for as long as the deployment runs — delete
// hooks after the program included (see "Delete hooks" in package hooks) —
// and shuts itself down when the engine ends the deployment (see
// monitor.Monitor.Done): nothing to call at the end, under `pulumi up` or
// in a service that runs many inline deployments.
//
// The program itself runs under pulumi.Run, so the stack traces the SDK
// records for every resource are exactly as deep as without this module.
//
// What the SDK does not expose (the monitor's address, a hook's
// registration, its own callback server) is read and set in its unexported
// state in one file, sdkstate.go, verified for SDK v3.274.1 and v3.276.0;
// on an SDK that keeps it otherwise, Monitor, Hooks and Migrations say so.
package program

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
)

// shutdownTimeout bounds how long a deployment's callback server waits for
// calls in flight once the engine has ended the deployment.
const shutdownTimeout = 30 * time.Second

// ErrNoEngine is wrapped by the error [Monitor] returns for a context with
// no engine behind it: one made with pulumi.WithMocks, whose mock monitor
// never calls callbacks back. Test with github.com/langhost/callbacks/enginetest
// instead: it runs the program against a simulated engine that calls them.
var ErrNoEngine = errors.New("program: no engine to call callbacks back")

// ErrStarted is wrapped by the error [Monitor] returns for server options
// given after the deployment's callback server has started. It wraps
// callbacks.ErrInvalidOption in turn; unlike that error, which an invalid
// option on the first call also gives, it says that the server is running
// and Monitor(ctx) without options returns its Monitor.
var ErrStarted = fmt.Errorf("%w: program: the deployment's callback server has already started", callbacks.ErrInvalidOption)

// sessions holds the live deployments of this process, by monitor address.
var sessions = struct {
	sync.Mutex
	m map[string]*session
}{m: make(map[string]*session)}

// session is one deployment's callback server and the monitor bound to it.
type session struct {
	srv *callbacks.Server
	mon *monitor.Monitor
}

// Monitor returns the ResourceMonitor of the deployment ctx belongs to,
// bound to the deployment's callback server, starting both on the first
// call. opts configure the server (a logger, an observer, deadlines per
// kind; the engine's address is set already) and may be given only on that
// first call, since the server is configured once: later calls with
// options fail with an error wrapping [ErrStarted], and calls without
// options return the Monitor. A program can read its stack configuration
// first and choose them from it.
//
// Code that cannot know whether its call is the deployment's first, such as
// the Construct of a component provider, which the engine may call for
// several components at once, calls Monitor(ctx) without options; if it
// must configure the server, it gives the options and, on [ErrStarted],
// calls Monitor(ctx) again without them to get the Monitor that another
// call configured (see the example).
//
// The server shuts itself down when the engine ends the deployment: once it
// has run the last step and hook, or when its process exits. A later
// deployment, even one whose engine reuses the address, gets a new server
// and a new hook name space.
func Monitor(ctx *pulumi.Context, opts ...callbacks.ServerOption) (*monitor.Monitor, error) {
	if ctx == nil {
		return nil, errors.New("program: nil *pulumi.Context")
	}
	info, err := runInfo(ctx)
	if err != nil {
		return nil, err
	}
	if info.MonitorAddr == "" {
		return nil, fmt.Errorf("%w: the context has no resource monitor address (pulumi.WithMocks? mocks never call callbacks; "+
			"test with github.com/langhost/callbacks/enginetest, whose engine does)", ErrNoEngine)
	}

	sessions.Lock()
	defer sessions.Unlock()
	if s := sessions.m[info.MonitorAddr]; s != nil && !over(s.mon) {
		if len(opts) > 0 {
			return nil, fmt.Errorf("%w, and options configure it on the deployment's first Monitor call only; "+
				"call Monitor(ctx) without options to get it", ErrStarted)
		}
		return s.mon, nil
	}
	srvOpts := opts
	if info.EngineAddr != "" {
		srvOpts = append([]callbacks.ServerOption{callbacks.EngineAddress(info.EngineAddr)}, opts...)
	}
	srv, err := callbacks.Listen(srvOpts...)
	if err != nil {
		return nil, fmt.Errorf("program: starting the callback server: %w", err)
	}
	mon, err := monitor.Dial(info.MonitorAddr, srv)
	if err != nil {
		return nil, errors.Join(err, srv.Close())
	}
	s := &session{srv: srv, mon: mon}
	sessions.m[info.MonitorAddr] = s
	go s.end(info.MonitorAddr)
	return mon, nil
}

// end waits for the engine to end the deployment, then shuts the server
// down and forgets the session.
func (s *session) end(addr string) {
	<-s.mon.Done()
	sessions.Lock()
	if sessions.m[addr] == s {
		delete(sessions.m, addr)
	}
	sessions.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

func over(m *monitor.Monitor) bool {
	select {
	case <-m.Done():
		return true
	default:
		return false
	}
}
