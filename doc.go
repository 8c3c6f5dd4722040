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
// This package works on the wire messages of github.com/pulumi/pulumi/sdk/v3/proto/go.
// The packages transforms, invoketransforms, hooks and migrations build typed,
// lossless Go APIs on top of it and register the functions with the engine's
// ResourceMonitor; the package enginetest plays the engine in tests.
package callbacks
