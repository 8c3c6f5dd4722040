package program

import (
	"context"
	"errors"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/langhost/callbacks/transforms"
)

// Descendants is the scope of the resources under component, a resource the
// Go SDK registered (a component a library just registered with
// ctx.RegisterComponentResource, typically), for hooks.Attach and
// transforms.Attach: its children, including those the program creates
// with pulumi.Parent(component), their children, and so on. The component's
// registration may still be in flight: the scope learns the URN when the
// SDK does, which is before any child of the component reaches the engine.
//
//	team := &Team{}
//	if err := ctx.RegisterComponentResource(TeamType, name, team, opts...); err != nil {
//		return nil, err
//	}
//	err := hooks.Attach(ctx.Context(), mon, program.Descendants(team), &transforms.HooksBinding{…})
//
// A component that was never registered cannot have descendants: Attach
// refuses the scope (transforms.ErrNeverMatches), as it does one whose
// registration failed.
//
// For a remote component (ctx.RegisterRemoteComponentResource), the
// resources its provider creates are registered while the SDK still waits
// for the component's URN, so they are not covered; the resources the
// program puts under it are.
func Descendants(component pulumi.Resource) transforms.Scope {
	if component == nil {
		return transforms.DescendantsOf("a nil resource", func() (resource.URN, error) {
			return "", errors.New("the component is nil")
		})
	}
	name := component.PulumiResourceType() + " " + component.PulumiResourceName()
	return transforms.DescendantsOf(name, func() (resource.URN, error) {
		return urnNow(component)
	})
}

// errNotRegistered is the error for a resource that has no URN output: it was
// never given to RegisterResource or RegisterComponentResource.
var errNotRegistered = errors.New("it is not registered (give it to ctx.RegisterComponentResource or ctx.RegisterResource first)")

// urnNow reports r's URN without waiting: "" and nil while its registration
// is in flight, the URN once the SDK has it, an error if it never will.
//
// The SDK's exported UnsafeAwaitOutput, given a context that is already
// done, returns the output's value if it is resolved, its error if it is
// rejected, and the context's error without waiting if it is pending; that
// is how this reads an output's state without blocking
// (TestURNNowReadsTheSDKsOutputs pins it to this SDK version).
func urnNow(r pulumi.Resource) (resource.URN, error) {
	out := r.URN()
	if out.OutputState == nil {
		return "", errNotRegistered
	}
	res, err := internals.UnsafeAwaitOutput(doneContext, out)
	switch {
	case errors.Is(err, context.Canceled):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("its registration failed: %w", err)
	}
	urn, ok := res.Value.(pulumi.URN)
	if !ok || !res.Known || urn == "" {
		return "", fmt.Errorf("its URN is not a known URN but %#v", res.Value)
	}
	return resource.URN(urn), nil
}

// doneContext is a context that is already canceled.
var doneContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
