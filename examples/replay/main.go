// Command replay is a Pulumi program whose recorded deployment is one of its
// unit tests. Its stack transform gives every RandomPet the keeper "team",
// its hook "audit" refuses to create a pet that has none, and its error
// hook "retry" retries a create the provider throttled.
//
// testdata/up.jsonl is the engine's gRPC log of one `pulumi up` of this
// program (PULUMI_DEBUG_GRPC), scrubbed of secrets; TestReplay hands it and
// deploy to replay.Run, which calls today's functions with the requests the
// engine sent then and fails where an answer differs.
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	pulumi.Run(deploy)
}

// deploy is the program's body: pulumi.Run runs it under `pulumi up`, and
// replay.Run in TestReplay.
func deploy(ctx *pulumi.Context) error {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return err
	}
	c := ctx.Context()
	_, err1 := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		if a.Type != petType {
			return nil, nil
		}
		return a.WithProperties(func(p resource.PropertyMap) {
			p["keepers"] = resource.NewProperty(resource.PropertyMap{"team": resource.NewProperty(teamOf(a.Name))})
		}), nil
	})
	audit, err2 := hooks.Register(c, mon, "audit", func(_ context.Context, a *hooks.Args) error {
		if keepers := a.NewInputs()["keepers"]; !keepers.IsObject() || !keepers.ObjectValue()["team"].IsString() {
			return fmt.Errorf("%s has no team: every pet needs one", a.Name)
		}
		return nil
	})
	retry, err3 := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
		return strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3, nil
	})
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	binding := program.Hooks(&transforms.HooksBinding{
		BeforeCreate: []transforms.HookRef{audit}, OnError: []transforms.HookRef{retry},
	})
	for _, name := range []string{"web", "db"} {
		var pet pulumi.CustomResourceState
		if err := ctx.RegisterResource(petType, name, pulumi.Map{"length": pulumi.Int(2)}, &pet, binding); err != nil {
			return err
		}
	}
	return nil
}

// teamOf is the team that keeps a pet.
func teamOf(name string) string {
	if name == "db" {
		return "data"
	}
	return "infra"
}
