// Command automation deploys several stacks at once from one Go process
// with the Automation API's inline programs, each with its own stack
// transform, resource hook and error hook, and checks that every callback
// reached the stack it belongs to.
//
// Each inline program is an ordinary pulumi.RunFunc: program.Monitor gives
// it its deployment's monitor and a callback server that serves until the
// engine ends that deployment, then shuts itself down. Nothing is left to
// stop afterwards, however many deployments the process runs.
//
// It drives the `pulumi` CLI on PATH, with the backend and passphrase the
// environment sets (PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE), and
// creates a pulumi-random RandomPet in each stack, then destroys the stacks
// again. Flags: -stacks N (default 4), -project NAME. It prints one line per
// stack and exits non-zero if a stack failed, a callback saw a resource of
// another stack, or a stack's transform or hook never ran.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

const petType = "random:index/randomPet:RandomPet"

func main() {
	stacks := flag.Int("stacks", 4, "how many stacks to deploy at once")
	project := flag.String("project", "automation", "the project's name")
	flag.Parse()
	if err := run(context.Background(), *project, *stacks, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "automation:", err)
		os.Exit(1)
	}
}

// tally counts the callbacks one stack's program got about its custom
// resources, and those that were about a resource of another stack.
type tally struct {
	stack                        string
	transforms, hooks, errorHook atomic.Int32
	strays                       atomic.Int32
}

// see counts a callback about urn in n, and as a stray unless urn is a
// resource of t's stack.
func (t *tally) see(n *atomic.Int32, urn string) {
	n.Add(1)
	if !strings.HasPrefix(urn, "urn:pulumi:"+t.stack+"::") {
		t.strays.Add(1)
	}
}

// inline is the stack's program: the SDK's RunFunc, as auto takes it.
func inline(t *tally) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		c := ctx.Context()
		_, err = transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if !a.Custom {
				// The stack resource, which the SDK registers while the
				// program starts, may or may not pass through; it has no
				// parent to compute its URN from.
				return nil, nil
			}
			t.see(&t.transforms, string(a.URN))
			return a.WithProperties(func(p resource.PropertyMap) {
				p["keepers"] = resource.NewProperty(resource.PropertyMap{"stack": resource.NewProperty(t.stack)})
			}), nil
		})
		if err != nil {
			return err
		}
		audit, err := hooks.Register(c, mon, "audit", func(_ context.Context, a *hooks.Args) error {
			t.see(&t.hooks, string(a.URN))
			return nil
		})
		if err != nil {
			return err
		}
		retry, err := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			t.see(&t.errorHook, string(a.URN))
			return strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3, nil
		})
		if err != nil {
			return err
		}
		var pet pulumi.CustomResourceState
		return ctx.RegisterResource(petType, "pet", pulumi.Map{"length": pulumi.Int(2)}, &pet,
			program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}, OnError: []transforms.HookRef{retry}}))
	}
}

// run deploys n stacks of project at once, destroys them, and checks the
// tallies.
func run(ctx context.Context, project string, n int, w io.Writer) error {
	tallies := make([]*tally, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		tallies[i] = &tally{stack: fmt.Sprintf("%s-%d", project, i)}
		wg.Go(func() { errs[i] = deploy(ctx, project, tallies[i]) })
	}
	wg.Wait()

	var problems []error
	for i, t := range tallies {
		fmt.Fprintf(w, "%s: %d transform calls, %d hook calls, %d error hook calls, %d about another stack\n",
			t.stack, t.transforms.Load(), t.hooks.Load(), t.errorHook.Load(), t.strays.Load())
		switch {
		case errs[i] != nil:
			problems = append(problems, fmt.Errorf("%s: %w", t.stack, errs[i]))
		case t.strays.Load() > 0:
			problems = append(problems, fmt.Errorf("%s: a callback was about another stack's resource", t.stack))
		case t.transforms.Load() == 0 || t.hooks.Load() == 0:
			problems = append(problems, fmt.Errorf("%s: the transform or the hook never ran", t.stack))
		}
	}
	return errors.Join(problems...)
}

// deploy creates the stack, brings it up, and destroys it again.
func deploy(ctx context.Context, project string, t *tally) (err error) {
	stack, err := auto.UpsertStackInlineSource(ctx, t.stack, project, inline(t))
	if err != nil {
		return err
	}
	defer func() {
		_, derr := stack.Destroy(ctx, optdestroy.Remove())
		err = errors.Join(err, derr)
	}()
	_, err = stack.Up(ctx, optup.SuppressProgress())
	return err
}
