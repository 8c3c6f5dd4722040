// Package leakcheck ends a package's tests with goleak's check that no
// goroutine outlives them, as goleak.VerifyTestMain does, except that
// goroutines on their way out get as long as they need: goleak's own
// retries last under half a second, which a busy machine can exceed.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Settle is how long goroutines get to end after the tests pass. It guards
// against a leak; a goroutine on its way out needs far less, even on a busy
// machine.
const Settle = time.Minute

// Main runs the tests of m. If they pass, it waits until goleak finds no
// goroutine but those opts ignore, for up to Settle, and fails the test
// binary with goleak's report if some remain.
func Main(m *testing.M, opts ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		if err := settle(Settle, opts...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// settle looks for leaked goroutines until there are none or limit has
// passed, and returns what goleak found last.
func settle(limit time.Duration, opts ...goleak.Option) error {
	deadline := time.Now().Add(limit)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
