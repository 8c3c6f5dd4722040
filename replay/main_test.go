package replay

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

// TestMain checks that nothing Run starts outlives it for long: the
// stand-in engine, the program's callback servers (which end when the
// engine closes its connections) and the SDK's that carries
// program.Migrations. The one exception is the SDK's callback server of a
// program on the plain SDK (TestReplayOfRecordedPlainSDKLogs), which the
// SDK never stops, after Run as after any deployment.
func TestMain(m *testing.M) {
	leakcheck.Main(m,
		goleak.IgnoreAnyFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		goleak.IgnoreAnyFunction("github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil.serveWithOptions.func1"),
		goleak.IgnoreAnyFunction("github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil.serveWithOptions.func2"),
	)
}
