package registration

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

func TestMain(m *testing.M) {
	// glog, linked with the SDK, starts a flush daemon that runs for the
	// life of the process.
	leakcheck.Main(m, goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"))
}
