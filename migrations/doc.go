// Package migrations is a typed Go API for Pulumi state migrations:
// functions the engine is meant to call when a resource registers, to rewrite
// the stored state of that resource and its descendants before it is
// compared with the program.
//
// A migration is a [Func]. It receives [Args]: the registering resource's URN
// and its old state, a JSON array of checkpoint resources (the resource
// first, then everything transitively parented to it), exactly as the engine
// sent it. [Args.Resources] decodes it with json.Number for numbers, so no
// precision is lost. The function returns a [Result] with the new state, or
// nil to leave the state alone, plus successors: for each resource it
// removes, the URN of the resource that replaces it. Results are checked
// against the protocol's rules before they are sent.
//
// [Callback] registers a migration with a callback server and returns the
// Callback that goes into RegisterResourceRequest.state_migrations.
//
// # Status
//
// The engine has the plumbing but does not run migrations yet. It does not
// advertise the STATE_MIGRATIONS feature, and it refuses a registration that
// carries state migrations with FailedPrecondition ("state migrations are not
// supported by this deployment"). Ask first, with
// mon.Require(ctx, monitor.StateMigrations), and register migrations only
// when it returns nil. Secret values inside the old state are plaintext
// within their secret envelopes: treat the whole state as sensitive.
package migrations
