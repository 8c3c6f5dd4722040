package leakcheck

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { Main(m) }

// A goroutine that ends later than goleak's own retries allow is not a
// leak.
func TestSettleWaitsForAGoroutineOnItsWayOut(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	release := make(chan struct{})
	go func() { <-release }()
	// Released well after goleak alone would have given up.
	go func() {
		time.Sleep(time.Second)
		close(release)
	}()
	if err := settle(Settle, baseline); err != nil {
		t.Fatalf("settle: %v", err)
	}
}

// A goroutine that never ends is reported once the limit has passed.
func TestSettleReportsAGoroutineThatStays(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	release := make(chan struct{})
	defer close(release)
	go func() { <-release }()
	if err := settle(50*time.Millisecond, baseline); err == nil {
		t.Fatal("settle found no leak")
	}
}
