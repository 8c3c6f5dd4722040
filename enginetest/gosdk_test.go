// These tests run unmodified Pulumi Go SDK programs against the simulator.
// This is the only file that links github.com/pulumi/pulumi/sdk/v3/go/pulumi.

package enginetest

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.uber.org/goleak"
)

func init() {
	leakOptions = append(leakOptions,
		// glog starts its flush daemon when the SDK is linked.
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		// The SDK never stops its callbacks server.
		goleak.IgnoreAnyFunction("github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil.serveWithOptions.func1"),
		goleak.IgnoreAnyFunction("github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil.serveWithOptions.func2"),
	)
}

// Thing is a custom resource of type test:index:Thing.
type Thing struct {
	pulumi.CustomResourceState

	Name  pulumi.StringOutput `pulumi:"name"`
	Added pulumi.StringOutput `pulumi:"added"`
}

// runGoProgram runs body with pulumi.RunErr against e, as a language host
// would, and returns the program's error.
func runGoProgram(e *Engine, body pulumi.RunFunc) error {
	return pulumi.RunErr(body, func(info *pulumi.RunInfo) {
		info.Project = e.Project()
		info.Stack = e.Stack()
		info.MonitorAddr = e.MonitorAddr()
		info.EngineAddr = e.EngineAddr()
		info.DryRun = e.DryRun()
		info.Parallel = 4
	})
}

func TestGoSDKProgramWithTransformAndHook(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	var transforms, hooks atomic.Int32
	var hookID atomic.Value
	err := runGoProgram(e, func(ctx *pulumi.Context) error {
		err := ctx.RegisterResourceTransform(func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
			if args.Type != thingType {
				return nil
			}
			transforms.Add(1)
			props := args.Props
			props["added"] = pulumi.String("yes")
			return &pulumi.ResourceTransformResult{Props: props, Opts: args.Opts}
		})
		if err != nil {
			return err
		}
		hook, err := ctx.RegisterResourceHook("audit", func(args *pulumi.ResourceHookArgs) error {
			hooks.Add(1)
			hookID.Store(string(args.ID))
			return nil
		}, nil)
		if err != nil {
			return err
		}
		var thing Thing
		if err := ctx.RegisterResource(thingType, "thing", pulumi.Map{"name": pulumi.String("x")}, &thing,
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{AfterCreate: []*pulumi.ResourceHook{hook}})); err != nil {
			return err
		}
		ctx.Export("thingId", thing.ID())
		ctx.Export("added", thing.Added)
		return nil
	})
	if err != nil {
		t.Fatalf("program failed: %v\n%s", err, e.Trace())
	}
	res := wait(t, e)
	if res.Err != nil {
		t.Fatalf("deployment failed: %v\n%s", res.Err, e.Trace())
	}
	if transforms.Load() != 1 || hooks.Load() != 1 || hookID.Load() != "thing-id" {
		t.Fatalf("transform calls %d, hook calls %d (id %v)\n%s", transforms.Load(), hooks.Load(), hookID.Load(), e.Trace())
	}
	thing := res.State.Get(e.URN(e.StackURN(), thingType, "thing"))
	if thing == nil {
		t.Fatalf("thing missing from state %v", res.State.URNs())
	}
	if field(thing.Inputs, "added").GetStringValue() != "yes" || field(thing.Inputs, "name").GetStringValue() != "x" {
		t.Fatalf("inputs %v", thing.Inputs)
	}
	stack := res.State.Get(e.StackURN())
	if stack == nil || field(stack.Outputs, "thingId").GetStringValue() != "thing-id" ||
		field(stack.Outputs, "added").GetStringValue() != "yes" {
		t.Fatalf("stack %v", stack)
	}
	if len(e.Events(kindSignalAndWaitForShutdown)) != 1 {
		t.Fatal("the SDK did not signal shutdown")
	}
}

func TestGoSDKProgramDeleteHook(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	err := runGoProgram(e1, func(ctx *pulumi.Context) error {
		hook, err := ctx.RegisterResourceHook("farewell", func(*pulumi.ResourceHookArgs) error { return nil }, nil)
		if err != nil {
			return err
		}
		var thing Thing
		return ctx.RegisterResource(thingType, "thing", pulumi.Map{"name": pulumi.String("x")}, &thing,
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{AfterDelete: []*pulumi.ResourceHook{hook}}))
	})
	if err != nil {
		t.Fatal(err)
	}
	res1 := wait(t, e1)

	e2 := startEngine(t, WithState(res1.State))
	var deleted atomic.Value
	err = runGoProgram(e2, func(ctx *pulumi.Context) error {
		hook, err := ctx.RegisterResourceHook("farewell", func(args *pulumi.ResourceHookArgs) error {
			deleted.Store(args.OldOutputs["name"].StringValue())
			return nil
		}, nil)
		if err != nil {
			return err
		}
		// The Go SDK sends RegisterResourceHook from a goroutine it does
		// not wait for, so a hook that no resource binds may still be
		// unregistered when the SDK signals shutdown, and the engine then
		// finds no "farewell" for the delete. Binding the hook to a
		// resource that stays makes the SDK wait for the registration.
		var keeper Thing
		return ctx.RegisterResource(thingType, "keeper", pulumi.Map{"name": pulumi.String("k")}, &keeper,
			pulumi.ResourceHooks(&pulumi.ResourceHookBinding{AfterDelete: []*pulumi.ResourceHook{hook}}))
	})
	if err != nil {
		t.Fatal(err)
	}
	// RunErr returned after SignalAndWaitForShutdown: the hook has run.
	if deleted.Load() != "x" {
		t.Fatalf("after_delete saw %v\n%s", deleted.Load(), e2.Trace())
	}
	res2 := wait(t, e2)
	if res2.Err != nil || res2.State.Get(e2.URN(e2.StackURN(), thingType, "thing")) != nil {
		t.Fatalf("err=%v state=%v", res2.Err, res2.State.URNs())
	}
}

func TestGoSDKProgramOldEngine(t *testing.T) {
	t.Parallel()
	e := startEngine(t, OldEngine(), WithoutShutdownSignal())
	err := runGoProgram(e, func(ctx *pulumi.Context) error {
		// The SDK sees that the engine predates hooks and refuses to
		// register one; the failure stays inside the SDK.
		if _, err := ctx.RegisterResourceHook("h", func(*pulumi.ResourceHookArgs) error { return nil }, nil); err != nil {
			return err
		}
		var thing Thing
		return ctx.RegisterResource(thingType, "thing", pulumi.Map{"name": pulumi.String("x")}, &thing)
	})
	if err != nil {
		t.Fatalf("program failed: %v\n%s", err, e.Trace())
	}
	res, err := e.Finish(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.State.Get(e.URN(e.StackURN(), thingType, "thing")) == nil {
		t.Fatalf("err=%v state=%v", res.Err, res.State.URNs())
	}
	if len(e.Events(kindSupportsFeature)) == 0 {
		t.Fatal("the SDK did not fall back to SupportsFeature")
	}
	if n := len(e.Events(kindRegisterResourceHook)); n != 0 {
		t.Fatalf("the SDK called RegisterResourceHook %d times on an old engine", n)
	}
}

// An unmodified Go program whose resource fails: as under `pulumi up`, the
// user sees the resource's error and "update failed" (RunErr, unlike Run,
// reports nothing itself). 3.260 never answers the registration: RunFunc,
// which cannot kill a program in the test's process, closes its connections
// once the deployment is over, and RunErr returns. 3.274 ends it when it
// shuts its monitor down, and RunErr returns that.
func TestGoSDKProgramFailedStep(t *testing.T) {
	t.Parallel()
	for engine, ended := range map[string]string{
		engine3_274: "rpc error: code = Unavailable desc = resource monitor shut down while waiting on step's done channel",
		engine3_260: "connection closed: the deployment failed",
	} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testGoSDKProgramFailedStep(t, engine, ended)
		})
	}
}

func testGoSDKProgramFailedStep(t *testing.T, engine, ended string) {
	e := startEngine(t, EngineVersion(engine), WithProvider(&FakeProvider{
		OnCreate: func(context.Context, *CreateRequest) (*CreateResponse, error) {
			return nil, errors.New("quota exceeded")
		},
	}))
	res, err := e.RunFunc(t.Context(), func() error {
		return runGoProgram(e, func(ctx *pulumi.Context) error {
			var thing Thing
			return ctx.RegisterResource(thingType, "thing", pulumi.Map{"name": pulumi.String("x")}, &thing)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ProgramErr == nil || !strings.Contains(res.ProgramErr.Error(), ended) {
		t.Fatalf("the program ended with %v, want its registration ended with %q", res.ProgramErr, ended)
	}
	wantFailed(t, res, e.URN(e.StackURN(), thingType, "thing"), "quota exceeded")
	for _, d := range res.Diagnostics {
		if d.FromProgram || strings.Contains(d.Message, "program failed") {
			t.Fatalf("the user was shown %v", d)
		}
	}
	wantEndedWith(t, e, kindRegisterResource, byURN(e.URN(e.StackURN(), thingType, "thing")), ended)
	if !errors.Is(res.Err, res.ProgramErr) {
		t.Fatalf("Err = %v, want it to include the program's error %v", res.Err, res.ProgramErr)
	}
	// What a test prints of Err starts with the reason, and the program's
	// error, the cut's echo, points there.
	if first, _, _ := strings.Cut(res.Err.Error(), "\n"); !strings.Contains(first, "quota exceeded") {
		t.Fatalf("Err starts %q, want the step's failure first", first)
	}
	// Under 3.274 the program's error is the engine's own words.
	if engine == engine3_260 && !strings.Contains(res.ProgramErr.Error(), "Result.Err says why") {
		t.Fatalf("ProgramErr = %v, want it to point at Result.Err", res.ProgramErr)
	}
	// The engine read nothing of the program's failure after its own.
	if again := wait(t, e); again.ProgramErr != nil {
		t.Fatalf("program error %v reached a deployment that was already over", again.ProgramErr)
	}
}

// A Go program run with pulumi.Run reports any failure under the stack
// before it exits: "an unhandled error occurred: program failed: ", a line
// break, and the error. When one of its resources fails, 3.274 ends the
// pending registration as it shuts its monitor down, and the user sees the
// program's report after "update failed". 3.260 never answers the
// registration and stops the program, so the user sees nothing of it. The
// program here plays pulumi.Run's report, which exits the process.
func TestGoSDKProgramReportsTheMonitorShutdown(t *testing.T) {
	t.Parallel()
	for engine, want := range map[string][]string{
		engine3_274: {
			"error|update failed",
			"error|an unhandled error occurred: program failed: \nwaiting for RPCs: rpc error: code = Unavailable desc = resource monitor shut down while waiting on step's done channel",
		},
		engine3_260: {"error|update failed"},
	} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, EngineVersion(engine), WithProvider(&FakeProvider{
				OnCreate: func(context.Context, *CreateRequest) (*CreateResponse, error) {
					return nil, errors.New("quota exceeded")
				},
			}))
			p := newProgram(t, e)
			res, err := e.RunFunc(t.Context(), func() error {
				err := runGoProgram(e, func(ctx *pulumi.Context) error {
					var thing Thing
					return ctx.RegisterResource(thingType, "thing", pulumi.Map{"name": pulumi.String("x")}, &thing)
				})
				if err != nil {
					// As pulumi.Run logs a failure; the engine may no
					// longer serve the program.
					_, _ = p.eng.Log(context.Background(), &pulumirpc.LogRequest{
						Severity: pulumirpc.LogSeverity_ERROR,
						Message:  "an unhandled error occurred: program failed: \n" + err.Error(),
					})
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			var stack []string
			for _, d := range res.Diagnostics {
				if d.URN == "" && d.Severity != severityDebug {
					stack = append(stack, d.Severity+"|"+d.Message)
				}
			}
			wantEqualStrings(t, "the diagnostics under the stack", stack, want)
		})
	}
}

// A resource registered earlier in the deployment can be read back by URN
// (pulumi.URN_, the built-in pulumi:pulumi:getResource invoke), as a
// component provider does with a component it registered over the monitor:
// the engine answers from the new state and registers nothing again, and
// children parented to the resource read back are its children. An unknown
// URN is an error.
func TestGoSDKProgramReadsBackAResourceOfThisDeployment(t *testing.T) {
	t.Parallel()
	const boxType = "test:index:Box"
	e := startEngine(t)
	var readURN atomic.Value
	err := runGoProgram(e, func(ctx *pulumi.Context) error {
		var box pulumi.ResourceState
		if err := ctx.RegisterComponentResource(boxType, "box", &box); err != nil {
			return err
		}
		// Read it back once the engine has registered it.
		box.URN().ApplyT(func(urn pulumi.URN) (pulumi.URN, error) {
			var again pulumi.ResourceState
			if err := ctx.RegisterComponentResource(boxType, "box", &again, pulumi.URN_(string(urn))); err != nil {
				return "", err
			}
			var inside Thing
			if err := ctx.RegisterResource(thingType, "inside", pulumi.Map{"name": pulumi.String("x")}, &inside,
				pulumi.Parent(&again)); err != nil {
				return "", err
			}
			again.URN().ApplyT(func(u pulumi.URN) pulumi.URN { readURN.Store(string(u)); return u })
			return urn, nil
		})
		return nil
	})
	if err != nil {
		t.Fatalf("program failed: %v\n%s", err, e.Trace())
	}
	res := wait(t, e)
	if res.Err != nil {
		t.Fatalf("deployment failed: %v\n%s", res.Err, e.Trace())
	}
	boxURN := e.URN(e.StackURN(), boxType, "box")
	if got := readURN.Load(); got != boxURN {
		t.Fatalf("read back URN %v, want %s\n%s", got, boxURN, e.Trace())
	}
	if res.State.Get(e.URN(boxURN, thingType, "inside")) == nil {
		t.Fatalf("the child of the box read back is not under it: %v", res.State.URNs())
	}
	registered := 0
	for _, ev := range e.Events(kindRegisterResource) {
		if ev.URN == boxURN {
			registered++
		}
	}
	if registered != 1 {
		t.Fatalf("box registered %d times, want 1\n%s", registered, e.Trace())
	}

	e2 := startEngine(t)
	err = runGoProgram(e2, func(ctx *pulumi.Context) error {
		var ghost pulumi.ResourceState
		return ctx.RegisterComponentResource(boxType, "ghost", &ghost,
			pulumi.URN_(e2.URN(e2.StackURN(), boxType, "ghost")))
	})
	if err == nil || !strings.Contains(err.Error(), "unknown resource") {
		t.Fatalf("reading an unknown URN: %v\n%s", err, e2.Trace())
	}
}
