// Package migrations is a typed Go API for Pulumi state migrations:
// functions the engine calls when a resource registers, to rewrite the
// stored state of that resource and its descendants before it is compared
// with the program. A program whose resources changed shape (a property
// renamed, a type moved) migrates their state instead of replacing them.
//
// A migration is a [Func]. It receives [Args]: the registering resource's URN
// and its old state, a JSON array of checkpoint resources (the resource
// first, then everything transitively parented to it). [Args.Resources]
// decodes it into maps, [Args.Checkpoint] into the Go SDK's checkpoint type
// (apitype.ResourceV3), both with json.Number for numbers. The
// function returns a [Result] with the new state, or nil to leave the state
// alone, plus successors: for each resource it removes, the URN of the
// resource that replaces it. Secret values inside the old state are
// plaintext within their secret envelopes: treat the whole state as
// sensitive.
//
// A [Chain] builds a migration from versioned upgrades, the shape
// Terraform's UpgradeState gives providers: it reads the schema version
// from the state, runs the upgrades the state still needs, and changes
// nothing on current state, so it is idempotent, as the engine requires
// every migration to be.
//
// # Attaching migrations
//
// In a Go program, program.Migrations is the SDK's own StateMigrations
// resource option carrying this package's functions:
//
//	upgrade, err := program.Migrations(ctx, chain.Migrate)
//	...
//	ctx.RegisterResource(typ, name, args, &res, upgrade)
//
// (a whole program: [github.com/langhost/callbacks/examples/migrations]).
//
// [Callback] is the lower-level form: it registers a migration with a
// callback server and returns the Callback that goes into
// RegisterResourceRequest.state_migrations of a registration made by hand.
//
// # When the engine runs them
//
// Pulumi 3.274.1 and later run state migrations; older engines do not
// advertise the STATE_MIGRATIONS feature and refuse a registration that
// carries migrations (program.Migrations says so in one line; with
// [Callback], ask first with mon.Require(ctx, monitor.StateMigrations)).
// The engine runs a registration's migrations in an update and in its
// preview, not in a destroy or a refresh, and only if the resource has
// prior state (found by URN, then by alias). They run in order, each given
// what the one before returned, while the engine's steps wait: a call to
// the engine from inside a migration would never be answered, so the
// monitor refuses one made with the migration's context
// (monitor.ErrCallFromMigration). The engine decides steps one
// registration at a time and starts a migration only once the steps in
// flight have ended, so a slow migration holds up the whole deployment:
// keep migrations quick, and bound them with callbacks.Timeout. When
// another step fails meanwhile, the engine cancels the migration and
// shows "state migration 1 of 1 for URN: rpc error: code = Canceled desc
// = context canceled" under the resource; the migration did not fail,
// and the state is unchanged. A result that changes the state shows
// "State migration applied (state entries: N before, M after)." under the
// resource ("planned" in a preview).
//
// # What a result must respect
//
// Before a result is sent, it is checked by every rule of the engine's
// validator that depends only on the old state and the result; a result
// that breaks one fails the call with a [*callbacks.Error] wrapping
// [callbacks.ErrInvalidResult] (Internal) whose message names the rule and
// says how to fix it, as in "the result breaks the rule id-changed: the
// resource changed its ID from "a" to "b" under the same URN; keep the ID
// …, or return a successor …". The rules:
//
//   - the new state is a JSON array of checkpoint resources, strictly
//     (not-checkpoint-state), and successors come only with a new state
//     (successors-without-state);
//   - every resource has a valid URN (invalid-urn), a type that matches
//     it (type-mismatch), no aliases (aliases), and appears once
//     (duplicate);
//   - every old resource is kept under its URN or names a successor
//     (unaccounted), never both (returned-and-succeeded); a successor is
//     non-empty (empty-successor), replaces a resource of the old state
//     (successor-not-in-prior-state) and is in the new state
//     (successor-not-returned);
//   - a resource kept under its URN keeps its kind (custom-changed) and ID
//     (id-changed); a custom resource's successor stays custom
//     (custom-to-component) and keeps its physical ID (physical-id),
//     provider (provider-reference), extension (extension-reference),
//     ownership (external), PendingReplacement (pending-replacement) and
//     Taint (taint); no custom resource appears without a predecessor
//     (import); Protect and RetainOnDelete are those the predecessors
//     give (protect, retain-on-delete);
//   - provider states are returned unchanged (provider-state-removed,
//     provider-state-changed, provider-state-introduced);
//   - the result is one subtree under the registering resource, under its
//     new URN or its prior one (root-missing, two-roots), whose root keeps
//     its parent (root-parent), in the same stack and project
//     (other-stack), with no pending deletes (pending-delete), views
//     (view), custom resources without an ID (no-id) or invalid parents
//     (invalid-parent), each URN's type qualified by its parent's
//     (qualified-type), and every other resource parented within it
//     (outside-subtree, parent-cycle).
//
// The engine alone judges what depends on the rest of the deployment: a
// targeted update, pending operations, an update plan, views or pending
// deletes in the prior state, URNs already registered or claimed by an
// alias in this deployment, references to resources outside the subtree,
// and successors that conflict across a chain of migrations. Each
// migration's result is checked on its own, against the state it was
// given.
package migrations
