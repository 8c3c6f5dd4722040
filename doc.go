// Package callbacks is the language-host side of Pulumi's callback system: a
// registry of user functions keyed by unguessable tokens, and a gRPC server for
// the pulumirpc.Callbacks service that the Pulumi engine calls back into.
//
// The engine calls a program back at set moments of a deployment: resource
// transforms, invoke transforms, resource hooks, error hooks and state
// migrations. Each call carries a token and an untyped payload. A [Registry]
// maps tokens to functions, decodes the payload into the request message for
// the callback's [Kind], calls the function and encodes its response. A
// [Server] adapts the registry to gRPC and gives it an http.Server-like
// lifecycle (Serve, Shutdown, Close, [ErrServerClosed]).
//
// Every failure reaches the engine with a meaningful gRPC status: an unknown
// token is NotFound, a payload that does not decode is InvalidArgument, a panic
// is Internal (its value in the status, its stack not: the stack goes to a
// logger at debug level, see [WithLogger], and, on a server with an
// [EngineAddress] and no [WithReporter], to the engine's log at debug
// severity, which `pulumi up --debug` shows; the status says which), an
// error that already carries a status keeps its code and any other error
// is Unknown.
// The returned errors are [*Error] values that work with errors.Is against the
// exported sentinels.
//
// # Tracing
//
// A [Server] traces its calls with OpenTelemetry when there is a tracer
// provider to trace with: one given with [WithTracerProvider], or a global
// one set before the server is made (the Go SDK's pulumi.Run sets one when
// the engine traces the deployment, `pulumi up --otel-traces`). Each call
// is then a server span of OpenTelemetry's gRPC instrumentation, under the
// span whose W3C trace context the engine sent with the call, and the
// registry writes into it what the call was and how it ended: the
// attributes pulumi.callback.kind, pulumi.callback.name,
// pulumi.callback.site (the user's line that registered it),
// pulumi.callback.token, pulumi.resource.urn, pulumi.resource.type,
// pulumi.resource.name, pulumi.dry_run and pulumi.callback.attempt (error
// hooks); for a failure, an error status with the message the engine gets
// and error.type (unknown_token, invalid_request, panic, timeout, encode,
// invalid_result, or the gRPC code); for a panic, an exception event with
// its value, never its stack. A hook that fails answers the engine
// normally, so [RecordFailure] marks its span. A function's context
// carries the call's span, under which it can start its own. The server's
// reports to the engine are client spans under the call's. Without a
// provider the server installs no instrumentation at all.
// [Registry.Invoke], called without a server, traces each call in a span of
// its own under the span its context carries.
//
// # Pulumi's log
//
// Every pulumi command keeps an encrypted log of its own in
// $PULUMI_HOME/logs (read it with `pulumi logs decrypt --latest`) and
// runs an OTLP logs receiver whose address it gives the programs it starts
// in PULUMI_LOG_OTLP_ENDPOINT. A [Server] made where that variable is set
// sends the receiver two records of each call it serves, or that its
// registry serves for it (the migrations of package program): one when the
// call's function starts, once the request is decoded, and one when the
// call ends, so that a call that never ended is seen. Both have the body
// "callbacks: call started" or "callbacks: call finished", callbacks.module
// "github.com/langhost/callbacks", callbacks.schema 2 and a
// callbacks.call_id shared by the two, and the span attributes above that
// the call has (kind, name, site, token, the resource's URN, type and
// name, dry run, attempt); the end adds callbacks.outcome ("ok" or
// "error"), rpc.response.status_code, callbacks.duration_ms and, for a
// failure, error.type, callbacks.error (the message, up to 4 KiB) and
// pulumi.callback.failed_open. A hook that answers with its error ends
// with outcome "error" and code OK. A call with an unknown token has kind
// "unknown".
//
// The end record of a resource transform, an invoke transform or a state
// migration that did not fail says what the call changed:
// callbacks.changes, a JSON array of {"path", "old", "new"} by property
// path as `callbacklog` prints them (properties.tags.team,
// options.protect, args.region, state[0].outputs.size), each value
// written short (200 bytes at most), old or new left out where the value
// was absent; at most 32 changes and 4 KiB of their text, and
// callbacks.changes_left_out counts the rest. An empty answer records []
// and callbacks.changes_note "no change: the answer was empty". The
// request (and the answer) are kept from the start record to the end
// record's sending, a copy of the request made as the function starts,
// because the encoder may answer in the request's own bytes; all that the
// queued records hold is bounded by 16 MiB, and a call that would pass it
// records callbacks.changes_note "changes not recorded: payload too
// large". The decoding and comparing happen on the goroutine that sends,
// not in the call.
//
// A secret's value never goes in a record: a secret, and anything inside
// one (a secret map's members, a secret output value), is written
// [secret], two different secrets [secret] and [another secret]. With
// CALLBACKS_PULUMI_LOG=payloads, every end record of a known kind also holds the call's
// request and its answer, if it answered (a hook that refused did; a call
// that returned an error did not), as JSON text (callbacks.request, callbacks.answer:
// the protocol's JSON form, a migration's state as the JSON it holds),
// each secret there written {"4dabf18193072939515e22adb298388d":
// "1b47061264138c4ac30d75fd1eb44270", "value": "[secret]"}; one of more
// than 64 KiB of JSON is left out, and callbacks.payload_note says so.
// What else a record may hold of a program's data is an error message:
// the one the engine gets, for an error a function returns, or a hook's
// answer, its own text, which may hold anything the function put in it;
// for a panic, the panic's value. A URN, type or resource name is never
// secret in Pulumi.
//
// The records never hold up a call: they wait in a queue of 4,096, one
// goroutine per server sends them in batches, each send bounded by a
// second and never retried, and a record that finds the queue full or
// whose send fails is dropped and counted (the counts go to the server's
// logger at debug level when it stops). When the server stops it sends
// what is queued, for at most two seconds, and closes the connection. The
// package sets no global OpenTelemetry provider or logger and leaves the
// program's loggers alone. [WithoutPulumiLog], or CALLBACKS_PULUMI_LOG=off
// in the environment, turns the records off; without the variable nothing
// is dialled, nothing is copied or computed, and a call costs what it did
// before (BENCHMARKS.md).
//
// An Automation API inline program gets no record: its language host runs
// in the Automation API's own process, which the CLI does not start, so
// nothing gives it the receiver's address (the CLI starts a receiver per
// command, on a new port, and names it only to the plugins it starts;
// RunRequest carries no such field).
//
// This package works on the wire messages of github.com/pulumi/pulumi/sdk/v3/proto/go.
// The packages transforms, invoketransforms, hooks and migrations build typed,
// lossless Go APIs on top of it and register the functions with the engine's
// ResourceMonitor; the package enginetest plays the engine in tests.
package callbacks
