// Command gosdk is the kit's fixture for the Pulumi Go SDK's callbacks
// server: a pulumi.Run program that registers one callback of each kind the
// SDK supports, following the fixture convention in CONFORMANCE.md, and
// returns. pulumi.Run then serves the callbacks until
// SignalAndWaitForShutdown returns.
//
// The SDK registers hooks in the background and waits for a registration
// only when a resource names the hook, so the program binds both hooks to a
// component (at points that never fire for it): otherwise the program could
// signal its end before the engine has heard of them. The state migration
// rides on a custom resource, the only kind the SDK attaches migrations to.
//
//	go build -o /tmp/gosdk ./cmd/callbackconform/testdata/gosdk
//	go run ./cmd/callbackconform -- /tmp/gosdk
package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The fixture convention's names (CONFORMANCE.md).
const (
	changeName    = "lossless"
	changeToken   = "conform:index:lossless"
	changeKey     = "conformAdded"
	changeValue   = "added by the transform"
	changeVersion = "7.0.0"
	refuseName    = "refuse-me"
	versionKey    = "conformVersion"
	returnKey     = "conformReturn"
	successorsKey = "conformSuccessors"
	failKey       = "conformFail"
)

type fixtureComponent struct {
	pulumi.ResourceState
}

type migrated struct {
	pulumi.CustomResourceState
}

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		if err := ctx.RegisterResourceTransform(func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			if args.Name == changeName {
				args.Props[changeKey] = pulumi.String(changeValue)
				args.Opts.RetainOnDelete = true
			}
			return &pulumi.ResourceTransformResult{Props: args.Props, Opts: args.Opts}
		}); err != nil {
			return err
		}
		if err := ctx.RegisterInvokeTransform(func(_ context.Context, args *pulumi.InvokeTransformArgs) *pulumi.InvokeTransformResult {
			if args.Token == changeToken {
				args.Args[changeKey] = pulumi.String(changeValue)
				args.Opts.Version = changeVersion
			}
			return &pulumi.InvokeTransformResult{Args: args.Args, Opts: args.Opts}
		}); err != nil {
			return err
		}
		hook, err := ctx.RegisterResourceHook("conform-hook", func(args *pulumi.ResourceHookArgs) error {
			if args.Name == refuseName {
				return errors.New("conform: refused " + refuseName)
			}
			return nil
		}, nil)
		if err != nil {
			return err
		}
		errorHook, err := ctx.RegisterErrorHook("conform-error-hook", func(args *pulumi.ErrorHookArgs) (bool, error) {
			return len(args.Errors) == 1, nil
		})
		if err != nil {
			return err
		}
		var fixture fixtureComponent
		if err := ctx.RegisterComponentResource("conform:index:Fixture", "fixture", &fixture,
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
				BeforeDelete: []*pulumi.ResourceHook{hook},
				OnError:      []*pulumi.ErrorHook{errorHook},
			})); err != nil {
			return err
		}
		var res migrated
		return ctx.RegisterResource("conform:index:Migrated", "migrated", nil, &res,
			pulumi.StateMigrations([]pulumi.StateMigration{migrate}))
	})
}

// migrate sets versionKey from 1 to 2 wherever a resource's outputs have
// it at 1; returns the state under returnKey verbatim; fails with the text
// under failKey; and changes nothing otherwise.
func migrate(_ context.Context, args *pulumi.StateMigrationArgs) (*pulumi.StateMigrationResult, error) {
	if len(args.OldState) > 0 {
		outputs, _ := args.OldState[0]["outputs"].(map[string]any)
		if msg, ok := outputs[failKey].(string); ok {
			return nil, errors.New(msg)
		}
		if ret, ok := outputs[returnKey].(string); ok {
			var state []map[string]any
			if err := json.Unmarshal([]byte(ret), &state); err != nil {
				return nil, err
			}
			successors := map[string]string{}
			if s, ok := outputs[successorsKey].(map[string]any); ok {
				for k, v := range s {
					successors[k], _ = v.(string)
				}
			}
			return &pulumi.StateMigrationResult{NewState: state, Successors: successors}, nil
		}
	}
	changed := false
	for _, r := range args.OldState {
		outputs, _ := r["outputs"].(map[string]any)
		if outputs[versionKey] == json.Number("1") {
			outputs[versionKey] = json.Number("2")
			changed = true
		}
	}
	if !changed {
		return nil, nil
	}
	return &pulumi.StateMigrationResult{NewState: args.OldState}, nil
}
