// Command trace is a Pulumi program whose every callback reports, under its
// resource, that it ran and what it was given, so that two engines can be
// compared by what a user sees. It declares the pet "a", whose length comes
// from the stack's configuration (default 2), and the string "b", unless the
// configuration says drop: true. A stack transform tags every custom
// resource; hooks at the six points of a resource's life (those before
// create, after update and before delete also in previews) and an error hook
// that retries a throttled create are bound to each.
package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx) // serves the callbacks for as long as the deployment runs
		if err != nil {
			return err
		}
		return deploy(ctx, mon)
	})
}

func deploy(ctx *pulumi.Context, mon *monitor.Monitor) error {
	c := ctx.Context()
	_, err := transforms.RegisterStack(c, mon, func(ctx context.Context, a *transforms.Args) (*transforms.Result, error) {
		if !a.Custom {
			return nil, nil
		}
		callbacks.Info(ctx, "transform: length "+length(a.Properties()))
		return a.WithProperties(func(p resource.PropertyMap) {
			p["tagged"] = resource.NewProperty(true)
		}), nil
	})
	if err != nil {
		return err
	}

	var errs []error
	hook := func(name string, dryRun bool) transforms.HookRef {
		var opts []hooks.ResourceOption
		if dryRun {
			opts = append(opts, hooks.OnDryRun())
		}
		h, err := hooks.Register(c, mon, name, func(ctx context.Context, a *hooks.Args) error {
			msg := name + ":"
			if old := a.OldInputs(); old != nil {
				msg += " length was " + length(old)
			}
			if in := a.NewInputs(); in != nil {
				msg += " length is " + length(in)
			}
			if out := a.NewOutputs(); out != nil {
				msg += fmt.Sprintf(" (%d outputs)", len(out))
			}
			callbacks.Info(ctx, msg)
			return nil
		}, opts...)
		errs = append(errs, err)
		return h
	}
	binding := &transforms.HooksBinding{
		BeforeCreate: []transforms.HookRef{hook("before-create", true)}, AfterCreate: []transforms.HookRef{hook("after-create", false)},
		BeforeUpdate: []transforms.HookRef{hook("before-update", false)}, AfterUpdate: []transforms.HookRef{hook("after-update", true)},
		BeforeDelete: []transforms.HookRef{hook("before-delete", true)}, AfterDelete: []transforms.HookRef{hook("after-delete", false)},
	}
	retry, err := hooks.RegisterErrorHook(c, mon, "retry", func(ctx context.Context, a *hooks.ErrorArgs) (bool, error) {
		again := strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3
		callbacks.Info(ctx, fmt.Sprintf("on-error: %s attempt %d: %s; retry: %t", a.FailedOperation, a.Attempt(), a.LastError(), again))
		return again, nil
	})
	binding.OnError = []transforms.HookRef{retry}
	if err := errors.Join(append(errs, err)...); err != nil {
		return err
	}
	if err := hooks.Attach(c, mon, transforms.Matching(func(a *transforms.Args) bool { return a.Custom }), binding); err != nil {
		return err
	}

	n := 2
	if v, ok := ctx.GetConfig(ctx.Project() + ":length"); ok {
		if n, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("config length: %w", err)
		}
	}
	var a pulumi.CustomResourceState
	if err := ctx.RegisterResource("random:index/randomPet:RandomPet", "a", pulumi.Map{"length": pulumi.Int(n)}, &a); err != nil {
		return err
	}
	if v, _ := ctx.GetConfig(ctx.Project() + ":drop"); v == "true" {
		return nil
	}
	var b pulumi.CustomResourceState
	return ctx.RegisterResource("random:index/randomString:RandomString", "b", pulumi.Map{"length": pulumi.Int(8)}, &b)
}

// length shows the length input of m.
func length(m resource.PropertyMap) string {
	v, ok := m["length"]
	if !ok {
		return "unset"
	}
	if v.IsOutput() {
		o := v.OutputValue()
		if !o.Known {
			return "unknown"
		}
		v = o.Element
	}
	if v.IsComputed() {
		return "unknown"
	}
	return fmt.Sprint(v.V)
}
