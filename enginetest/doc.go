// Package enginetest simulates the Pulumi engine for tests, in the style of
// net/http/httptest: [Start] serves the ResourceMonitor and Engine gRPC
// services on a loopback port, and a program under test (a Go program using
// pulumi.Run, or a language host talking to a raw ResourceMonitor client)
// runs against it as it would against `pulumi up` or `pulumi preview`.
//
// # Where the engine lives
//
// The engine is this package, one concern a file:
//
//	engine.go       the Engine: start, addresses, the deployment's end, Wait, Finish, Close, Result
//	testing.go      New, Run and RunFunc: a Go program in the test's process
//	command.go      RunCommand: a program as a process, as a language host runs it; ProgramError
//	options.go      the options and the configuration they set
//	features.go     SupportsFeature and GetDeploymentInfo's feature list
//	monitor.go      the ResourceMonitor service: each RPC, recorded, handed on
//	engine_log.go   the Engine service: the program's log, the root resource
//	register.go     RegisterResource: callbacks carried, transforms, then the step
//	generator.go    the step generator: steps decided one at a time, run after
//	transforms.go   resource and invoke transforms: the chain, requests, answers
//	hooks.go        resource hooks: registration, the calls before and after steps
//	errorhooks.go   error hooks and the retries of a failed provider operation
//	migrations.go   state migrations: the calls, the engine's rules, the commit
//	steps.go        a registration's step: check, diff, create, update, replace
//	deletes.go      the deletes after the program, dependents first
//	defaults.go     default providers
//	provider.go     FakeProvider and the requests it answers
//	dial.go         the clients of the program's callback servers
//	state.go        State, ResourceState and URNs
//	record.go       Event, Diagnostic and the record of the deployment
//	props.go        property values on the wire: secrets, unknowns, output values
//	assets.go       asset and archive hashes, as the engine computes them
//	trace.go        OpenTelemetry spans (WithTracing)
//	grpclog.go      the gRPC log (PULUMI_DEBUG_GRPC), in the CLI's format
//
// # What a test holds
//
//   - start an engine: [New] (closed by the test's cleanup) or [Start];
//   - run a program: [Engine.Run], [Engine.RunFunc], [Engine.RunCommand], or
//     drive a raw client at [Engine.MonitorAddr] and [Engine.Wait];
//   - read the result and the state: [Result], [State], [ResourceState],
//     [Diagnostic], and what the engine did, [Engine.Events] and
//     [Engine.Trace];
//   - the options: [Option] and the With... functions, [DryRun], [Destroy],
//     [EngineVersion], [NoCallbacks];
//   - the provider: [FakeProvider].
//
// # How it behaves
//
// In a test, [New] starts an engine that the test's cleanup closes, and
// [Engine.Run] runs a Go program in the process against it, with the
// engine's variables in the environment for the duration, and returns the
// deployment's [Result] once the engine is done:
//
//	eng := enginetest.New(t, enginetest.WithProject("shop"))
//	res := eng.Run(t, func() error { return pulumi.RunErr(program) })
//	// assert on res.Err (every failure, the reason first), res.State, eng.Events(...)
//
// The simulator speaks only the wire. It dials the program's callback
// servers the way the engine does (one client per target, created when the
// callback is registered, 400 MiB messages, plaintext) and calls them for:
//
//   - resource transforms: the resource's own, then its ancestors', then the
//     stack's, in that order, with secrets and unknowns as output values
//     (each with its "dependencies", an empty list when it has none, as
//     3.274.1 writes them);
//   - invoke transforms, serialised under one lock;
//   - resource hooks before and after create, update and delete, with the
//     engine's request fields, dry-run rules and error wording;
//   - error hooks, retrying a failed provider operation up to 100 attempts.
//
// Steps run against a [FakeProvider], so a test can make Create fail
// once, see a replacement, or start from a prior [State] with [WithState]
// to get updates and deletes. Its OnCheck, if set, checks inputs first,
// and the checked inputs are what hooks, the step and the state see. Custom resources, remote components and invokes
// with no provider use the default provider of their package, which is
// created before them and so comes before them in the state; the state
// lists resources in the order their steps complete. Deletes, with their
// hooks, run after the program calls SignalAndWaitForShutdown (or the test
// calls [Engine.Finish]), dependents first and providers last;
// [Engine.Wait] then returns the deployment's [Result]. [Destroy] makes the
// deployment a destroy, with or without the program.
//
// Failures follow the engine. A transform error fails the RegisterResource
// RPC and registers nothing. A failed step (a before hook, the provider, an
// unregistered hook name) emits an error diagnostic on the resource and
// cancels every later step unless [ContinueOnError] is set. Its
// registration is not answered, nor is any later one, nor
// SignalAndWaitForShutdown, while the steps already running finish; the
// deployment then emits the error diagnostic "update failed" ("preview
// failed") with no URN. The engine the simulator plays by default, 3.274.1,
// then shuts its resource monitor down: the calls still pending end with
// Unavailable, "resource monitor shut down while waiting on step's done
// channel", and SignalAndWaitForShutdown returns. A Go program run with
// pulumi.Run reports the failed registration under the stack, which the
// user sees after "update failed" ("an unhandled error occurred: program
// failed:", then "waiting for RPCs: rpc error: code = Unavailable desc =
// resource monitor shut down while waiting on step's done channel"). The
// CLI shows it unless it ends first, which on a busy machine it may; the
// simulator always shows it: the deployment waits for a program
// [Engine.RunFunc] or [Engine.RunCommand] runs to exit before it is over. 3.260 ([EngineVersion]) answers nothing
// more and kills the program instead, so a pending call ends only when the
// program goes away: [Engine.RunCommand] interrupts the process,
// [Engine.RunFunc] ends the calls as a closed connection would (a program
// in the test's process cannot be killed), and [Engine.Close] ends
// whatever still waits. Under either, what the program logs once the
// deployment is over is not shown to the user. With ContinueOnError, a
// program that sets supportsResultReporting gets Result FAIL instead (its
// dependents: SUCCESS with unknown outputs, or SKIP under 3.260), and the
// deployment goes on to its end before it fails. An after hook failure
// keeps the committed state and the RPC succeeds, but the deployment fails
// the same way. An error in generating a step (the
// provider's Check failing or finding the inputs invalid, its Diff
// failing, a failed Construct) is reported (on the resource, except for
// Construct) and ends the deployment even with ContinueOnError, before the
// engine would say "update failed": it does not say it.
//
// The program's own failure is not a failed deployment in the engine's
// words either. It reaches the engine through [Engine.ProgramFailed], as a
// language host reports it: its message becomes an error diagnostic with no
// URN, no step starts afterwards and no delete runs, but no "update failed"
// follows. [Result] still reports it as a failure (Failed, Err and
// ProgramErr); the results of [Engine.RunFunc] and [Engine.RunCommand] do
// so however the program ended, even after it signalled its end.
//
// Any program, in any language, runs on the simulator as a language host
// runs it with [Engine.RunCommand]: started with the language hosts'
// environment, each line of its standard error shown as a diagnostic as
// the engine shows it, waited for, its non-zero exit reported in the
// engine's words, and stopped when the deployment fails first.
//
// State migrations run as Pulumi 3.274.1 runs them (under
// EngineVersion("3.260.0") a registration that carries them is refused, as
// 3.260 refuses it): the engine advertises STATE_MIGRATIONS, and a
// registration's migrations run in an update or a preview, not in a destroy, and only if the resource has
// prior state (by URN, then by alias). They are called in order (a remote
// component's provider's first) over the resource and every prior resource
// transitively parented to it, each given what the one before returned
// (Event.Callback "state-migration"). The result is checked by the
// engine's rules and reported in its words; a result that changes the
// state replaces the subtree in the prior state before the registration's
// step is decided, with "State migration applied (state entries: N
// before, M after)." ("planned" in a preview) under the resource. A
// failure that cancels the deployment ends the migrations in flight or
// still to come, as the engine's step generation stops: each reads "state
// migration 1 of 1 for URN: rpc error: code = Canceled desc = context
// canceled" under its resource, as under 3.274.1.
//
// Steps are decided as the engine's step generator decides them (3.274.1
// and 3.260.0 alike): one registration at a time, in the order the
// registrations reach it. A registration's transforms run first, each on
// its own RPC, as the engine's resource monitor runs them, and so does a
// remote component's Construct and the creation of a default provider; the
// step generator then runs the registration's state migrations, looks at
// its dependencies' failures, calls the provider's Check and Diff, and
// decides the step, while every later registration, RegisterResourceOutputs
// (with a component's after hooks) and ReadResource waits. The step it
// decided then runs (the before hooks, the provider's Create or Update,
// the error hooks and their retries, the after hooks) alongside the
// decisions that follow. So a slow state migration, Check or Diff holds up
// the registrations after it, while a slow Create does not. A state
// migration that runs (over prior state) also waits for the steps in
// flight to end, and no step starts until it is done, as the engine pauses
// its step executor for it. So a state migration, Check, Diff or
// component after hook that waits for a later registration waits forever,
// here as under the engine, and so does a step that waits for a later
// registration whose state migration runs.
//
// Everything the engine does is recorded as [Event] values ([Engine.Events],
// [Engine.Trace]) and user-facing messages as [Diagnostic] values.
//
// The engine writes the gRPC log the CLI writes: when the environment
// variable PULUMI_DEBUG_GRPC names a file at [Start], the engine appends to
// it every call it serves on the ResourceMonitor service and every call it
// makes to a callback server, in the CLI's format (3.274.1), so that the
// log of a test's deployment reads as the log of `pulumi up` does. The file
// is JSON Lines, created with mode 0600, with two entries a call: a
// "request_started" entry with the request, then a "response_completed"
// entry that repeats it and adds the response, or, for a callback call, the
// error in "errors". Bodies are protojson with default options. A callback
// call has metadata {"kind":"callbacks","mode":"client"}, a timestamp (its
// end, once completed) and a duration; a monitor call has metadata
// {"mode":"server"} and, as the CLI writes them, a zero timestamp when it
// starts, a saturated duration when it completes, and no error. Engines
// that share a file, in one process or several, append whole lines.
//
// Known simplifications: a step runs on the goroutine of the RPC that
// caused it, with no limit on how many run at once (the engine runs as many
// as its parallelism allows), and delete steps one at a time; Call is not
// served; a program's standard output is not shown as info diagnostics, as
// the engine shows it; provider Read, Configure and a provider resource's
// CheckConfig are not modelled;
// ignoreChanges and replaceOnChanges match top-level keys only; property
// dependencies are tracked for top-level properties only; a destroy with
// the program is one pass (run the preview pass with [DryRun] yourself);
// check failures print a property's value as {value} for scalars and JSON
// otherwise; state migrations keep no resource aliases, source positions or
// timestamps in the state they pass, and rewrite references to a
// successor in structural fields only (not in resource references inside
// properties). Asset and archive hashes are
// computed as the engine computes them (relative paths from the working
// directory of the test), but nothing is fetched: an asset or archive
// behind an http(s) URI, or an archive with such a member, keeps the hash
// it came with and otherwise gets none, where the engine would download
// it; file:// URIs are read.
package enginetest
