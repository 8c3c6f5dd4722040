package replay

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/integration/programs/plainsdk/app"
)

// TestReplayOfRecordedPlainSDKLogs replays the scrubbed logs of
// programs/plainsdk recorded under both CLIs against its body: the SDK's
// own callback server answers as it did (a scrubbed log replays for
// functions that do not read the secret's content), the stack transform
// by its order, the pet's own transform by the pet's URN and its position,
// the hook by its name, refusing where the configuration says so. A body
// whose stack transform sets another prefix differs in those calls only.
func TestReplayOfRecordedPlainSDKLogs(t *testing.T) {
	for _, log := range []string{
		"testdata/plainsdk-3.274.1.jsonl", "testdata/plainsdk-3.260.0.jsonl",
		"testdata/plainsdk-refused-3.274.1.jsonl", "testdata/plainsdk-refused-3.260.0.jsonl",
	} {
		t.Run(log, func(t *testing.T) {
			ft := &fakeT{TB: t}
			Run(ft, log, app.Program(app.Prefix))
			if len(ft.errors) > 0 {
				t.Fatalf("the same body differs:\n%s", ft.report())
			}
			// It registers the resources the CLI logged, stack and pet.
			for _, l := range ft.logs {
				if strings.Contains(l, "resources differ") || strings.Contains(l, "no resource registration") {
					t.Errorf("the same body's resources are reported:\n%s", l)
				}
			}
			ft = &fakeT{TB: t}
			Run(ft, log, func(ctx *pulumi.Context) error {
				if err := app.Program(app.Prefix)(ctx); err != nil {
					return err
				}
				var extra pulumi.CustomResourceState
				return ctx.RegisterResource("random:index/randomPet:RandomPet", "extra", pulumi.Map{}, &extra)
			}, RequireSameResources())
			if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], "new:  urn:pulumi:dev::plainsdk::random:index/randomPet:RandomPet::extra") {
				t.Errorf("a body with another pet does not fail RequireSameResources:\n%s", ft.report())
			}
			ft = &fakeT{TB: t}
			Run(ft, log, app.Program("other"))
			if len(ft.errors) == 0 {
				t.Fatalf("another prefix gives no difference:\n%s", ft.report())
			}
			for _, e := range ft.errors {
				if !strings.Contains(e, "stack transform #1") || !strings.Contains(e, `properties.prefix: "plain" → "other"`) {
					t.Errorf("a difference other than the stack transform's prefix:\n%s", e)
				}
			}
		})
	}
}
