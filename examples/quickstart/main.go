// Command quickstart is a Pulumi Go program, run by the Go SDK's pulumi.Run,
// that uses every kind of callback a first deployment meets (a state
// migration runs only over a prior state: examples/migrations shows one):
//
//   - a stack transform that tags every custom resource and keeps all of its
//     options;
//   - an invoke transform that adds an argument to the program's lookups;
//   - a before-create hook that checks the tags and warns, under the
//     resource, about a value it does not like;
//   - an after-create hook that reports the new resource's ID;
//   - an error hook that retries a create the provider throttled.
//
// Run by `pulumi up`, it deploys a RandomPet and a RandomString. Run with
// `go run` and no engine around (PULUMI_MONITOR unset), it starts the
// simulator from the enginetest package, deploys the same program against it
// (with a provider that throttles the first create of the RandomString) and
// prints what the engine did, the resulting state and the diagnostics. It
// exits non-zero if anything it expects did not happen. The body, deploy, is
// the same in both cases: pulumi.Run under `pulumi up`, pulumi.RunErr inside
// enginetest's RunFunc on the simulator.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// The resource types of pulumi-random the program creates. The program
// declares them by type token (see RandomPet), so it needs no Go dependency
// on the provider's SDK; the engine loads the random plugin to create them.
const (
	petType    = "random:index/randomPet:RandomPet"
	stringType = "random:index/randomString:RandomString"
	getResTok  = "pulumi:pulumi:getResource"
	stackType  = "pulumi:pulumi:Stack"
)

// RandomPet is a random:index/randomPet:RandomPet. Its ID is the pet name.
type RandomPet struct {
	pulumi.CustomResourceState
}

// RandomString is a random:index/randomString:RandomString.
type RandomString struct {
	pulumi.CustomResourceState

	Result pulumi.StringOutput `pulumi:"result"`
}

func main() {
	if os.Getenv(monitor.EnvMonitor) != "" {
		pulumi.Run(deploy()) // under `pulumi up`
		return
	}
	if err := simulate(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// deploy returns the program's body, run by pulumi.Run under `pulumi up` and
// by pulumi.RunErr on the simulator: it registers the callbacks, then the
// resources. program.Monitor starts the callback server with opts and
// serves the callbacks until the engine has called its last hook.
func deploy(opts ...callbacks.ServerOption) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx, opts...)
		if err != nil {
			return err
		}
		if err := registerCallbacks(ctx.Context(), mon); err != nil {
			return err
		}
		return resources(ctx)
	}
}

// registerCallbacks registers the transforms and hooks with the engine. The
// engine applies stack transforms in registration order, so the tags are in
// place before hooks are bound, and the hooks see them.
func registerCallbacks(ctx context.Context, mon *monitor.Monitor) error {
	info, err := mon.DeploymentInfo(ctx)
	if err != nil {
		return err
	}
	tags := map[string]string{
		"managed-by": "pulumi",
		"project":    info.GetProject(),
		"stack":      info.GetStack(),
	}
	timeout := callbacks.Timeout(10 * time.Second)

	if _, err := transforms.RegisterStack(ctx, mon, tagResources(tags),
		callbacks.Name("tag-resources"), timeout); err != nil {
		return err
	}
	if _, err := invoketransforms.RegisterStack(ctx, mon, labelLookups(info.GetProject()),
		callbacks.Name("label-lookups"), timeout); err != nil {
		return err
	}

	audit, err := hooks.Register(ctx, mon, "audit", auditTags, hooks.WithRegisterOptions(timeout))
	if err != nil {
		return err
	}
	record, err := hooks.Register(ctx, mon, "record", recordID, hooks.WithRegisterOptions(timeout))
	if err != nil {
		return err
	}
	retry, err := hooks.RegisterErrorHook(ctx, mon, "retry-throttled", retryThrottled, hooks.WithRegisterOptions(timeout))
	if err != nil {
		return err
	}
	// Bind the hooks to every custom resource, so the program's resources
	// need no option of their own: the scope is explicit, every resource
	// isCustom picks.
	return hooks.Attach(ctx, mon, transforms.Matching(isCustom), &transforms.HooksBinding{
		BeforeCreate: []transforms.HookRef{audit},
		AfterCreate:  []transforms.HookRef{record},
		OnError:      []transforms.HookRef{retry},
	})
}

// resources is the Pulumi program proper: plain Go SDK code that knows
// nothing of the callbacks around it.
func resources(ctx *pulumi.Context) error {
	var pet RandomPet
	err := ctx.RegisterResource(petType, "pet", pulumi.Map{
		"length": pulumi.Int(2),
		// The program's own tags win over the transform's.
		"keepers": pulumi.StringMap{"owner": pulumi.String("pets-team")},
	}, &pet)
	if err != nil {
		return err
	}
	var suffix RandomString
	err = ctx.RegisterResource(stringType, "suffix", pulumi.Map{
		"length":  pulumi.Int(8),
		"special": pulumi.Bool(false),
		"upper":   pulumi.Bool(false),
	}, &suffix, pulumi.DependsOn([]pulumi.Resource{&pet}))
	if err != nil {
		return err
	}

	// Read the suffix back through the engine's builtin lookup; the invoke
	// transform sees this call.
	lookup := ctx.InvokeOutput(getResTok, pulumi.Map{"urn": suffix.URN()},
		pulumi.MapOutput{}, pulumi.InvokeOutputOptions{})

	ctx.Export("petName", pet.ID())
	ctx.Export("suffix", suffix.Result)
	ctx.Export("suffixViaLookup", lookup.ApplyT(func(m map[string]any) string {
		id, _ := m["id"].(string)
		return id
	}).(pulumi.StringOutput))
	return nil
}

// tagProperty is the input that holds a resource's tags. Random resources
// have no tags input; keepers, their map of free-form strings, takes the
// tags instead.
func tagProperty(typ string) resource.PropertyKey {
	if strings.HasPrefix(typ, "random:") {
		return "keepers"
	}
	return "tags"
}

// tagResources returns a stack transform that merges tags into every custom
// resource's tags. It returns only properties: with no options in the
// result, the engine keeps every option of the resource as it was.
func tagResources(tags map[string]string) transforms.Func {
	return func(_ context.Context, args *transforms.Args) (*transforms.Result, error) {
		if !args.Custom {
			return nil, nil // components have no tags: no change
		}
		key := tagProperty(args.Type)
		current, present := args.Properties()[key]
		if present && !current.IsObject() {
			// Unknown or secret until the deployment runs: leave it be.
			return nil, nil
		}
		return args.WithProperties(func(props resource.PropertyMap) {
			merged := resource.PropertyMap{}
			for k, v := range tags {
				merged[resource.PropertyKey(k)] = resource.NewProperty(v)
			}
			if present {
				for k, v := range current.ObjectValue() {
					merged[k] = v
				}
			}
			props[key] = resource.NewProperty(merged)
		}), nil
	}
}

// labelLookups returns an invoke transform that adds a requestedBy argument
// to the engine's builtin functions (pulumi:pulumi:*), which ignore
// arguments they do not know. Provider functions are left alone: their
// providers may reject an unexpected argument.
func labelLookups(caller string) invoketransforms.Func {
	return func(_ context.Context, args *invoketransforms.Args) (*invoketransforms.Result, error) {
		if !strings.HasPrefix(args.Token, "pulumi:pulumi:") {
			return nil, nil
		}
		if _, ok := args.Properties()["requestedBy"]; ok {
			return nil, nil
		}
		return args.WithProperties(func(m resource.PropertyMap) {
			m["requestedBy"] = resource.NewProperty(caller)
		}), nil
	}
}

// auditTags runs before each create. It refuses a resource whose tags the
// transform missed, and warns about a RandomString too short to be a unique
// suffix; the warning shows under the resource.
func auditTags(ctx context.Context, args *hooks.Args) error {
	tags := args.NewInputs()[tagProperty(args.Type)]
	if !tags.IsObject() || !tags.ObjectValue().HasValue("managed-by") {
		return fmt.Errorf("%s has no managed-by tag: the tag transform did not run", args.Name)
	}
	if length := args.NewInputs()["length"]; args.Type == stringType && length.IsNumber() && length.NumberValue() < 12 {
		callbacks.Warn(ctx, fmt.Sprintf("length %d is short for a unique suffix; 12 or more is safer", int(length.NumberValue())))
	}
	return nil
}

// recordID runs after each create and reports the new ID.
func recordID(ctx context.Context, args *hooks.Args) error {
	callbacks.Info(ctx, fmt.Sprintf("created %s with id %s", args.Name, args.ID))
	return nil
}

// retryThrottled asks the engine to try a failed operation again when the
// provider said it was throttled, up to five attempts.
func retryThrottled(_ context.Context, args *hooks.ErrorArgs) (bool, error) {
	msg := strings.ToLower(args.LastError())
	transient := strings.Contains(msg, "throttl") || strings.Contains(msg, "rate exceeded") ||
		strings.Contains(msg, "too many requests")
	return transient && args.Attempt() < 5, nil
}

// isCustom selects custom resources: hooks are bound to them, not to
// components such as the stack.
func isCustom(args *transforms.Args) bool { return args.Custom }
