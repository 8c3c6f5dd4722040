// Command callbacklog shows what a Pulumi deployment's callbacks did, from
// the engine's own logs: run it first when a deployment did something
// unexpected.
//
//	pulumi logs decrypt --latest | go run github.com/langhost/callbacks/cmd/callbacklog show -
//
//	PULUMI_DEBUG_GRPC=$PWD/up.log pulumi up
//	go run github.com/langhost/callbacks/cmd/callbacklog show up.log
//	go run github.com/langhost/callbacks/cmd/callbacklog show -html up.html up.log
//	go run github.com/langhost/callbacks/cmd/callbacklog scrub -o testdata/up.log up.log
//
// Usage:
//
//	callbacklog show [-v] [-json] [-html FILE] [-trace FILE] [-secrets] [filters] LOG
//	callbacklog diff [-json] [-secrets] OLD NEW
//	callbacklog scrub [-o FILE] LOG
//
// LOG is a file, or - for standard input. It may come from the real CLI, the
// Automation API (PULUMI_DEBUG_GRPC in the workspace's environment) or
// enginetest, from either form of the log (two entries per call, or one),
// and from a program in any language: only the engine's protocol is read.
// What is not a log is refused with one line saying what it is, before any
// account: a directory, an empty file (PULUMI_DEBUG_GRPC was not set for
// the CLI), a compressed or binary file (gunzip a .gz log first), text of
// which no line is a log entry. A log without callback calls is a log: the
// account says there were none.
//
// # Two logs
//
// show, diff and scrub read either log, and tell which by its content:
//
//   - Pulumi's automatic log, which every pulumi command writes, encrypted,
//     to $PULUMI_HOME/logs; `pulumi logs decrypt --latest` (in the project's
//     directory, the stack selected) or `pulumi logs decrypt FILE` prints it
//     as JSON Lines. The engine writes a line or two about each callback call:
//     a transform's properties before and after it ran, a hook's name and
//     resource and its answer, an error hook's retry decision, a migration's
//     state before and after. The account is built from those lines, and
//     says what they cannot tell: a transform's after line and a hook's
//     answer name no call (a hook's answer names the resource, not the hook),
//     so they are paired with a start only while one such call is running;
//     where several ran at once the outcome is "unknown", the duration "?",
//     and a transform shows what it was given. Durations are between the
//     engine's log lines; the registration of a transform is not in the log
//     ("transform"); hooks' inputs and outputs are not either. An error hook's
//     failed operation, attempt and error are the provider's failures the log
//     shows for the resource. Lines the command does not know are left out.
//     A program's callback servers of this module write their own records
//     into the same log (a start and an end per call, by call id); each call
//     they served is then told from them, exactly: its registration, resource,
//     outcome, error and duration (their own), or "no answer" when the log
//     ends before its end record; a transform's or migration's end record
//     (schema 2) says what it changed, by property path, every secret
//     [secret], and the account shows those changes (at most 32 a call, the
//     note counting the rest), or why the record has none; with
//     CALLBACKS_PULUMI_LOG=payloads set for the program, every end record
//     holds the call's request and, if it answered, its answer, which -v
//     shows, secrets [secret].
//     The engine's lines about those calls are not counted again, and give
//     only an error hook's retry decision, and what a transform or migration
//     changed when its record does not say (schema 1, or payloads too large
//     to hold), where the engine's call is certainly the record's (else a
//     note says so). Calls of other servers (the SDK's own)
//     are still told from the engine's lines. Records of a newer schema are
//     read for what this reader knows, and the account names the schema.
//     A log still encrypted, or one of a command that ran no deployment
//     (pulumi config set), is refused in one line.
//   - The engine's gRPC log (PULUMI_DEBUG_GRPC=FILE), which must be asked for
//     before the deployment: every call's request and answer, paired exactly,
//     hooks' payloads included, in bytes replay can send again.
//
// # The account
//
// show prints a header and a summary (from a gRPC log: the project, stack,
// organization, the CLI's version as its language host gives it and the Go
// SDK's as a source position names it, and each run of the program, preview
// or update, with its start, length, result and first error: that of its
// first provider step that failed, else the program's own; then the log it
// was read from, what that log cannot tell, the time spent in callbacks and,
// from a gRPC log, how the runs' time split between callbacks, provider
// steps and the rest, calls by kind and by outcome, which registrations the
// time went to, the slowest calls). Then, first, every call the log started
// and never answered ("never answered": a hook that hangs, a CLI stopped
// while it waited), callback or provider step, with its resource, its
// registration, the line that started it and how long it had run when the
// log ended (the latest time any entry gives, less its start). Then each run
// under a heading ("== update (log line 17): failed in 2.03s: ...") and in
// it each resource in the order the deployment first called back about it:
// its type, name and URN, and every callback call and provider step about
// it in the order they completed, one row each:
//
//	#seq  +start  kind  registration  outcome  duration  line N
//
// A provider step's row has "-" for #seq, "provider step" for its kind, its
// method and provider ("Create (random)") for its registration, and "ok",
// "failed", "invalid" (Check's failures), "changes" or "no changes" (Diff)
// for its outcome; an error hook's row comes after the failed step it
// answered. A call never answered has the outcome "unanswered", the line
// that started it, and how long it had run. A log that names no run (one
// enginetest wrote) has no run heading; an automatic log gives no runs,
// provider steps or calls never answered, and says so.
//
// The start is after the earliest time the log gives (its first run's
// start, or its first call's); line N is the log line that
// completed the call (in an automatic log, the line that started it, which
// names the resource). A duration the log does not give is "?". A "note:"
// line says what the log leaves uncertain about the call, "given:" what a
// transform whose answer is not known was given. The registration says where the program registered
// the callback: a hook's or error hook's name, "stack transform #1", "stack
// invoke transform #1", "transform #2 of the resource" (its transforms
// option), or "migration #1" (its state migrations). Under a row come what
// the call did: a transform's or migration's changes by property path
// (properties.tags.team, options.protect, state[0].outputs.x) as old → new,
// a hook's refusal, the failed operation, attempt and error an error hook
// saw (its outcome, retry or no retry, is its decision), and the error the
// engine got, if any. Invoke transforms, which are about no resource, come
// last. The outcome words are those of replay.Outcome, and "unknown"
// where an automatic log does not tell.
//
// # Requests and answers
//
// -v shows, under each call and in every view, what the call was asked and
// what it answered: its whole request and its whole answer, as the
// protocol's messages hold them (a transform's type, name, parent,
// properties and options; an invoke transform's token, arguments and
// options; a hook's resource and its old and new inputs, outputs and
// options; an error hook's failed operation and errors, newest first; a
// migration's old state, and its new state and successors). A field at its
// zero value (false, 0, "", none) is left out, as in the protocol's JSON
// mapping, and an answer holds only what the function sent: a transform
// that leaves its properties out keeps the request's. The text account
// prints one line per value, by property path, as it prints changes:
//
//	#1  +0.021s  resource transform  stack transform #1  changed  1.91ms  line 22
//	             properties.prefix  (absent) → "tx"
//	             request:
//	               type                    "random:index/randomPet:RandomPet"
//	               name                    "pet"
//	               custom                  true
//	               parent                  "urn:pulumi:dev::transform::pulumi:pulumi:Stack::transform-dev"
//	               properties.length       2
//	               options.customTimeouts  {}
//	             answer:
//	               properties.length  2
//	               properties.prefix  "tx"
//
// An empty object is {} and an empty array []; a secret is [secret] (with
// -secrets, secret(its value)), a value not yet known [unknown], an asset,
// archive or resource reference asset({...}), archive({...}) or
// resource({...}) with its fields. Where the log does not hold the request
// or the answer the account says why instead ("answer: none: the call
// failed"). Pulumi's automatic log holds a transform's properties before
// and after it ran, with its options as the engine prints them (Go's
// map[key:value] text), a hook's answer and the states before and after a
// chain of migrations, but not a hook's request: the account says so. The
// HTML page shows the same in a call's details, and the trace in its args.
//
// Lines of the log that could not be read (a truncated or corrupt line, a
// payload or logged property value that does not decode, a token no
// registration names) are listed
// at the end with their line numbers and reasons; everything else is still
// shown.
//
// User strings are printed on one line, with control characters escaped.
//
// # What an update would run
//
// A preview calls no resource hook (but those registered to run on dry
// runs). From a gRPC log, the account of each preview ends with what an
// update would run: for each resource the preview registered that binds
// hooks, in the order of its registration, the step an update would take
// and the hooks it would call, in order, each with its moment and the step
// it follows from:
//
//	An update would run (told by this preview's registrations and its provider's Check and Diff):
//	  random:index/randomPet:RandomPet "pet"
//	    urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet
//	    create (log line 8)
//	      before-create  "log-create"  (create: no prior state)
//	      after-create   "log-create"  (create: no prior state)
//	  deletes: cannot tell: which resources the program no longer registers, ...
//
// A resource's hooks are those its registration binds by name, or, where a
// resource transform answered, those of the options the last one left it.
// Its step is read from its provider's calls in the preview, as the engine
// decides it: a Check and no Diff (no prior state): create, which runs
// before-create then after-create; a Diff with no changes: same, which runs
// no hook; with changes: update (before-update, after-update), or replace
// when the Diff names a property that replaces the resource (replaces, or a
// detailed diff's *_REPLACE kind) or the resource's replaceOnChanges covers
// a changed property: the new resource's create hooks, and the replaced
// resource's delete hooks, after them, or before them when the Diff or the
// resource's deleteBeforeReplace says to delete first. A Diff that does not
// say whether anything changed is settled as the engine does, by comparing
// the old inputs with the new, less the properties the resource ignores
// (the account cannot tell where an ignored path is below the top level). A
// failed Check or Diff fails the step before any hook; an import runs none.
// Error hooks are listed as running only if the provider's Create or
// Update fails. A hook a binding names that the run never registered is
// marked: the step would fail.
//
// What the log cannot tell, the account says instead of guessing: the
// replaced resource's delete hooks, which its prior state binds ("?", with
// the names this registration binds); a component's step (it gets no
// provider step: the engine creates it when it has no prior state, updates
// it when its inputs differ from its prior state's, else leaves it the same,
// and runs its after hooks at its RegisterResourceOutputs), so its create
// and update hooks are listed as conditional; a remote component's hooks,
// which the provider's Construct binds; the step of a resource whose Check
// or Diff was never answered; the deletes of resources the program no
// longer registers, and their delete hooks, which only the prior state
// names. A replacement the engine decides without asking the provider (a
// changed provider, a --replace target, replaceWith, deletedWith) makes no
// Diff, and reads as a create. The hooks the program registered
// that no registration of the preview binds are named: an update runs them
// only for deletes whose prior state binds them. An update's own account
// has no such section.
//
// # Filters
//
// -resource GLOB, -kind KIND, -outcome WORD and -run RUN keep only some
// calls and provider steps, in every view. A resource's glob is matched
// against its name, its type and its URN, * standing for any text, slashes
// included, and ? for any one character; a kind is the account's word with
// a dash for the space (resource-hook, provider-step); an outcome and a run
// are the account's words (refused, retry, unanswered; preview, update).
// What a preview says an update would run is of the kind resource-hook and
// of the preview's run, and has no outcome: -outcome keeps none of it, and
// -resource keeps the resources it matches and leaves out the hooks bound
// to none.
// Each flag may be given several times, or with values separated by
// commas, and keeps what any of its values match; the flags together keep
// what all of them keep. The account says it is filtered, beside the log's
// name; a filter that keeps nothing says so on standard error and prints no
// account.
//
// # Secrets
//
// Unless -secrets is given, no form of the account prints a value the log
// marks secret: the values inside every secret of every call's payloads
// (transform properties, invoke arguments, hook inputs and outputs,
// migration states; in an automatic log, every property value any line
// holds, which Pulumi writes with its secrets in plain text) are gathered
// from the whole log first, then hidden as
// "[secret]" in every string the account takes from the log: a changed
// value, a hook's refusal, the error an error hook saw, the error the
// engine got, a resource's name and URN, a hook's name. A secret is hidden
// wherever it is inside a longer string too, as it is and as the account
// quotes it, even when the call that marks it secret comes later in the log.
// A secret shorter than 6 bytes ("dev", "1", "on") is hidden only where a
// whole string (a message, a property's value) is the secret: looked for
// inside longer strings it would blank out parts of names, URNs and messages
// that merely contain it. From a gRPC log, the configuration's secret values
// (the keys LanguageRuntime/Run marks secret) and the secrets inside the
// providers' requests and answers are gathered too, and hidden as well in
// provider steps' errors and in the header (a run's error). Booleans and
// nulls are not looked for. The words
// of the account's own, a kind or an outcome, are never hidden. The same
// holds of the requests and answers -v shows: a secret they mark is
// [secret], a string or number that is a secret whole is shown as a secret,
// and a secret inside a longer string or a key is replaced.
//
// # Exit status
//
//	0  every line of the log was read; a log without callback calls too
//	1  some lines could not be read: the rest is shown, and they are named;
//	   for diff, also: the accounts differ
//	2  a usage error: an unknown command or flag, not one LOG argument
//	3  the log cannot be opened or read or is not a log (see above), or the
//	   file of -html, -trace or -o cannot be written
//	4  writing to standard output (the account, or the scrubbed log) failed
//
// # JSON
//
// -json prints JSON Lines instead. From a gRPC log the first object is
// {"deployment": {...}}, with the fields project, stack, organization, cli,
// sdk (absent when the log does not say), runs ([{"name": "preview" or
// "update", "line": the line that started it, "endLine": the one that
// completed it, "start", "durationNs" (for a run that did not end, how long it
// had run when the log ended), "result": "succeeded", "failed" or "did not end
// in the log", "error": its first error, "programError": the program's own}]),
// unanswered (how many calls were never answered), and timeNs ({"callbacks",
// "provider", "rest", "runs"}: where the runs' time went). Then one object per
// call or provider step: those never answered first, then the others in the
// order of the log, with the fields
//
//	source        the log read: "grpc" or "automatic"
//	run           "preview" or "update": the run the call was made in
//	answered      false for a call the log never answered; absent otherwise
//	seq           the call's order among the log's callback calls, by completion
//	              (in an automatic log, by start); absent for a provider step
//	line          the log line that completed it (that started it, if never
//	              answered)
//	kind          "resource transform", "invoke transform", "resource hook",
//	              "error hook", "state migration" or "provider step"
//	provider      a provider step's {"name": the provider, "method": "Create", ...}
//	registration  {"label": as in the account, "method": the monitor method
//	              that registered it, "name": a hook's name}
//	resource      {"urn", "type", "name"}; absent for invoke transforms, and
//	              "urn" absent when the log does not give it
//	invoke        an invoke transform's function token
//	outcome       the outcome word
//	start         when the call started (RFC 3339), if the log says
//	durationNs    how long it took, in nanoseconds; absent when the log does
//	              not give it
//	changes       [{"path", "old", "new", "oldValue", "newValue"}]: old and new
//	              as printed in the account ("(absent)" for none, "[secret]"
//	              for a secret), oldValue and newValue the same values as
//	              JSON values (below), absent where old or new is "(absent)"
//	              and where the log gives the value only as text (the
//	              engine's lines give options as text; the module's records
//	              give values as text unless they hold the payloads)
//	message       a hook's refusal, or the error an error hook saw
//	attempt       an error hook's attempt, 1 for the first failure
//	operation     the operation an error hook was called for
//	error         the error the engine got from the call
//	given         what a transform whose answer is not known was given
//	note          what the log leaves uncertain about the call
//	request       with -v: what the call was asked, as a JSON value (below):
//	              the request message as an object, its fields by the
//	              protocol's JSON names (properties, options, newInputs,
//	              failedOperation, oldState), a field at its zero value left
//	              out
//	answer        with -v: what the call answered, likewise
//	requestMissing, answerMissing
//	              with -v, in place of request or answer where the log does
//	              not hold it: why ("none: the call failed", "not in this
//	              log: ...")
//
// then, per preview, what an update would run: one object {"wouldRun":
// {...}} per resource that binds hooks, with the fields run ("preview"),
// runLine (the line that started the preview), resource ({"urn", "type",
// "name"}), component (true for a component), step ("create", "update",
// "replace", "replace, deleting first", "same", "import", "fails"; absent
// when the log cannot tell), why, line (the log line it follows from),
// cannotTell, and hooks ([{"moment": "before-create", ..., "after-delete"
// or "on-error", "name" (absent where the log cannot tell which), "step"
// (the step and why), "conditional" (true when it runs only if something
// the log does not settle holds), "note"}]); then one {"wouldRun": {"run",
// "runLine", "unboundHooks": [names], "deletes": "cannot tell: ..."}} for
// what is about no resource. Then one object {"unreadable": {"line",
// "reason"}} per line that could not be read. Empty fields are left out.
//
// A value (oldValue, newValue, and what request and answer hold) is a
// property value mapped to JSON: objects, arrays, numbers, strings,
// booleans and null as themselves; a migration's state as the JSON it is;
// and the values JSON has no type for as objects of one member that names
// their kind: a secret {"secret": "[secret]"} (with -secrets, {"secret":
// its value}), a value not yet known {"unknown": true}, an asset {"asset":
// {"hash", "path", "text", "uri"}}, an archive {"archive": {"hash", "path",
// "uri", "assets"}}, a resource reference {"resource": {"urn", "id",
// "packageVersion"}}, each with the members it has. An object property
// whose only member has one of these names reads the same. An
// automatic log's transform options are the engine's text, a string.
//
// # Timeline
//
// -html FILE also writes one self-contained HTML file (no network, no
// external font or script): the header and the runs, the calls never
// answered in a box above the timeline, then a row per resource under a
// band per run, a bar per call placed by its start and as long as its
// duration, coloured by outcome, with a legend; a provider step is a thinner
// dotted bar, a call never answered a dashed one that runs to the log's end.
// It answers what text answers badly: where the time went, and which
// resources waited on which hook (a thin line joins a resource's first call
// to the end of its last: the gaps along it are waits), with a table of the
// time each registration took. Hovering or clicking a bar shows the call's
// details (with -v, its request and answer by property path, as the text
// account prints them); FILE#call=N opens the page with call N selected.
// Below the timeline, a table per preview says what an update would run:
// a row per resource, with its step and its hooks in order.
//
// # Trace
//
// -trace FILE also writes the calls and the provider steps as a trace in
// the Trace Event Format, which Perfetto (ui.perfetto.dev) and Chrome's
// about://tracing open, for zooming into where the time went:
// {"traceEvents": [...]}, with a process per run of the program, named as
// the account names the run ("update (log line 11)", pid 2 on, in the
// runs' order), and one for the deployment (pid 1: "deployment (LOG)") for
// what the log places in no run (all of it, for a log without runs). In
// each, a lane (a thread, named by a "thread_name" metadata event) per
// resource in the account's order, with "stack-wide" last, and an event per
// call or step on its resource's lane: a complete event ("ph": "X") whose
// "ts" is its start after the first one's and "dur" its duration, both in
// microseconds, named by its kind and registration ("resource hook:
// before-create", "provider step: Create (random)"), with its outcome,
// changes ("path: old → new"), refusal or error, run, log line and order
// ("seq"; a step has "step" and "provider" instead) in "args" (with -v, also
// "request" and "answer" as -json gives them, or "requestMissing" and
// "answerMissing"). A call that starts before the previous call about its
// resource ended goes on another lane of the resource, named with (2), (3),
// since the viewers draw one lane's events nested or not at all. A call
// whose duration the log does not give is an instant event ("ph": "i").
// What a preview says an update would run is an instant event per resource
// ("would run: update", category "would run") on its lane in the preview's
// process, when its step was decided, with the step ("wouldTake") and the
// hooks ("hooks") in "args", and one for the preview ("would run: about no resource") with the
// hooks bound to none and what it cannot tell of deletes.
// Secrets are hidden as in the account.
//
// # Two recordings compared
//
// diff reads two logs (either kind, each as show does) and tells how the
// second deployment's callbacks did otherwise than the first's: resource by
// resource (matched by URN, else by type and name), the calls that appeared
// (+), disappeared (-) or changed (~). Calls are matched by resource, kind
// and registration, the first of a registration about a resource in OLD with
// the first in NEW, the second with the second. A call changed when its
// outcome did ("refused → ok"), what it changed (each property path whose
// change differs is shown as it was, -, and as it is, +), or what the
// account says under it (a hook's refusal, the failure an error hook saw,
// the error the engine got). When calls ran, how long they took, their
// order and their lines in the log are not compared. Calls that did the
// same are not shown; when none differs, diff prints one line saying so.
//
//	--- up-1.jsonl: 6 callback calls about 2 resources
//	+++ up-2.jsonl: 6 callback calls about 2 resources
//	1 changed; 5 the same
//
//	random:index/randomPet:RandomPet "db"
//	  urn:pulumi:dev::replay::random:index/randomPet:RandomPet::db
//	  ~ resource transform  stack transform #1  changed  #2 line 31 → #2 line 31
//	      - properties.keepers  (absent) → {"team": "data"}
//	      + properties.keepers  (absent) → {"team": "storage"}
//
// -json prints one object per call that differs instead, {"diff":
// "appeared", "disappeared" or "changed", "kind", "registration", "resource",
// "old", "new"}, where old and new are the calls as show -json prints them;
// then {"unreadable": {"log": "old" or "new", "line", "reason"}} per line
// that could not be read. Secrets are hidden as show hides them, and a value
// either log marks secret is hidden in both. The exit status is 0 when the
// accounts are the same, 1 when they differ or lines of either log could not
// be read (they are listed at the end), 2, 3 and 4 as for show.
//
// # In review
//
// A recorded log that replay's update mode (CALLBACKS_REPLAY_UPDATE=1)
// rewrote changes by lines of base64. git shows it as its account's change
// once the logs are given a diff driver whose textconv is show, which prints
// the same account for the same log on any machine (the file by its base
// name, times after the log's first call):
//
//	echo '**/testdata/*.jsonl diff=callbacklog' >> .gitattributes
//	git config diff.callbacklog.textconv "callbacklog show"
//
// with callbacklog installed on PATH (go install
// github.com/langhost/callbacks/cmd/callbacklog@latest). git diff, git show
// and git log -p then print the lines of the account that changed, as
//
//	   #1  +0.000s  resource transform  stack transform #1  changed  103.0ms  line 30
//	-               properties.keepers  (absent) → {"team": "platform"}
//	+               properties.keepers  (absent) → {"team": "infra"}
//
// and --no-textconv the bytes. Let the pattern match logs only: a file show
// refuses or cannot read whole (exit status other than 0) makes git stop.
//
// # Scrub
//
// scrub writes the log with every secret value and every configuration
// value replaced by a placeholder, the same for the same value throughout
// the log, so that it can be attached to an issue or committed as test
// data. It writes standard output, or with -o FILE the file FILE, which is
// replaced whole or not at all (through a temporary file in its directory),
// so that FILE may be LOG itself. What is not a log is refused and nothing
// is written.
//
// A gRPC log is scrubbed by replay.Scrub: the secrets inside the callback
// payloads too, and the configuration of the program and of the providers.
// A file is read twice, so that a secret is replaced even before the entry
// that marks it; standard input and a pipe are read once (see
// replay.Scrub).
//
// An automatic log is read twice (what is not a regular file, standard
// input or a pipe, is held in memory for it): first to learn every secret the log marks, wherever it first marks
// it, then to write it, so that a secret is replaced in the lines before
// that one too. A secret is marked by its signature inside a logged
// property value (the pulumiPv... values show decodes), by a secret
// envelope among a line's JSON members, or as a secret in the engine's
// text of a property value (map[Element:map[V:...]]). It is then replaced
// by "[secret N]" in every line, in every form it is in:
//
//   - inside property values, which are decoded, scrubbed and encoded
//     again, so that show still reads them; a secret stays marked secret,
//     with the placeholder as its value;
//   - as text, in messages and members (the engine's lines, the records of
//     this module's servers), as it is, Go-quoted or JSON-escaped;
//   - in base64: a run of base64 that decodes and holds it in its bytes
//     has it replaced there and is encoded again; a run that shows its
//     bytes but does not decode on its own is removed whole
//     ("[scrubbed: base64 holding a secret]").
//
// A secret shorter than 6 bytes is replaced only where a whole string is
// the secret, as show hides it. The values of a provider's configuration
// are replaced by "[config N]" in the lines about it: its CheckConfig,
// DiffConfig and Configure, and those about the provider's own resource,
// whose inputs are its configuration; its secret values are secrets, and
// are replaced everywhere. The program's configuration is not in the log
// (the engine writes how many values there are, not what they are), but
// where the program puts a value into a resource's inputs: a secret is
// then marked, and replaced; a value that is not secret is an input like
// any other, and stays. What the log never marks secret (a value a program
// logs without marking it) cannot be told from any other text, and stays.
//
// The placeholders are replay.Scrub's, numbered by first appearance, the
// same value the same placeholder throughout the log. A line that is not
// JSON is removed whole, and its placeholder names it. Times, levels
// and verbosities are kept, and a line with nothing to replace is copied
// as it was.
package main
