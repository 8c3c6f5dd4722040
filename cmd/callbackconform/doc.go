// Command callbackconform checks a language host's callbacks server
// against the contract the Pulumi engine relies on.
//
//	go run ./cmd/callbackconform [-json FILE] [-v] [-run REGEXP] [-count N] -- PROGRAM [ARGS...]
//	go run ./cmd/callbackconform -protos DIR
//
// It starts PROGRAM as a language host would (see CONFORMANCE.md), plays the
// engine on the enginetest simulator, lets the program register its
// callbacks, and checks every registered callback against the contract
// below once the program calls SignalAndWaitForShutdown, which it answers
// only after the checks. ${PULUMI_MONITOR}, ${PULUMI_ENGINE} and the other
// variables a language host sets are expanded in ARGS, for runners that take
// them as flags.
//
// It prints one row per clause and kind the clause applies to (clause,
// level, kind, verdict, evidence) and a result line that counts the
// clauses passed; -json writes the same report as JSON, with the bytes of every
// bad input sent; -v shows the program's output, each check and each bad
// input as it runs and the engine's trace; -run checks only the clauses
// whose id matches; -count runs each clause N times and counts the
// verdicts. A verdict is pass, fail, "not run" (the server had stopped
// answering, or the callback never ran: the evidence says why) or n/a. It
// exits 0 when a MUST clause passed and none failed or went unrun, 1 when
// one failed, 2 when it could not run or concluded nothing (no MUST clause
// checked, or one not run).
//
// -protos DIR writes the protocol the kit speaks, a FileDescriptorSet built
// from the Pulumi SDK's compiled descriptors, for servers written without
// Go.
//
// # Fixture convention
//
// The program registers callbacks of the kinds it supports, which send back
// what they get, except for one request per kind, for which they make a
// known change: a transform adds a property and changes an option for the
// resource named "lossless" (the function "conform:index:lossless"); a
// resource hook refuses the resource named "refuse-me"; an error hook
// retries after one error; a state migration sets conformVersion from 1 to
// 2. It keeps serving until SignalAndWaitForShutdown returns. Clauses for
// kinds it does not register are n/a, never passes.
//
// # The contract
//
// MUST (otherwise the engine loses data or the deployment fails):
//
//	request/every-field       a request with every field set gets the identity answer
//	round-trip/properties     secrets, unknowns, output values with dependencies, resource
//	                          references, assets and archives come back as sent
//	round-trip/options        every option field comes back as sent (or none: no change)
//	round-trip/byte-strings   byte strings come back, when the callback accepts them
//	result/changes            the function's known change arrives exactly
//	round-trip/value-shapes   a leading U+FEFF, -0 and 2^53 and its neighbours come back exactly
//	round-trip/unknown-fields unknown protobuf fields are accepted, and come back byte for
//	                          byte in a transform's options
//	request/no-options        a request without options gets the identity answer
//	concurrency/1000          1,000 concurrent calls get the answer a lone call gets
//	deadline                  calls whose deadline passes end, the server keeps serving
//	cancellation              cancelled calls end, the server keeps serving
//	payload/5MiB              a request above gRPC's default 4 MiB limit is answered
//	payload/64MiB             a 64 MiB property gets the identity answer
//	stays-up                  the server answers after each bad input
//
// SHOULD (debuggability and hygiene):
//
//	resources/no-growth       no thread or file descriptor growth
//	migration/local-rules     a migration's result that breaks a local rule is refused
//	unknown-token             NotFound for an unknown token
//	bad-payload               InvalidArgument naming the kind for a payload that does not decode
//	invalid-utf8              a string that is not UTF-8 is refused, not altered
//	deep-nesting              nesting handled in time linear in depth
//	payload/300MiB            a 300 MiB property (the engine sends up to 400 MiB)
//	no-stack-trace            no stack trace in any error message
//
// CONFORMANCE.md gives each clause's reason, the phases the clauses run in,
// a start for a server written without an SDK, and the measured results for
// the Go SDK, the Node.js SDK, a raw JavaScript server and this module.
//
// The kit speaks only the wire: it builds the engine's requests and judges
// the answers itself, and imports neither this module's server nor its
// typed packages, so that a bug shared by the checker and the checked cannot
// hide itself.
package main
