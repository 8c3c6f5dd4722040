package main

import (
	"testing"

	"github.com/langhost/callbacks/replay"
)

// TestReplay replays testdata/up.jsonl, the engine's log of a `pulumi up`
// of this program, against deploy as it is now: each recorded transform,
// hook and error hook call is sent again, byte for byte, to the function
// registered in its place, and the test fails, naming the call and the
// property, where today's answer differs. After a change you mean,
// CALLBACKS_REPLAY_UPDATE=1 go test . rewrites the recorded answers.
func TestReplay(t *testing.T) {
	replay.Run(t, "testdata/up.jsonl", deploy)
}
