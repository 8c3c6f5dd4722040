// Command callbackconform checks a language host's callbacks server
// against the contract the Pulumi engine relies on.
//
//	go run ./cmd/callbackconform [-json FILE] [-v] [-run REGEXP] -- PROGRAM [ARGS...]
//
// It starts PROGRAM as a language host would (see CONFORMANCE.md), plays the
// engine on the enginetest simulator, lets the program register its
// callbacks, and checks every registered callback against the contract
// below once the program calls SignalAndWaitForShutdown, which it answers
// only after the checks. ${PULUMI_MONITOR}, ${PULUMI_ENGINE} and the other
// variables a language host sets are expanded in ARGS, for runners that take
// them as flags.
//
// It prints one row per clause and kind (clause, level, kind, verdict,
// evidence); -json writes the same report as JSON; -v shows the program's
// output, each check as it runs and the engine's trace; -run checks only the
// clauses whose id matches. It exits 0 when every MUST clause passed, 1 when
// one failed, 2 when it could not run (the program did not start, exited
// before signalling, or registered no callbacks).
//
// # Fixture convention
//
// The program registers identity callbacks of the kinds it supports: a
// stack transform that returns its input, an invoke transform that returns
// its input, a resource hook that succeeds, an error hook that declines to
// retry. It keeps serving until SignalAndWaitForShutdown returns. Clauses
// for kinds it does not register are reported as n/a, never as passes.
//
// # The contract
//
// MUST (otherwise the engine loses data or the deployment fails):
//
//	request/every-field      a request with every field set gets the identity answer
//	round-trip/properties    secrets, unknowns, output values with dependencies, resource
//	                         references, assets and archives come back as sent
//	round-trip/options       every option field comes back as sent (or none: no change)
//	round-trip/byte-strings  byte strings come back, when the callback accepts them
//	request/no-options       a request without options gets the identity answer
//	concurrency/1000         1,000 concurrent calls get the answer a lone call gets
//	deadline                 calls whose deadline passes end, the server keeps serving
//	cancellation             cancelled calls end, the server keeps serving
//	payload/64MiB            a 64 MiB property gets the identity answer
//	stays-up                 the server answers after each bad input
//
// SHOULD (debuggability and hygiene):
//
//	unknown-token            NotFound for an unknown token
//	bad-payload              InvalidArgument naming the kind for a payload that does not decode
//	invalid-utf8             a string that is not UTF-8 is refused, not altered
//	deep-nesting             nesting handled in time linear in depth
//	resources/no-growth      no thread or file descriptor growth
//	payload/300MiB           a 300 MiB property (the engine sends up to 400 MiB)
//	no-stack-trace           no stack trace in any error message
//
// CONFORMANCE.md gives each clause's reason and the measured results for
// the Go SDK, the Node.js SDK and this module.
//
// The kit speaks only the wire: it builds the engine's requests and judges
// the answers itself, and imports neither this module's server nor its
// typed packages, so that a bug shared by the checker and the checked cannot
// hide itself.
package main
