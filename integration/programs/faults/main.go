// Command faults is a Pulumi program for tests that break a deployment
// while its callbacks run. It declares the pet "pet" with a hook before its
// create, a hook before its delete, and an error hook that asks for a retry
// until the third failure. With FAULT_SDK=1 it registers them with the Go
// SDK's own callbacks instead of this module's, so that a test can set one
// beside the other.
//
// Every call appends a line to $FAULT_DIR/calls: "before-create pet",
// "before-delete pet", or "error-hook pet attempt N: ERROR". For each event
// named in FAULT_BLOCK ("before-create", "before-delete", separated by
// commas), the first call of the event in any deployment (the first to
// claim $FAULT_DIR/blocked-EVENT.claim) writes
// $FAULT_DIR/blocked-EVENT, holding the program's process ID, its parent's
// (the language host) and its callback server's target (this module's
// only), and then blocks, ignoring its context, until the process ends.
// Later calls return at once.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	run := withModule
	if os.Getenv("FAULT_SDK") == "1" {
		run = withSDK
	}
	pulumi.Run(run)
}

// record appends a line to the calls file.
func record(line string) {
	f, err := os.OpenFile(filepath.Join(os.Getenv("FAULT_DIR"), "calls"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// hook records a call of event about the resource name and, if it is the
// first of event, says so in a file and blocks forever.
func hook(event, name, target string) {
	record(event + " " + name)
	if !slices.Contains(strings.Split(os.Getenv("FAULT_BLOCK"), ","), event) {
		return
	}
	dir := os.Getenv("FAULT_DIR")
	claim, err := os.OpenFile(filepath.Join(dir, "blocked-"+event+".claim"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return // not the first
	}
	_ = claim.Close()
	final := filepath.Join(dir, "blocked-"+event)
	info := fmt.Sprintf("%d %d %s\n", os.Getpid(), os.Getppid(), target)
	if err := os.WriteFile(final+".tmp", []byte(info), 0o644); err == nil {
		_ = os.Rename(final+".tmp", final)
	}
	select {} // the hook's context is ignored
}

func withModule(ctx *pulumi.Context) error {
	mon, err := program.Monitor(ctx)
	if err != nil {
		return err
	}
	c := ctx.Context()
	target := mon.Server().Target()
	create, err := hooks.Register(c, mon, "block-create", func(_ context.Context, a *hooks.Args) error {
		hook("before-create", a.Name, target)
		return nil
	})
	if err != nil {
		return err
	}
	del, err := hooks.Register(c, mon, "block-delete", func(_ context.Context, a *hooks.Args) error {
		hook("before-delete", a.Name, target)
		return nil
	})
	if err != nil {
		return err
	}
	retry, err := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
		record(fmt.Sprintf("error-hook %s attempt %d: %s", a.Name, a.Attempt(), a.LastError()))
		return a.Attempt() < 3, nil
	})
	if err != nil {
		return err
	}
	var pet pulumi.CustomResourceState
	return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
		program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{create}, BeforeDelete: []transforms.HookRef{del}, OnError: []transforms.HookRef{retry}}))
}

func withSDK(ctx *pulumi.Context) error {
	create, err := ctx.RegisterResourceHook("block-create", func(a *pulumi.ResourceHookArgs) error {
		hook("before-create", a.Name, "")
		return nil
	}, nil)
	if err != nil {
		return err
	}
	del, err := ctx.RegisterResourceHook("block-delete", func(a *pulumi.ResourceHookArgs) error {
		hook("before-delete", a.Name, "")
		return nil
	}, nil)
	if err != nil {
		return err
	}
	retry, err := ctx.RegisterErrorHook("retry", func(a *pulumi.ErrorHookArgs) (bool, error) {
		last := ""
		if len(a.Errors) > 0 {
			last = a.Errors[0]
		}
		record(fmt.Sprintf("error-hook %s attempt %d: %s", a.Name, len(a.Errors), last))
		return len(a.Errors) < 3, nil
	})
	if err != nil {
		return err
	}
	var pet pulumi.CustomResourceState
	return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
		pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
			BeforeCreate: []*pulumi.ResourceHook{create},
			BeforeDelete: []*pulumi.ResourceHook{del},
			OnError:      []*pulumi.ErrorHook{retry},
		}))
}
