package replay

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// synthProgram is the program writeSyntheticLog's log was written for: a
// stack transform that adds the prefix "tx" and binds the hook "audit"
// before create, and pets pet-0 … pet-(n-1).
func synthProgram(n int, prefix string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		c := ctx.Context()
		if _, err := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			a.Properties()["prefix"] = resource.NewProperty(prefix)
			a.Options.Hooks = &transforms.HooksBinding{BeforeCreate: []transforms.HookRef{transforms.HookName("audit")}}
			return a.Result(), nil
		}); err != nil {
			return err
		}
		if _, err := hooks.Register(c, mon, "audit", func(context.Context, *hooks.Args) error { return nil }); err != nil {
			return err
		}
		for i := range n {
			var pet pulumi.CustomResourceState
			if err := ctx.RegisterResource(petType, "pet-"+strconv.Itoa(i), pulumi.Map{"length": pulumi.Int(2)}, &pet); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestReplayOfTheSyntheticLog replays the reader's synthetic log against
// the program it describes: the two sides of the package agree on what
// the log says.
func TestReplayOfTheSyntheticLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "synthetic.jsonl")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeSyntheticLog(f, 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	Run(ft, log, synthProgram(20, "tx"))
	if len(ft.errors) > 0 {
		t.Fatalf("the synthetic log, replayed against its program, differs:\n%s", ft.report())
	}
	ft = &fakeT{TB: t}
	Run(ft, log, synthProgram(20, "ty"))
	if len(ft.errors) != 20 {
		t.Fatalf("want each of the 20 transform calls to differ:\n%s", ft.report())
	}
}
