package replay

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

// TestMain checks that nothing Run starts outlives it for long: the
// stand-in engine, the program's callback servers (which end when the
// engine closes its connections) and the SDK's.
func TestMain(m *testing.M) {
	leakcheck.Main(m, goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}
