package replay_test

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/replay"
)

// deploy stands for a program's body, the function its main gives
// pulumi.Run.
func deploy(ctx *pulumi.Context) error { return nil }

// A deployment's log, recorded with PULUMI_DEBUG_GRPC=$PWD/up.jsonl pulumi up
// and scrubbed into testdata, becomes a test of the program's callbacks in
// the program's package (examples/replay is a complete one). The test fails
// wherever a transform, hook, error hook or migration now answers the
// recorded request differently; CALLBACKS_REPLAY_UPDATE=1 go test accepts
// the new answers.
func ExampleRun() {
	_ = func(t *testing.T) { // func TestReplay(t *testing.T)
		replay.Run(t, "testdata/up.jsonl", deploy)
	}
}
