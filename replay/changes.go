package replay

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks/internal/changes"
)

// Change is one value a call changed: at Path, Old became New.
//
// Paths start with what changed: "properties.tags.team" and
// "options.protect" for a resource transform, "args.x" for an invoke
// transform, "state[0].outputs.x" (the index in the new state, or in the
// old one for a resource the migration removed) and "successors[URN]" for a
// state migration, "retry" and "error" for hooks. A key that is not a plain
// identifier is quoted: properties["a.b"]; an index is in brackets:
// properties.items[0]. [IgnorePaths] takes paths in the same form.
//
// Old and New are the values rendered in a JSON-like form (strings quoted);
// "" means absent. A secret value is "[secret]" unless ShowSecrets was
// asked for (then secret("…") where it is not a secret on both sides); two
// different secrets are "[secret]" and "[another secret]"; an unknown value
// is "[unknown]".
type Change struct {
	Path     string
	Old, New string
}

// Secrets says whether [Call.Changes] shows secret values. The zero value
// is HideSecrets.
type Secrets int

const (
	// HideSecrets shows every secret value as "[secret]".
	HideSecrets Secrets = iota
	// ShowSecrets shows secret values in full, as secret("…").
	ShowSecrets
)

// Changes returns what the call changed: the properties (then the options)
// a transform changed, each in path order (an option at its zero value
// counts as absent, and an output value as the value it holds; old is the
// request, new the response), the state a migration changed, an error
// hook's retry decision (always one Change, "retry"), a hook's refusal
// ("error"). A failed call, or payloads that do not decode, changed
// nothing. Secret values are shown as "[secret]" unless show is
// ShowSecrets.
func (c *Call) Changes(show Secrets) []Change {
	secrets := show == ShowSecrets
	if c.Err != "" {
		return nil
	}
	req, res, err := c.Messages()
	if err != nil || res == nil {
		return nil
	}
	row := rowOf(c.Kind)
	if row.changes != nil {
		return row.changes(res)
	}
	return diffResponses(req, row.identity(req), res, secrets)
}

// Outcome is how a call ended, in a word, as [Call.Outcome] sums it up.
type Outcome string

// The outcomes of a call. A Pending call is OutcomeUnanswered, a call the
// engine got an error from is OutcomeFailed; otherwise the word depends on
// the kind.
const (
	// OutcomeUnanswered: the log holds no answer to the call (Pending).
	OutcomeUnanswered Outcome = "unanswered"
	// OutcomeFailed: the engine got an error, or an error hook answered
	// with one, or the payloads do not decode.
	OutcomeFailed Outcome = "failed"
	// OutcomeChanged: a transform changed its properties or options.
	OutcomeChanged Outcome = "changed"
	// OutcomeUnchanged: a transform or a state migration changed nothing.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeOK: a resource hook let the step go on.
	OutcomeOK Outcome = "ok"
	// OutcomeRefused: a resource hook refused the step.
	OutcomeRefused Outcome = "refused"
	// OutcomeRetry: an error hook asked for the failed step again.
	OutcomeRetry Outcome = "retry"
	// OutcomeNoRetry: an error hook let the failure stand.
	OutcomeNoRetry Outcome = "no retry"
	// OutcomeMigrated: a state migration changed the state.
	OutcomeMigrated Outcome = "migrated"
)

// Outcome sums the call up in a word (each [Outcome] constant says when),
// and the message that goes with it: the error of a failed call (an error
// hook's, if it answered with one), a refusing hook's.
func (c *Call) Outcome() (word Outcome, message string) {
	if c.Pending {
		return OutcomeUnanswered, ""
	}
	if c.Err != "" {
		return OutcomeFailed, c.Err
	}
	_, res, err := c.Messages()
	if err != nil {
		return OutcomeFailed, err.Error()
	}
	if res == nil {
		return OutcomeFailed, ""
	}
	row := rowOf(c.Kind)
	switch {
	case row.outcome != nil:
		return row.outcome(res)
	case len(c.Changes(HideSecrets)) == 0:
		return OutcomeUnchanged, ""
	}
	return row.changed, ""
}

// diffResponses compares two responses a and b of the same kind, answers to
// req: a transform's properties and options (a field a response leaves out
// keeps the request's), a migration's new state and successors, a hook's
// error and retry decision. Replaying uses it for "recorded answer against
// current answer"; Changes, with a response that changes nothing as a.
func diffResponses(req, a, b proto.Message, secrets bool) []Change {
	s := changes.New(changes.Bounds{}, secrets)
	if row := rowOfRequest(req); row != nil {
		row.diff(s, req, a, b)
	}
	found, _ := s.Changes()
	var out []Change
	for _, c := range found {
		out = append(out, Change(c))
	}
	return out
}

func orBytes(b, dflt []byte) []byte {
	if len(b) == 0 {
		return dflt
	}
	return b
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}
