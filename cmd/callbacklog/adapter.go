package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/replay"
)

// readLog reads a log with replay.Read and turns each call into the record
// the command shows. Lines that could not be read are returned as problems,
// in the order they came. Unless secrets, every secret value the log holds
// is then hidden in every string of the records and problems: a secret may
// be marked as such only in a call after one whose message holds it, so the
// whole log is read first.
//
// The deployment around the calls (its runs, who ran it, the providers'
// steps) is read from the same bytes as they pass to replay.Read, and each
// record is given its run.
func readLog(r io.Reader, secrets bool) ([]*record, []problem, *deployment) {
	var recs []*record
	var problems []problem
	found := secretSet{}
	sc := newScanner(found)
	if secrets {
		sc.found = nil
	}
	for c, err := range replay.Read(io.TeeReader(r, sc)) {
		if err != nil {
			problems = append(problems, toProblem(err))
		}
		if c != nil {
			recs = append(recs, newRecord(c, secrets))
			if !secrets {
				found.collect(c)
			}
		}
	}
	d := sc.finish()
	for _, rec := range recs {
		d.place(rec)
	}
	for _, rec := range d.Steps {
		d.place(rec)
	}
	if !secrets && len(found) > 0 {
		red := found.redactor()
		red.redact(recs, problems)
		red.redact(d.Steps, nil)
		red.deployment(d)
	}
	return recs, problems, d
}

func toProblem(err error) problem {
	var le *replay.LineError
	if errors.As(err, &le) {
		return problem{Line: le.Line, Reason: le.Err.Error()}
	}
	return problem{Reason: err.Error()}
}

func orAbsent(v string) string {
	if v == "" {
		return absent
	}
	return v
}

// shown is what replay's Changes is asked to show of secrets: all of them
// with -secrets, none without.
func shown(secrets bool) replay.Secrets {
	if secrets {
		return replay.ShowSecrets
	}
	return replay.HideSecrets
}

// newRecord is what the command shows of one call.
func newRecord(c *replay.Call, secrets bool) *record {
	r := &record{
		Seq: c.Seq, Line: c.Line, Kind: kindName(c.Kind),
		Method: c.Registration.Method, Registration: registration(c),
		URN: string(c.URN), Type: c.Type, Name: c.Name, Invoke: c.Invoke,
		Err: c.Err, Start: c.Start, Duration: c.Duration, Pending: c.Pending,
	}
	word, _ := c.Outcome()
	r.Outcome = string(word)
	if m := c.Registration.Method; m == "RegisterResourceHook" || m == "RegisterErrorHook" {
		r.HookName = c.Registration.Name
	}
	// A hook's refusal and an error hook's decision are shown as such, not
	// as changes.
	if c.Kind != callbacks.KindResourceHook && c.Kind != callbacks.KindErrorHook {
		for _, ch := range c.Changes(shown(secrets)) {
			r.Changes = append(r.Changes, change{Path: ch.Path, Old: orAbsent(ch.Old), New: orAbsent(ch.New)})
		}
	}
	req, res, err := c.Messages()
	if err != nil {
		if r.Err == "" {
			r.Err = "the payload does not decode: " + err.Error()
		}
		return r
	}
	switch req := req.(type) {
	case *pulumirpc.TransformRequest:
		// The resource, when the log gives no URN for it (the stack's own
		// registration, say).
		if r.Type == "" && r.Name == "" {
			r.Type, r.Name = req.GetType(), req.GetName()
		}
	case *pulumirpc.ErrorHookRequest:
		r.Op, r.Attempt = req.GetFailedOperation(), len(req.GetErrors())
		if len(req.GetErrors()) > 0 {
			r.Message = req.GetErrors()[0] // newest first
		}
	}
	switch res := res.(type) {
	case *pulumirpc.ResourceHookResponse:
		r.Message = res.GetError()
	case *pulumirpc.ErrorHookResponse:
		if e := res.GetError(); e != "" && r.Err == "" {
			r.Err = e
		}
	}
	return r
}

func kindName(k callbacks.Kind) string { return k.String() }

// registration says where the program registered the call's token, in the
// words a program's author uses.
func registration(c *replay.Call) string {
	reg := c.Registration
	switch reg.Method {
	case "RegisterStackTransform":
		return fmt.Sprintf("stack transform #%d", reg.Order)
	case "RegisterStackInvokeTransform":
		return fmt.Sprintf("stack invoke transform #%d", reg.Order)
	case "RegisterResourceHook", "RegisterErrorHook":
		return reg.Name
	case "RegisterResource":
		what := "transform"
		if c.Kind == callbacks.KindStateMigration {
			what = "migration"
		}
		if reg.Resource == "" || reg.Resource == c.URN {
			if what == "migration" {
				return fmt.Sprintf("migration #%d", reg.Order)
			}
			return fmt.Sprintf("transform #%d of the resource", reg.Order)
		}
		return fmt.Sprintf("%s #%d of %s", what, reg.Order, reg.Resource.Name())
	case "":
		return "unregistered token " + shortToken(c.Token)
	}
	return strings.TrimPrefix(reg.Method, "Register") + " " + reg.Name
}

func shortToken(t string) string {
	if len(t) > 8 {
		return t[:8] + "…"
	}
	return t
}

func scrubLog(w io.Writer, r io.Reader) error { return replay.Scrub(w, r) }
