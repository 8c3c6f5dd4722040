package main

import (
	"cmp"
	"errors"
	"io"
	"strconv"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

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
// record is given its run. With payloads, each record also holds what its
// call was asked and answered (show -v).
func readLog(r io.Reader, secrets, payloads bool) ([]*record, []problem, *deployment) {
	var recs []*record
	var problems []problem
	var trs []transformSeen
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
			recs = append(recs, newRecord(c, secrets, payloads))
			if c.Kind == callbacks.KindResourceTransform {
				if req, res, err := c.Messages(); err == nil {
					res, _ := res.(*pulumirpc.TransformResponse)
					trs = append(trs, transformOf(c.Line, c.Seq, req.(*pulumirpc.TransformRequest), res))
				}
			}
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
	d.planUpdates(trs)
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

// newRecord is what the command shows of one call; with payloads, what it
// was asked and answered too.
func newRecord(c *replay.Call, secrets, payloads bool) *record {
	r := &record{
		Seq: c.Seq, Line: c.Line, Kind: kindName(c.Kind),
		Method: c.Registration.Method, Registration: c.String(),
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
		if payloads {
			r.Payload = &exchange{RequestMissing: missingNoDecode, AnswerMissing: missingNoDecode}
		}
		return r
	}
	if payloads {
		r.Payload = &exchange{Request: fromMessage(req.ProtoReflect(), secrets)}
		switch {
		case res != nil:
			r.Payload.Answer = fromMessage(res.ProtoReflect(), secrets)
		case c.Pending:
			r.Payload.AnswerMissing = missingPending
		default:
			r.Payload.AnswerMissing = missingFailed
		}
	}
	changeValues(req, res, r.Changes, secrets)
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

// changeValues gives each change the values it names, from the call's
// messages: the request's before, the answer's after (the request's where
// the answer leaves a field out, as the engine reads it), by the paths
// replay.Change gives them.
func changeValues(req, res proto.Message, changes []change, secrets bool) {
	if len(changes) == 0 {
		return
	}
	before, after := map[string]*value{}, map[string]*value{}
	switch req := req.(type) {
	case *pulumirpc.TransformRequest:
		res, _ := res.(*pulumirpc.TransformResponse)
		structValues("properties", req.GetProperties(), cmp.Or(res.GetProperties(), req.GetProperties()), before, after, secrets)
		optionValues(req.GetOptions(), res.GetOptions(), before, after, secrets)
	case *pulumirpc.TransformInvokeRequest:
		res, _ := res.(*pulumirpc.TransformInvokeResponse)
		structValues("args", req.GetArgs(), cmp.Or(res.GetArgs(), req.GetArgs()), before, after, secrets)
		optionValues(req.GetOptions(), res.GetOptions(), before, after, secrets)
	case *pulumirpc.StateMigrationRequest:
		res, _ := res.(*pulumirpc.StateMigrationResponse)
		newState := res.GetNewState()
		if len(newState) == 0 {
			newState = req.GetOldState()
		}
		stateValues(req.GetOldState(), newState, before, after, secrets)
		for k, v := range res.GetSuccessors() {
			after["successors["+k+"]"] = strValue(v)
		}
	}
	attachValues(changes, before, after)
}

// attachValues gives each change its old and new values from the values
// indexed by path, where the change has them.
func attachValues(changes []change, before, after map[string]*value) {
	for i := range changes {
		ch := &changes[i]
		if ch.Old != absent {
			ch.OldValue = before[ch.Path]
		}
		if ch.New != absent {
			ch.NewValue = after[ch.Path]
		}
	}
}

// structValues indexes two property maps under root, as replay compares
// them: as property values, or as plain JSON when either is not.
func structValues(root string, a, b *structpb.Struct, before, after map[string]*value, secrets bool) {
	_, okA := propertyMap(a)
	_, okB := propertyMap(b)
	if okA && okB {
		fromStruct(a, secrets).index(root, before)
		fromStruct(b, secrets).index(root, after)
		return
	}
	fromPlainJSON(a.AsMap(), secrets).index(root, before)
	fromPlainJSON(b.AsMap(), secrets).index(root, after)
}

// optionValues indexes a transform's options before and after: the
// answer's, or the request's where the answer has none.
func optionValues[M proto.Message](req, res M, before, after map[string]*value, secrets bool) {
	if req.ProtoReflect().IsValid() {
		fromMessage(req.ProtoReflect(), secrets).index("options", before)
	}
	switch {
	case res.ProtoReflect().IsValid():
		fromMessage(res.ProtoReflect(), secrets).index("options", after)
	case req.ProtoReflect().IsValid():
		fromMessage(req.ProtoReflect(), secrets).index("options", after)
	}
}

// stateValues indexes a migration's states as replay compares them: each
// resource of the new state at its index there (state[i]), and the old
// resource of the same URN at the same path; an old resource the new
// state lacks at its index in the old.
func stateValues(oldB, newB []byte, before, after map[string]*value, secrets bool) {
	oldX, errOld := decodeJSON(oldB)
	newX, errNew := decodeJSON(newB)
	olds, okOld := oldX.([]any)
	news, okNew := newX.([]any)
	if errOld != nil || errNew != nil || !okOld || !okNew {
		before["state"], after["state"] = fromBytes(oldB, secrets), fromBytes(newB, secrets)
		return
	}
	urnOf := func(x any) (string, bool) {
		m, _ := x.(map[string]any)
		u, ok := m["urn"].(string)
		return u, ok
	}
	at := map[string]int{}
	for i, x := range olds {
		if u, ok := urnOf(x); ok {
			at[u] = i
		}
	}
	kept := map[int]bool{}
	for i, x := range news {
		p := "state[" + strconv.Itoa(i) + "]"
		fromJSON(x, secrets).index(p, after)
		u, _ := urnOf(x)
		if j, ok := at[u]; ok {
			kept[j] = true
			fromJSON(olds[j], secrets).index(p, before)
		}
	}
	for j, x := range olds {
		if !kept[j] {
			fromJSON(x, secrets).index("state["+strconv.Itoa(j)+"]", before)
		}
	}
}

func kindName(k callbacks.Kind) string { return k.String() }

func scrubLog(w io.Writer, r io.Reader) error { return replay.Scrub(w, r) }
