package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/calllog"
)

// This file reads the records this module's callback servers write into
// the automatic log (internal/calllog): a record when a call's function
// starts and one when the call ends, paired by a call id. A call they
// record is told from them, exactly: from schema 2, the end record of a
// transform or a migration says what it changed, and with payloads asked
// for, every end record holds the call's request and answer. The engine's
// lines about the same call are then left out, but for what they alone
// tell (whether an error hook asked for a retry; what a transform or a
// migration changed, for records of schema 1), which is taken only where
// the engine's call and the record's are certainly the same call.

// missingModule is why a call told from the module's records alone shows
// no request or answer.
const missingModule = "not in this log: the module's records hold no payload (CALLBACKS_PULUMI_LOG=payloads puts them there), and no line of the engine's is certainly about this call"

// modCall is a call the module's records show.
type modCall struct {
	rec        *record
	id         string
	started    bool
	ended      bool
	start, end time.Time // of the records
	duration   time.Duration
	failedOpen bool
	errType    string
	listed     bool // the end record lists what the call changed
	told       bool // it lists it, or says why it does not
	payloads   bool // the end record holds the call's request or answer
	untold     bool // a transform or migration that did not fail, and its record is silent on what it changed
}

// moduleAttrs are the attributes of a module record, read as the record
// holds them: strings, numbers and bools, by name.
type moduleAttrs map[string]any

func (m moduleAttrs) str(k string) string {
	s, _ := m[k].(string)
	return s
}

func (m moduleAttrs) num(k string) (float64, bool) {
	switch v := m[k].(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

func (m moduleAttrs) flag(k string) bool {
	b, _ := m[k].(bool)
	return b
}

// moduleLine takes a line whose message is a module record's, and reports
// whether it is one (its module attribute names this module).
func (a *autoReader) moduleLine(n int, line []byte, e autoEntry) bool {
	var m moduleAttrs
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if d.Decode(&m) != nil || m.str(calllog.AttrModule) != calllog.Module {
		return false
	}
	if s, ok := m.num(calllog.AttrSchema); ok && int(s) > calllog.Schema && int(s) > a.info.newerSchema {
		a.info.newerSchema = int(s)
	}
	id := m.str(calllog.AttrCallID)
	if id == "" {
		a.problem(n, "a record of %s names no call (%s)", calllog.Module, calllog.AttrCallID)
		return true
	}
	c := a.modByID[id]
	if c == nil {
		c = &modCall{id: id, rec: &record{Line: n, Payload: &exchange{RequestMissing: missingModule, AnswerMissing: missingModule}}}
		a.modByID[id] = c
		a.mods = append(a.mods, c)
	}
	r := c.rec
	kind := strings.ReplaceAll(m.str(calllog.AttrKind), "_", " ")
	if kind == "" || kind == "unknown" {
		kind = "unknown callback"
	}
	r.Kind = kind
	if v := m.str(calllog.AttrName); v != "" {
		r.Registration = v
	}
	if r.Registration == "" {
		r.Registration = map[string]string{
			callbacks.KindResourceTransform.String(): "transform", callbacks.KindInvokeTransform.String(): "invoke transform",
			callbacks.KindStateMigration.String(): "migration",
		}[kind]
		if r.Registration == "" {
			r.Registration = "(a registration the record does not name)"
		}
	}
	if kind == callbacks.KindResourceHook.String() || kind == callbacks.KindErrorHook.String() {
		r.HookName = m.str(calllog.AttrName)
	}
	if kind == callbacks.KindInvokeTransform.String() {
		r.Invoke = m.str(calllog.AttrType)
	} else {
		r.URN, r.Type, r.Name = m.str(calllog.AttrURN), m.str(calllog.AttrType), m.str(calllog.AttrResName)
		if u := resource.URN(r.URN); u.IsValid() {
			if r.Type == "" {
				r.Type = string(u.Type())
			}
			if r.Name == "" {
				r.Name = u.Name()
			}
		}
	}
	if v, ok := m.num(calllog.AttrAttempt); ok {
		r.Attempt = int(v)
	}
	switch e.Msg {
	case calllog.StartedBody:
		if !c.started {
			c.started, c.start, r.Line = true, e.Time, n
		}
	case calllog.FinishedBody:
		c.ended, c.end = true, e.Time
		if ms, ok := m.num(calllog.AttrDurationMS); ok {
			c.duration = time.Duration(ms * float64(time.Millisecond))
		}
		c.failedOpen, c.errType = m.flag(calllog.AttrFailedOpen), m.str(calllog.AttrErrorType)
		a.modulePayloads(n, c, m)
		switch m.str(calllog.AttrOutcome) {
		case "ok":
			r.Outcome = "ok"
			switch kind {
			case callbacks.KindResourceTransform.String(), callbacks.KindInvokeTransform.String(), callbacks.KindStateMigration.String():
				a.moduleChanges(n, c, m)
				c.untold = !c.told
			}
		case "error":
			r.Outcome = "failed"
			msg := m.str(calllog.AttrError)
			switch {
			case c.failedOpen:
				r.Outcome, r.Err = "failed open", msg
				r.Note = "it failed open: the engine was answered as if it had not been called"
			case c.errType == "response_error" && kind == callbacks.KindResourceHook.String():
				r.Outcome, r.Message = "refused", msg
			default:
				r.Err = msg
				if c.errType != "" && c.errType != "response_error" {
					r.Err = c.errType + ": " + msg
				}
			}
		default:
			r.Outcome = "unknown"
			r.NoDuration = true
			r.Note = fmt.Sprintf("its record's outcome (%q) is not one this reader knows", m.str(calllog.AttrOutcome))
		}
	}
	return true
}

// moduleChanges reads what the end record m of a call that did not fail
// says the call changed: its changes, or why it has none (an empty answer)
// or records none (payloads too large to hold).
func (a *autoReader) moduleChanges(n int, c *modCall, m moduleAttrs) {
	r := c.rec
	note := m.str(calllog.AttrChangesNote)
	text, has := m[calllog.AttrChanges].(string)
	if !has {
		c.told, r.Note = note != "", note
		return
	}
	var changes []calllog.Change
	if err := json.Unmarshal([]byte(text), &changes); err != nil {
		a.problem(n, "the changes of the record of call %s do not decode: %v", c.id, err)
		return
	}
	c.told, c.listed = true, true
	r.Changes = nil
	for _, ch := range changes {
		r.Changes = append(r.Changes, change{Path: ch.Path, Old: orAbsent(ch.Old), New: orAbsent(ch.New)})
	}
	payloadValues(m, r.Changes, a.secrets)
	r.Outcome = "unchanged"
	if len(r.Changes) > 0 {
		r.Outcome = "changed"
		if r.Kind == callbacks.KindStateMigration.String() {
			r.Outcome = "migrated"
		}
	}
	if left, ok := m.num(calllog.AttrChangesLeftOut); ok && left > 0 {
		word := "changes"
		if left == 1 {
			word = "change"
		}
		r.Note = fmt.Sprintf("%d more %s not shown: its record holds a bounded number", int(left), word)
	}
}

// payloadValues gives a call's changes the old and new values -json
// types, where its end record m holds its request and answer (with
// payloads asked for): read back into the call's messages, they are
// indexed as the gRPC log's are.
func payloadValues(m moduleAttrs, changes []change, secrets bool) {
	req, res := calllog.Messages(m.str(calllog.AttrKind))
	if req != nil && fromPayloadJSON(m.str(calllog.AttrRequest), req) && fromPayloadJSON(m.str(calllog.AttrAnswer), res) {
		changeValues(req, res, changes, secrets)
	}
}

// fromPayloadJSON decodes into msg a request or an answer as a record
// holds it (calllog.PayloadJSON: the protocol's JSON form, a migration's
// state as the JSON it holds, which goes back into its bytes field).
func fromPayloadJSON(text string, msg proto.Message) bool {
	var fields map[string]json.RawMessage
	if text == "" || json.Unmarshal([]byte(text), &fields) != nil {
		return false
	}
	for _, f := range []string{"oldState", "newState"} {
		if state, ok := fields[f]; ok {
			fields[f], _ = json.Marshal(base64.StdEncoding.EncodeToString(state))
		}
	}
	b, err := json.Marshal(fields)
	return err == nil && protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, msg) == nil
}

// modulePayloads reads the request and the answer the end record m holds,
// with payloads asked for.
func (a *autoReader) modulePayloads(n int, c *modCall, m moduleAttrs) {
	read := func(attr string) *value {
		text, ok := m[attr].(string)
		if !ok {
			return nil
		}
		x, err := decodeJSON([]byte(text))
		if err != nil {
			a.problem(n, "the %s of the record of call %s does not decode: %v", strings.TrimPrefix(attr, "callbacks."), c.id, err)
			return nil
		}
		return fromJSON(x, a.secrets)
	}
	req, ans := read(calllog.AttrRequest), read(calllog.AttrAnswer)
	if req == nil && ans == nil {
		return
	}
	c.payloads = true
	missing := m.str(calllog.AttrPayloadNote)
	if missing == "" {
		missing = missingFailed
	}
	p := &exchange{Request: req, Answer: ans}
	if req == nil {
		p.RequestMissing = missing
	}
	if ans == nil {
		p.AnswerMissing = missing
	}
	c.rec.Payload = p
}

// mergeModule puts the calls the module's records show among the calls
// the engine's lines show, leaving out each engine call a record covers,
// and takes from the engine's call what only it tells where the two are
// certainly the same call.
func (a *autoReader) mergeModule() {
	if len(a.mods) == 0 {
		return
	}
	for _, c := range a.mods {
		r := c.rec
		switch {
		case c.ended:
			r.Duration = c.duration
			r.Start = c.start
			if !c.started {
				r.Start = c.end.Add(-c.duration)
			}
		default:
			r.Start = c.start
			r.Outcome, r.NoDuration = "no answer", true
			r.Note = fmt.Sprintf("the log ended before it answered: it had run for %s by the log's last line",
				duration(a.last.Sub(c.start)))
		}
	}

	// The engine's calls each record covers: of the same kind and about
	// the same resource (or function), and unless certain, by order.
	dropped := map[*record]bool{}
	same := func(r, e *record) bool {
		if r.Kind != e.Kind {
			return false
		}
		switch r.Kind {
		case callbacks.KindInvokeTransform.String():
			return r.Invoke == e.Invoke
		case callbacks.KindResourceTransform.String():
			return r.Type == e.Type && r.Name == e.Name
		case callbacks.KindResourceHook.String(), callbacks.KindErrorHook.String():
			return r.URN == e.URN && (e.HookName == "" || e.HookName == r.HookName)
		}
		return r.URN == e.URN
	}
	// The engine's lines and the module's records are certainly about the
	// same call when the engine paired its lines with certainty, and the
	// call is the only one of its sort on either side, or the engine's
	// lines bracket the record's, and no other's (the engine writes its
	// line, calls, and writes the answer; the records' times are the
	// program's clock and the lines' the engine's, which need not agree
	// to the millisecond, so this seldom decides).
	known := func(e *record) bool { return !e.NoDuration && e.Outcome != "unknown" }
	brackets := func(e *record, c *modCall) bool {
		return c.started && c.ended && known(e) && !e.Start.After(c.start) && !e.Start.Add(e.Duration).Before(c.end)
	}
	engineOf := func(c *modCall) (all, inside []*record) {
		for _, e := range a.recs {
			if !dropped[e] && same(c.rec, e) {
				all = append(all, e)
				if brackets(e, c) {
					inside = append(inside, e)
				}
			}
		}
		return all, inside
	}
	alike := func(e *record) (n, inside int) {
		for _, o := range a.mods {
			if same(o.rec, e) {
				n++
				if brackets(e, o) {
					inside++
				}
			}
		}
		return n, inside
	}
	for _, c := range a.mods {
		all, inside := engineOf(c)
		if len(all) == 0 {
			a.noEngineLines(c)
			continue
		}
		e, certain := all[0], false
		if n, _ := alike(e); len(all) == 1 && n == 1 {
			certain = known(e)
		} else if len(inside) == 1 {
			if _, in := alike(inside[0]); in == 1 {
				e, certain = inside[0], true
			}
		}
		dropped[e] = true
		a.fromEngine(c, e, certain)
	}
	kept := slices.DeleteFunc(slices.Clone(a.recs), func(r *record) bool { return dropped[r] })
	a.info.moduleCalls, a.info.engineCalls = len(a.mods), len(kept)
	for _, c := range a.mods {
		if c.untold {
			a.info.moduleUntold++
		}
		if c.payloads {
			a.info.modulePayloads++
		}
	}
	for _, c := range a.mods {
		kept = append(kept, c.rec)
	}
	// In the order the calls started: the module's records reach the log
	// in batches, after the engine's lines of the same moment.
	slices.SortStableFunc(kept, func(x, y *record) int { return x.Start.Compare(y.Start) })
	for i, r := range kept {
		r.Seq = i + 1
	}
	a.recs = kept
}

// fromEngine takes from the engine's call e, which the record's call c
// covers, what only the engine's lines tell: only if certain is it the same
// call.
func (a *autoReader) fromEngine(c *modCall, e *record, certain bool) {
	r := c.rec
	if certain && r.URN == "" {
		r.URN = e.URN // a transform's, which the engine's line makes from the parent's
	}
	if certain && e.Payload != nil && !c.payloads {
		r.Payload = e.Payload
	}
	if r.Kind == callbacks.KindErrorHook.String() {
		// What the engine had seen fail: the provider's lines about the
		// resource, whichever call this is.
		r.Op, r.Message = e.Op, e.Message
	}
	if !c.ended || r.Outcome != "ok" {
		return
	}
	switch r.Kind {
	case callbacks.KindResourceTransform.String(), callbacks.KindInvokeTransform.String(), callbacks.KindStateMigration.String():
		if c.listed {
			return
		}
		if !certain {
			if !c.told {
				r.Note = "what it changed is not shown: the engine's lines about it cannot be told with certainty from those about another call"
			}
			return
		}
		r.Changes = e.Changes
		r.Outcome = "unchanged"
		if len(r.Changes) > 0 {
			r.Outcome = "changed"
			if r.Kind == callbacks.KindStateMigration.String() {
				r.Outcome = "migrated"
			}
		}
		r.Note = e.Note
	case callbacks.KindErrorHook.String():
		if !certain {
			r.Note = "whether it asked for a retry is not shown: the engine's lines about it cannot be told with certainty from those about another call"
			return
		}
		r.Outcome = e.Outcome
	}
}

// noEngineLines notes what a call the engine's lines do not show cannot
// tell.
func (a *autoReader) noEngineLines(c *modCall) {
	r := c.rec
	if !c.ended || r.Outcome != "ok" {
		return
	}
	switch r.Kind {
	case callbacks.KindResourceTransform.String(), callbacks.KindInvokeTransform.String(), callbacks.KindStateMigration.String():
		if !c.told {
			r.Note = "what it changed is not shown: the log has no line of the engine's about it"
		}
	case callbacks.KindErrorHook.String():
		r.Note = "whether it asked for a retry is not shown: the log has no line of the engine's about it"
	}
}

// origin is the source an account read from the automatic log, and what
// it cannot tell: with the module's records, whose call is whose and each
// call's registration are known, for the calls they cover.
func (info autoInfo) origin() origin {
	if info.moduleCalls == 0 && info.newerSchema == 0 {
		return fromAuto
	}
	o := origin{Key: fromAuto.Key, Text: fromAuto.Text}
	if info.moduleCalls == 0 {
		o.Cannot = slices.Clone(fromAuto.Cannot)
	}
	if info.moduleCalls > 0 {
		o.Text += fmt.Sprintf(", with the records of %s: %s from its records", calllog.Module,
			plural(info.moduleCalls, "call", "calls"))
		if info.engineCalls > 0 {
			o.Text += fmt.Sprintf(", %s from the engine's lines only", plural(info.engineCalls, "call", "calls"))
		}
	}
	if info.engineCalls > 0 {
		o.Cannot = append(o.Cannot,
			"of the calls no record of the module covers: their times are the engine's log lines', "+
				"where they were registered (a transform is \"transform\"), and which answer is whose when calls of one kind ran at once (\"unknown\")")
	}
	if info.moduleCalls > 0 && info.modulePayloads == 0 {
		o.Cannot = append(o.Cannot, "a hook's inputs and outputs (only its name, resource and answer)")
	}
	if info.moduleCalls > 0 {
		what := "whether an error hook asked for a retry"
		if info.moduleUntold > 0 {
			what = "what a transform or migration changed (records of schema 1), and " + what
		}
		o.Cannot = append(o.Cannot, what+", unless the engine's lines about the call are certainly its (else its note says so)")
	}
	if info.newerSchema > 0 {
		o.Cannot = append(o.Cannot, fmt.Sprintf("what the module's records of schema %d add to schema %d, "+
			"the newest this reader knows: it read what schema %d says", info.newerSchema, calllog.Schema, calllog.Schema))
	}
	return o
}
