package enginetest

import (
	"context"
	"maps"
	"slices"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"go.opentelemetry.io/otel/trace"
)

// An Option configures an [Engine] at [Start] or [New].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	project, stack, organization string
	dryRun                       bool
	parallel                     int32
	config                       map[string]string
	configSecretKeys             []string
	prior                        *State
	provider                     *FakeProvider
	continueOnError              bool
	engine                       string
	oldEngine                    bool
	noShutdownSignal             bool
	destroy, runProgram          bool
	disabled                     map[string]bool
	beforeShutdown               func(context.Context)
	noCallbacks, noMigrations    bool
	tp                           trace.TracerProvider
	traceParent                  trace.SpanContext
}

func defaultConfig() *config {
	return &config{
		project:  "project",
		stack:    "stack",
		engine:   engine3_274,
		parallel: 16,
		config:   map[string]string{},
		disabled: map[string]bool{},
	}
}

// WithProject sets the project name. The default is "project".
func WithProject(name string) Option {
	return optionFunc(func(c *config) { c.project = name })
}

// WithStack sets the stack name. The default is "stack".
func WithStack(name string) Option {
	return optionFunc(func(c *config) { c.stack = name })
}

// WithOrganization sets the organization name. The default is empty.
func WithOrganization(name string) Option {
	return optionFunc(func(c *config) { c.organization = name })
}

// WithConfig sets the stack configuration reported to the program, and the
// keys among it that are secret. The default is empty.
func WithConfig(values map[string]string, secretKeys ...string) Option {
	return optionFunc(func(c *config) {
		c.config = maps.Clone(values)
		if c.config == nil {
			c.config = map[string]string{}
		}
		c.configSecretKeys = append([]string(nil), secretKeys...)
	})
}

// WithParallel sets the parallelism reported to the program. The default is
// 16. The simulator does not limit how many steps run at once, so the value
// has no other effect.
func WithParallel(n int32) Option {
	return optionFunc(func(c *config) { c.parallel = n })
}

// WithState sets the state of the previous deployment. Without it the
// deployment starts from an empty stack. Resources in s that the program
// registers again are diffed (same, update or replace); the others are
// deleted once the program is done.
func WithState(s *State) Option {
	return optionFunc(func(c *config) { c.prior = s.Clone() })
}

// DryRun makes the deployment a preview. The default is false (an update).
func DryRun(preview bool) Option {
	return optionFunc(func(c *config) { c.dryRun = preview })
}

// WithProvider sets the provider that serves every custom resource and
// invoke. The default is a zero [FakeProvider].
func WithProvider(p *FakeProvider) Option {
	return optionFunc(func(c *config) { c.provider = p })
}

// ContinueOnError makes the deployment go on after a failed step, as
// `pulumi up --continue-on-error` does. The default is false: the first
// failure cancels every later step.
func ContinueOnError(on bool) Option {
	return optionFunc(func(c *config) { c.continueOnError = on })
}

// OldEngine makes the simulator behave like an engine that predates
// callbacks: GetDeploymentInfo answers UNIMPLEMENTED, SupportsFeature answers
// false for the six features such an engine lacks (transforms,
// invokeTransforms, resourceHooks, errorHooks, sendsOptionsToHooks and
// parameterization), the matching registration RPCs answer UNIMPLEMENTED,
// and the transforms and hooks fields of RegisterResource are ignored.
func OldEngine() Option {
	return optionFunc(func(c *config) {
		c.oldEngine = true
		for _, id := range []string{
			"transforms", "invokeTransforms", "resourceHooks", "errorHooks",
			"sendsOptionsToHooks", "parameterization",
		} {
			c.disabled[id] = true
		}
	})
}

// The engine releases whose behaviour the simulator can play, for
// [EngineVersion], which says how they differ.
const (
	engine3_274 = "3.274.1" // the default
	engine3_260 = "3.260.0"
)

// EngineVersion makes the simulator play the given engine release,
// "3.274.1" (the default) or "3.260.0". Any other value makes [Start]
// fail.
//
// Under "3.274.1" the engine advertises STATE_MIGRATIONS and runs the
// migrations of a registration (see [Engine.RunFunc] and the package
// documentation).
//
// Where 3.260.0 differs from 3.274.1 in a way a program sees, the
// simulator follows it under "3.260.0": a registration skipped under
// ContinueOnError answers Result SKIP (3.274.1 answers SUCCESS with
// Unknown set), and the engine neither advertises STATE_MIGRATIONS nor
// runs migrations: RegisterResource requests that carry them fail with
// FailedPrecondition ("state migrations are not supported by this
// deployment"). After a failure it leaves the program's pending calls
// unanswered until it stops the program, where 3.274.1 shuts its resource
// monitor down and so ends them (see the package doc). It leaves
// "dependencies" out of the output values of a resource transform's
// request that have none, where 3.274.1 writes an empty list.
func EngineVersion(v string) Option {
	return optionFunc(func(c *config) { c.engine = v })
}

// WithoutShutdownSignal makes SignalAndWaitForShutdown answer UNIMPLEMENTED,
// as engines that predate it do. The program's end must then be reported with
// [Engine.Finish].
func WithoutShutdownSignal() Option {
	return optionFunc(func(c *config) { c.noShutdownSignal = true })
}

// WithoutFeatures turns the named features off. Names are SupportsFeature ids
// ("transforms", "resourceHooks", "outputValues", ...) or, for the features
// that have no id, "byteString", "invokeDependsOn" and "invokeParent".
// A feature that is off is neither advertised nor served: its registration
// RPC answers UNIMPLEMENTED and its RegisterResource fields are ignored.
func WithoutFeatures(ids ...string) Option {
	return optionFunc(func(c *config) {
		for _, id := range ids {
			c.disabled[id] = true
		}
	})
}

// WithFeatures makes the engine advertise exactly the features fs, as a
// recorded engine did (its GetDeploymentInfo's list): every feature not in
// fs is off, as [WithoutFeatures] turns it off, and without
// RESOURCE_MONITOR_FEATURE_STATE_MIGRATIONS the engine neither advertises
// nor runs state migrations. Values the simulator does not know are
// ignored.
func WithFeatures(fs ...pulumirpc.ResourceMonitorFeature) Option {
	return optionFunc(func(c *config) {
		on := map[pulumirpc.ResourceMonitorFeature]bool{}
		for _, f := range fs {
			on[f] = true
		}
		for _, f := range append(slices.Clone(featureIDs), enumOnlyFeatures...) {
			c.disabled[f.id] = !on[f.feature]
		}
		c.noMigrations = !on[pulumirpc.ResourceMonitorFeature_RESOURCE_MONITOR_FEATURE_STATE_MIGRATIONS]
	})
}

// NoCallbacks makes the engine answer every registration as it otherwise
// would but call none of the program's callbacks: no resource or invoke
// transform, resource hook, error hook or state migration is called, so a
// registration keeps the inputs the program sent and no hook fails a
// step. Registrations are still checked, recorded as events and dialled.
// A tool that calls the callbacks itself, at [BeforeShutdown] (a replay of
// a recorded deployment), uses it so that the engine calls none of them
// first.
func NoCallbacks() Option {
	return optionFunc(func(c *config) { c.noCallbacks = true })
}

// BeforeShutdown calls f when the program calls SignalAndWaitForShutdown,
// before the engine runs the deployment's last steps; the program keeps
// waiting, and serving its callbacks, until f returns. ctx ends if the
// program gives up waiting. Tools that call a program's callbacks themselves
// (a conformance check) use it to keep the program alive while they do.
func BeforeShutdown(f func(ctx context.Context)) Option {
	return optionFunc(func(c *config) { c.beforeShutdown = f })
}

// Destroy makes the deployment a destroy of the state given with
// [WithState]: every resource in it is deleted, dependents first, with its
// delete hooks.
//
// With runProgram false (`pulumi destroy`) the program does not run: the
// deletes start at once and [Engine.Wait] returns the result. As in the
// engine, if a resource in the state has delete hooks, nothing is deleted:
// each such resource gets the error "Resource has delete hooks registered,
// but the program is not running. Hooks: NAMES" and the destroy fails with
// "You must run with the `--run-program` flag to use delete hooks during
// destroy.".
//
// With runProgram true (`pulumi destroy --run-program`) the program runs
// and registers its hooks; every registration is transformed as usual, but
// a custom resource gets no create or update: one already in the state
// keeps its state (a same step, its hook binding taken from this
// registration), a new one is skipped and never reaches the state.
// Providers and components are registered as in an update. Once the program
// is done, every resource in the state is deleted, with the delete hooks
// its binding names, resolved among the hooks this run registered. The CLI
// runs the program twice, a preview pass then the destroy itself: to
// reproduce both, run the program against an engine started with
// Destroy(true) and [DryRun](true), then against one started with
// Destroy(true), both from the same state.
func Destroy(runProgram bool) Option {
	return optionFunc(func(c *config) { c.destroy, c.runProgram = true, runProgram })
}

// runsMigrations reports whether the engine played advertises and runs
// state migrations: 3.274.1 does, on the self-managed backends the
// simulator stands for; 3.260.0 and engines that predate callbacks do not.
func (c *config) runsMigrations() bool {
	return c.engine == engine3_274 && !c.oldEngine && !c.noMigrations
}
