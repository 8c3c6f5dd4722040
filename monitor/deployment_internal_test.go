package monitor

import (
	"errors"
	"net"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/access"
)

// engineAt serves an empty ResourceMonitor on addr ("127.0.0.1:0" for any
// port) and returns its address and a func that stops it, as the engine
// stops its monitor at the end of a deployment.
func engineAt(t *testing.T, addr string) (string, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s := grpc.NewServer()
	pulumirpc.RegisterResourceMonitorServer(s, pulumirpc.UnimplementedResourceMonitorServer{})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	stop := func() { s.GracefulStop(); <-done }
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

func newServer(t *testing.T) *callbacks.Server {
	t.Helper()
	srv, err := callbacks.Listen()
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func dial(t *testing.T, addr string) *Monitor {
	t.Helper()
	m, err := Dial(addr, newServer(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func waitDone(t *testing.T, m *Monitor) {
	t.Helper()
	select {
	case <-m.Done():
	case <-t.Context().Done():
		t.Fatal("the monitor never saw the end of the deployment")
	}
}

// The monitors of one deployment share its hook name space, which ends with
// the deployment: a later deployment whose engine listens on the same
// address starts with every name free.
func TestHookNamesEndWithTheDeployment(t *testing.T) {
	addr, stop := engineAt(t, "127.0.0.1:0")
	first := dial(t, addr)
	second := dial(t, addr) // another Construct of the same deployment
	require.NoError(t, first.names.Reserve("audit", 1))
	err := second.names.Reserve("audit", 2)
	require.ErrorIs(t, err, access.ErrNameTaken, "monitors of one deployment must share names")

	select {
	case <-first.Done():
		t.Fatal("Done closed while the deployment runs")
	default:
	}
	stop() // the engine ends the deployment
	waitDone(t, first)
	waitDone(t, second)

	deployments.Lock()
	_, kept := deployments.m[addr]
	deployments.Unlock()
	assert.False(t, kept, "the ended deployment's state is still held")

	engineAt(t, addr) // the next deployment's engine gets the same port
	next := dial(t, addr)
	assert.NoError(t, next.names.Reserve("audit", 3), "the next deployment sees the last one's names")
}

// A component provider dials the engine once per Construct and may close
// each monitor when its Construct returns: the deployment's names outlive
// every monitor, until the engine ends the deployment.
func TestClosingMonitorsKeepsTheDeployment(t *testing.T) {
	addr, stop := engineAt(t, "127.0.0.1:0")
	first := dial(t, addr)
	require.NoError(t, first.names.Reserve("audit", 1))
	require.NoError(t, first.Close())

	second := dial(t, addr) // the next Construct
	require.ErrorIs(t, second.names.Reserve("audit", 2), access.ErrNameTaken,
		"closing the first Construct's monitor dropped the deployment's names")
	require.NoError(t, second.Close())

	stop()
	waitDone(t, second)
	deployments.Lock()
	_, kept := deployments.m[addr]
	deployments.Unlock()
	assert.False(t, kept, "the ended deployment's state is still held")
}

// A monitor whose engine cannot be reached is over at once: nothing will
// ever call its server back.
func TestUnreachableEngineIsOver(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	m := dial(t, addr)
	waitDone(t, m)
	_, err = m.DeploymentInfo(t.Context())
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrNoMonitor))
}
