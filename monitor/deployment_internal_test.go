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

// valueKey is a key of Monitor.Value, of a type of its own as a package
// building on Monitor would use.
type valueKey struct{}

// value returns m's value under valueKey, making it from n if there is
// none.
func value(m *Monitor, n int) int {
	return m.Value(valueKey{}, func() any { return n }).(int)
}

// The monitors of one deployment share its values (the hook name space,
// for one), which end with the deployment: a later deployment whose engine
// listens on the same address starts afresh.
func TestValuesEndWithTheDeployment(t *testing.T) {
	addr, stop := engineAt(t, "127.0.0.1:0")
	first := dial(t, addr)
	second := dial(t, addr) // another Construct of the same deployment
	require.Equal(t, 1, value(first, 1))
	require.Equal(t, 1, value(second, 2), "monitors of one deployment must share values")

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
	assert.Equal(t, 3, value(next, 3), "the next deployment sees the last one's values")
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

// A monitor made with New has no deployment to share with: its values are
// its own.
func TestNewMonitorsKeepValuesOfTheirOwn(t *testing.T) {
	client := pulumirpc.NewResourceMonitorClient(nil)
	first, err := New(client, newServer(t))
	require.NoError(t, err)
	second, err := New(client, first.Server())
	require.NoError(t, err)
	assert.Equal(t, 1, value(first, 1))
	assert.Equal(t, 2, value(second, 2), "monitors made with New share values")
	assert.Equal(t, 1, value(first, 3))
}
