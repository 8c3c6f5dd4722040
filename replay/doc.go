// Package replay reads the engine's own gRPC log of a deployment and
// recovers every callback call in it: which transform, hook, error hook or
// state migration the engine called, for which resource, what it asked and
// what it got back, how long it took.
//
// The log is what `PULUMI_DEBUG_GRPC=FILE pulumi up` writes: one JSON object
// per line for every gRPC call the engine makes or serves. Callback calls are
// the engine's /pulumirpc.Callbacks/Invoke requests, whose payloads are the
// protocol's messages in base64; the monitor's own entries of the same log
// (RegisterStackTransform, RegisterStackInvokeTransform,
// RegisterResourceHook, RegisterErrorHook, and RegisterResource with its
// transforms and stateMigrations) say which function each token names.
// [Read] streams the calls as [Call] values, whatever language the program
// was written in: the payloads are the engine's protocol, not this
// module's.
//
// A [Call] says where its function was registered ([Registration]: the
// method, a hook's name, a stack transform's order within its run of the
// program, or the resource a transform or migration is attached to), the
// resource it was about, the payloads, the error, when it started and how
// long it took. [Call.Messages] decodes the payloads as the protocol's
// messages; [Call.Changes] says what a call changed, property by property
// (old → new, secrets hidden unless [ShowSecrets] is asked for);
// [Call.Outcome] sums it up in an [Outcome]: changed, unchanged, ok,
// refused, retry, no retry, migrated, failed, or unanswered.
//
// [Run] turns a log into a Go test: it runs the program's body (the
// function given to pulumi.Run) against the simulated engine of
// [github.com/langhost/callbacks/enginetest], in the test's process, sends each recorded request unchanged to the function now
// registered in its place, and fails the test with a diff by property path
// wherever the answer differs from the recorded one. With
// CALLBACKS_REPLAY_UPDATE=1 it rewrites the recorded answers instead, as
// golden files are updated.
//
// An [Option] tunes Run: [IgnorePaths] passes the differences at the paths
// it names, for values that change on every run. After each run of the
// program, Run lists by URN the resources the program registers now that
// the recording lacks, and those recorded that it no longer registers (a
// renamed resource), with t.Logf; [RequireSameResources] makes them fail
// the test:
//
//	replay.Run(t, "testdata/up.jsonl", deploy,
//		replay.IgnorePaths("properties.tags.deployedAt", "properties.items[*].id"),
//		replay.RequireSameResources())
//
// A log holds secrets in plain text: the stack's configuration, and secret
// values inside the callback payloads. [Scrub] replaces them, and every
// configuration value wherever it appears, with placeholders ("[secret 1]",
// "[config 1]") that are the same for the same value throughout the log, so
// that a log can be kept as test data and still replays for functions that
// do not read secrets or configuration.
//
// A malformed line, a payload that does not decode, a token the log never
// registered, or a callback kind this module does not know (the engine
// adds kinds) yields a [*LineError] naming the line, and reading goes on.
// Nothing in this package keeps state between calls; a Call may be used
// from several goroutines.
package replay
