package main

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// This file is the infrastructure code under test: a transform, two hooks
// and the program. They are plain Go functions; infra_test.go runs them
// against the engine simulator.

// Owner is the team the transform tags every resource with.
const Owner = "platform-team"

// The pulumi-random types the program creates, declared by type token so the
// program needs no Go dependency on the provider's SDK.
const (
	petType    = "random:index/randomPet:RandomPet"
	stringType = "random:index/randomString:RandomString"
)

// Names the callbacks are registered under.
const (
	tagTransform = "owner-tags"
	checkHook    = "check-owner"
	notifyHook   = "notify"
)

// tagKey is where random resources keep free-form strings: they have no
// tags input, so the tags go in keepers.
const tagKey = "keepers"

// OwnerTags is a stack transform that adds an owner tag and a managed-by
// tag to every custom resource, keeping the tags the resource already has.
// It returns only properties, so every option of the resource is kept.
func OwnerTags(owner string) transforms.Func {
	return func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if !args.Custom {
			return nil, nil
		}
		tags := resource.PropertyMap{}
		if current, ok := args.Properties()[tagKey]; ok {
			if !current.IsObject() {
				return nil, nil // unknown or secret: leave it to the provider
			}
			tags = current.ObjectValue().Copy()
		}
		if _, ok := tags["owner"]; !ok {
			tags["owner"] = resource.NewProperty(owner)
		}
		tags["managed-by"] = resource.NewProperty("pulumi")
		return args.WithProperties(func(m resource.PropertyMap) {
			m[tagKey] = resource.NewProperty(tags)
		}), nil
	}
}

// CheckOwner is a before-create hook that refuses to create a resource
// without an owner tag. It runs in previews too, so a preview already shows
// the refusal.
func CheckOwner(_ context.Context, args *hooks.Args) error {
	tags := args.NewInputs()[tagKey]
	if !tags.IsObject() {
		return fmt.Errorf("%s has no %s, so no owner tag", args.Name, tagKey)
	}
	owner := tags.ObjectValue()["owner"]
	if !owner.IsString() || owner.StringValue() == "" {
		return fmt.Errorf("%s has no owner tag", args.Name)
	}
	return nil
}

// Notify is an after-create hook that tells the owner a resource was
// created. It does not run in previews, where nothing is created.
func Notify(ctx context.Context, args *hooks.Args) error {
	owner := args.NewInputs()[tagKey].ObjectValue()["owner"]
	callbacks.Info(ctx, fmt.Sprintf("%s created %s (id %s)", owner.StringValue(), args.Name, args.ID))
	return nil
}

// Setup registers the transform and the hooks with the engine, and binds
// the hooks to every custom resource.
func Setup(ctx context.Context, mon *monitor.Monitor) error {
	if _, err := transforms.RegisterStack(ctx, mon, OwnerTags(Owner), callbacks.Name(tagTransform)); err != nil {
		return err
	}
	check, err := hooks.Register(ctx, mon, checkHook, CheckOwner, hooks.OnDryRun())
	if err != nil {
		return err
	}
	notify, err := hooks.Register(ctx, mon, notifyHook, Notify)
	if err != nil {
		return err
	}
	custom := func(args *transforms.Args) bool { return args.Custom }
	return hooks.Attach(ctx, mon, transforms.Matching(custom), &transforms.HooksBinding{
		BeforeCreate: []transforms.HookRef{check},
		AfterCreate:  []transforms.HookRef{notify},
	})
}

// Program is the Pulumi program.
func Program(ctx *pulumi.Context) error {
	var name pulumi.CustomResourceState
	if err := ctx.RegisterResource(petType, "app-name", pulumi.Map{"length": pulumi.Int(2)}, &name); err != nil {
		return err
	}
	var suffix pulumi.CustomResourceState
	return ctx.RegisterResource(stringType, "db-suffix", pulumi.Map{
		"length":  pulumi.Int(12),
		"special": pulumi.Bool(false),
		// The program's own owner wins over the transform's.
		tagKey: pulumi.StringMap{"owner": pulumi.String("data-team")},
	}, &suffix)
}
