package calllog

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

// The comparison with replay (replay_test.go) links the SDK's plugin
// package, which starts glog's flush daemon at init.
func TestMain(m *testing.M) {
	leakcheck.Main(m, goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct{ endpoint, switchTo, want string }{
		{"", "", ""},
		{"localhost:4317", "", "localhost:4317"},
		{" localhost:4317 ", "on", "localhost:4317"},
		{"localhost:4317", "off", ""},
		{"localhost:4317", "Off", ""},
		{"localhost:4317", "0", ""},
		{"localhost:4317", "false", ""},
	} {
		env := map[string]string{EndpointEnv: tc.endpoint, SwitchEnv: tc.switchTo}
		if got := Endpoint(func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("Endpoint with %q, %s=%q: got %q, want %q", tc.endpoint, SwitchEnv, tc.switchTo, got, tc.want)
		}
	}
}

// A record put after Close is dropped and counted, and nothing is left
// running; an exporter that never sent dials nothing.
func TestCloseThenPut(t *testing.T) {
	e, err := New("127.0.0.1:1", DefaultLimits, false)
	if err != nil {
		t.Fatal(err)
	}
	e.Close(context.Background())
	e.Close(context.Background()) // idempotent
	c := &Call{Kind: "resource_hook"}
	e.Start(c, nil)
	e.Finish(c, End{})
	if got := e.Stats(); got != (Stats{Dropped: 2}) {
		t.Errorf("got %+v, want two dropped", got)
	}
}
