package replay

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// plainSDK is the body of integration/programs/plainsdk, a program on the
// plain Go SDK (no use of this module) whose callbacks the SDK's own
// callback server serves: a stack transform that gives the pet the prefix
// prefix, a transform of the pet's own, and a hook "freeze" that refuses
// the create when the configuration "refuse" is set.
func plainSDK(prefix string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		pw, ok := ctx.GetConfig(ctx.Project() + ":password")
		if !ok {
			return errors.New("the configuration has no password")
		}
		password := pulumi.ToSecret(pulumi.String(pw))
		_, refuse := ctx.GetConfig(ctx.Project() + ":refuse")
		err := ctx.RegisterResourceTransform(func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			if a.Type != petType {
				return nil
			}
			props := pulumi.Map{}
			for k, v := range a.Props {
				props[k] = v
			}
			props["prefix"] = pulumi.String(prefix)
			return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
		})
		if err != nil {
			return err
		}
		hook, err := ctx.RegisterResourceHook("freeze", func(*pulumi.ResourceHookArgs) error {
			if refuse {
				return errors.New("creates are frozen")
			}
			return nil
		}, nil)
		if err != nil {
			return err
		}
		own := func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			props := pulumi.Map{}
			for k, v := range a.Props {
				props[k] = v
			}
			props["separator"] = pulumi.String("_")
			return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "pet", pulumi.Map{
			"length":  pulumi.Int(2),
			"keepers": pulumi.Map{"password": password},
		}, &pet, pulumi.Transforms([]pulumi.ResourceTransform{own}),
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{BeforeCreate: []*pulumi.ResourceHook{hook}}))
	}
}

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
			Run(ft, log, plainSDK("plain"))
			if len(ft.errors) > 0 {
				t.Fatalf("the same body differs:\n%s", ft.report())
			}
			ft = &fakeT{TB: t}
			Run(ft, log, plainSDK("other"))
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
