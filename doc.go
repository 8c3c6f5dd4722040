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
// This package works on the wire messages of github.com/pulumi/pulumi/sdk/v3/proto/go.
// The packages transforms, invoketransforms, hooks and migrations build typed,
// lossless Go APIs on top of it and register the functions with the engine's
// ResourceMonitor; the package enginetest plays the engine in tests.
package callbacks
