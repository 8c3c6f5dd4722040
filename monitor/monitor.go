// Package monitor wraps the Pulumi engine's ResourceMonitor for callback
// registration: it connects the way programs and component providers are
// told to, checks the engine's features before anything is registered, keeps
// the name space that resource hooks and error hooks share, and ends a
// program's life in the order the engine needs (signal, wait for the delete
// hooks, then stop the callback server).
package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// EnvMonitor is the environment variable through which the language host
// tells a `pulumi.Run` program the monitor's address.
const EnvMonitor = "PULUMI_MONITOR"

// ErrNoMonitor is returned by [FromEnv] and [FromConstruct] when no monitor
// address was given.
var ErrNoMonitor = errors.New("monitor: no resource monitor address")

// Monitor is a ResourceMonitor client plus what this module needs to know
// about the deployment. It is safe for concurrent use.
type Monitor struct {
	client pulumirpc.ResourceMonitorClient
	conn   *grpc.ClientConn // owned, closed by Close; nil when borrowed

	infoMu    sync.Mutex
	infoKnown bool
	info      *pulumirpc.DeploymentInfo // nil on engines without GetDeploymentInfo

	legacyMu sync.Mutex
	legacy   map[string]bool // SupportsFeature answers, on old engines

	namesMu sync.Mutex
	names   map[string]reservation

	shutdownOnce sync.Once
	shutdownErr  error
}

// New wraps an existing client. Close does not close its connection.
func New(client pulumirpc.ResourceMonitorClient) *Monitor {
	return &Monitor{client: client, names: make(map[string]reservation)}
}

// NewFromConn wraps an existing connection. Close does not close it.
func NewFromConn(conn grpc.ClientConnInterface) *Monitor {
	return New(pulumirpc.NewResourceMonitorClient(conn))
}

// Dial connects to the monitor at addr ("127.0.0.1:PORT", as the engine hands
// it out) with the engine's 400 MiB message limits. Close closes the
// connection.
func Dial(addr string) (*Monitor, error) {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(callbacks.DefaultMaxMessageSize),
			grpc.MaxCallSendMsgSize(callbacks.DefaultMaxMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("monitor: dial %q: %w", addr, err)
	}
	m := NewFromConn(conn)
	m.conn = conn
	return m, nil
}

// FromEnv connects to the monitor named by PULUMI_MONITOR, the variable the
// language host sets for `pulumi.Run` programs.
func FromEnv() (*Monitor, error) {
	addr := os.Getenv(EnvMonitor)
	if addr == "" {
		return nil, fmt.Errorf("%w: %s is not set (is this program run by `pulumi`?)", ErrNoMonitor, EnvMonitor)
	}
	return Dial(addr)
}

// FromConstruct connects to the monitor endpoint that a component provider
// receives in its Construct request.
func FromConstruct(req *pulumirpc.ConstructRequest) (*Monitor, error) {
	if req.GetMonitorEndpoint() == "" {
		return nil, fmt.Errorf("%w: the ConstructRequest has no monitorEndpoint", ErrNoMonitor)
	}
	return Dial(req.GetMonitorEndpoint())
}

// Client returns the underlying ResourceMonitor client.
func (m *Monitor) Client() pulumirpc.ResourceMonitorClient { return m.client }

// Close closes the connection if Dial, FromEnv or FromConstruct opened it.
func (m *Monitor) Close() error {
	if m.conn == nil {
		return nil
	}
	return m.conn.Close()
}

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

// Finish ends a program's life in the order the engine needs: signal the
// engine and wait (see [Monitor.SignalAndWaitForShutdown]), then shut srv
// down gracefully, bounded by ctx. The server is shut down even when the
// signal fails; both errors are returned.
func (m *Monitor) Finish(ctx context.Context, srv *callbacks.Server) error {
	sigErr := m.SignalAndWaitForShutdown(ctx)
	var shutErr error
	if srv != nil {
		if shutErr = srv.Shutdown(ctx); shutErr != nil {
			shutErr = fmt.Errorf("monitor: shutting down the callback server: %w", shutErr)
		}
	}
	return errors.Join(sigErr, shutErr)
}
