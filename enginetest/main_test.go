package enginetest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/langhost/callbacks/internal/testkit/leakcheck"
)

// leakOptions are the goroutines the leak check ignores. Test files that
// link heavier dependencies add theirs in init.
var leakOptions []goleak.Option

func TestMain(m *testing.M) {
	leakcheck.Main(m, leakOptions...)
}
