package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/replay"
	"github.com/langhost/callbacks/transforms"
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

// build stands for a value that differs on every run of a program: a
// build number, a time, a random suffix. The log was recorded with build
// 1042.
var build = "1043"

// stamped is a program body whose stack transform tags a pet with the
// build and its team.
func stamped(ctx *pulumi.Context) error {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return err
	}
	if _, err := transforms.RegisterStack(ctx.Context(), mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		return a.WithProperties(func(p resource.PropertyMap) {
			p["tags"] = resource.NewProperty(resource.PropertyMap{
				"build": resource.NewProperty(build),
				"team":  resource.NewProperty("infra"),
			})
		}), nil
	}); err != nil {
		return err
	}
	var pet pulumi.CustomResourceState
	return ctx.RegisterResource("random:index/randomPet:RandomPet", "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet)
}

// printT stands for the test's *testing.T, printing what Run reports.
type printT struct{ testing.TB }

func (printT) Helper()                           {}
func (printT) Errorf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }
func (printT) Logf(format string, args ...any)   { fmt.Printf(format+"\n", args...) }

// The stack transform's build tag differs on every run: IgnorePaths passes
// it, and Run logs it as ignored. Any other difference, the team's say,
// would still fail the test. In a test, the first argument is the test's
// *testing.T; here a stand-in prints what Run reports.
func ExampleIgnorePaths() {
	replay.Run(printT{}, "testdata/stamped.jsonl", stamped, replay.IgnorePaths("properties.tags.build"))
	// Output:
	// replay: call 1 (log line 15), resource transform, stack transform #1, for urn:pulumi:dev::shop::random:index/randomPet:RandomPet::pet: differences ignored (IgnorePaths):
	// 	properties.tags.build: "1042" → "1043" (by "properties.tags.build")
}
