package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/calllog"
)

// ml is one line of a constructed automatic log: the engine's message, or
// (with id) one of the module's records; at is its time in milliseconds
// after the log's start.
type ml struct {
	at    int
	msg   string            // the engine's line, if id is ""
	id    string            // the module's record of this call
	end   bool              // the finished record, else the started one
	attrs map[string]any    // the record's attributes besides the common ones
	call  map[string]string // the call's attributes (kind, name, resource)
}

// modLog writes lines as `pulumi logs decrypt` prints them, after a line
// that shows a deployment.
func modLog(tb testing.TB, lines ...ml) string {
	tb.Helper()
	var b strings.Builder
	base := time.Date(2026, 11, 29, 9, 44, 21, 0, time.UTC)
	lines = append([]ml{{msg: "deploymentExecutor.Execute(...): starting"}}, lines...)
	for _, l := range lines {
		e := map[string]any{"level": "INFO", "msg": l.msg, "v": 5,
			"time": base.Add(time.Duration(l.at) * time.Millisecond).Format(time.RFC3339Nano)}
		if l.id != "" {
			e = map[string]any{"level": "INFO", "msg": "callbacks: call started", "callbacks.call_id": l.id,
				"callbacks.module": "github.com/langhost/callbacks", "callbacks.schema": 1, "time": e["time"]}
			if l.end {
				e["msg"] = "callbacks: call finished"
			}
			for k, v := range l.call {
				e[k] = v
			}
			for k, v := range l.attrs {
				e[k] = v
			}
			if e["callbacks.outcome"] == "error" {
				e["level"] = "WARN"
			}
		}
		line, err := json.Marshal(e)
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func hookCall(name string) map[string]string {
	return map[string]string{"pulumi.callback.kind": "resource_hook", "pulumi.callback.name": name,
		"pulumi.resource.urn": petURN, "pulumi.resource.name": "pet", "pulumi.resource.type": "random:index/randomPet:RandomPet"}
}

func transformCall(name, resName string) map[string]string {
	return map[string]string{"pulumi.callback.kind": "resource_transform", "pulumi.callback.name": name,
		"pulumi.resource.name": resName, "pulumi.resource.type": "random:index/randomPet:RandomPet"}
}

func ended(ms float64) map[string]any {
	return map[string]any{"callbacks.outcome": "ok", "callbacks.duration_ms": ms, "rpc.response.status_code": "OK"}
}

func failedWith(ms float64, typ, msg string) map[string]any {
	return map[string]any{"callbacks.outcome": "error", "callbacks.duration_ms": ms, "error.type": typ, "callbacks.error": msg}
}

func readModLog(t *testing.T, log string) ([]*record, autoInfo) {
	t.Helper()
	recs, problems, info := readAutoLog(strings.NewReader(log), false)
	for _, p := range problems {
		t.Errorf("line %d: %s", p.Line, p.Reason)
	}
	return recs, info
}

// TestAutoLogModuleRecords: each call the module recorded is told once,
// from its records, paired by call id even as they interleave, with the
// engine's lines about it left out but for what a transform changed and
// whether an error hook asked for a retry.
func TestAutoLogModuleRecords(t *testing.T) {
	small := map[string]any{"length": 2.0}
	log := modLog(t,
		ml{at: 1, msg: before(t, "pet", small)},
		ml{at: 2, id: "a-1", call: transformCall("tag", "pet")},
		ml{at: 3, id: "a-1", end: true, call: transformCall("tag", "pet"), attrs: ended(0.5)},
		ml{at: 4, msg: after(t, map[string]any{"length": 2.0, "prefix": "tx"}, "map[custom_timeouts:map[]]")},
		// Two hooks of one resource at once, answered in the other order.
		ml{at: 10, msg: `calling hook "audit" for urn ` + petURN},
		ml{at: 10, msg: `calling hook "before-create" for urn ` + petURN},
		ml{at: 11, id: "a-2", call: hookCall("audit")},
		ml{at: 12, id: "a-3", call: hookCall("before-create")},
		ml{at: 13, id: "a-3", end: true, call: hookCall("before-create"), attrs: ended(1.25)},
		ml{at: 14, msg: `ResourceHook pet returned ""`},
		ml{at: 20, id: "a-2", end: true, call: hookCall("audit"), attrs: failedWith(9, "response_error", "audit trail unavailable")},
		ml{at: 21, msg: `ResourceHook pet returned "audit trail unavailable"`},
		ml{at: 30, msg: "Provider[random, 0x1].Create(" + petURN + ") failed: throttled"},
		ml{at: 31, msg: `calling error hook "retry" for urn ` + petURN},
		ml{at: 32, id: "a-4", call: map[string]string{"pulumi.callback.kind": "error_hook", "pulumi.callback.name": "retry",
			"pulumi.resource.urn": petURN}, attrs: map[string]any{"pulumi.callback.attempt": 1}},
		ml{at: 33, id: "a-4", end: true, call: map[string]string{"pulumi.callback.kind": "error_hook", "pulumi.callback.name": "retry",
			"pulumi.resource.urn": petURN}, attrs: ended(0.75)},
		ml{at: 34, msg: `ErrorHook pet returned "", retry=true`},
		ml{at: 40, msg: `calling hook "after-create" for urn ` + petURN},
		ml{at: 41, id: "a-5", call: hookCall("after-create")},
		ml{at: 42, id: "a-5", end: true, call: hookCall("after-create"), attrs: failedWith(3, "timeout", "the hook took too long")},
		ml{at: 43, msg: `ResourceHook "pet" call error: the hook took too long`},
		ml{at: 50, msg: `calling hook "after-create" for urn ` + petURN},
		ml{at: 51, id: "a-6", call: hookCall("after-create")},
		ml{at: 52, id: "a-6", end: true, call: hookCall("after-create"),
			attrs: map[string]any{"callbacks.outcome": "error", "callbacks.duration_ms": 2, "error.type": "panic",
				"callbacks.error": "it panicked", "pulumi.callback.failed_open": true}},
		ml{at: 53, msg: `ResourceHook pet returned ""`},
	)
	recs, info := readModLog(t, log)
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource transform tag changed",
		"pet: resource hook audit refused",
		"pet: resource hook before-create ok",
		"pet: error hook retry retry",
		"pet: resource hook after-create failed",
		"pet: resource hook after-create failed open",
	})
	if len(recs) != 6 {
		return
	}
	for i, want := range []time.Duration{500 * time.Microsecond, 9 * time.Millisecond, 1250 * time.Microsecond, 750 * time.Microsecond, 3 * time.Millisecond} {
		if recs[i].Duration != want || recs[i].NoDuration {
			t.Errorf("%s: duration %v (given %v), want the record's %v", shape(recs[i]), recs[i].Duration, !recs[i].NoDuration, want)
		}
	}
	if fmt.Sprint(recs[0].Changes) != `[{properties.prefix (absent) "tx"}]` {
		t.Errorf("the transform changed %v, want what the engine's lines show", recs[0].Changes)
	}
	if recs[1].Message != "audit trail unavailable" || recs[4].Err != "timeout: the hook took too long" {
		t.Errorf("the refusal is %q and the failure %q", recs[1].Message, recs[4].Err)
	}
	if r := recs[3]; r.Attempt != 1 || r.Op != "create" || r.Message != "throttled" {
		t.Errorf("the error hook: attempt %d, operation %q, error seen %q", r.Attempt, r.Op, r.Message)
	}
	if r := recs[5]; r.Err != "it panicked" || !strings.Contains(r.Note, "failed open") {
		t.Errorf("the call that failed open: error %q, note %q", r.Err, r.Note)
	}
	for _, r := range recs[:5] {
		if r.URN != petURN || r.Note != "" {
			t.Errorf("%s: URN %q, note %q", shape(r), r.URN, r.Note)
		}
	}
	if info.moduleCalls != 6 || info.engineCalls != 0 {
		t.Errorf("%d calls from the module's records, %d from the engine's lines; want 6 and 0", info.moduleCalls, info.engineCalls)
	}
	o := info.origin()
	text := strings.Join(o.Cannot, "\n")
	if strings.Contains(text, "which answer is whose") || strings.Contains(text, "where a callback was registered") ||
		!strings.Contains(o.Text, "6 calls from its records") {
		t.Errorf("with every call recorded by the module, the account says it cannot tell\n%s\nof %s", text, o.Text)
	}
}

// TestAutoLogModuleNoAnswer: a call whose start the module recorded and
// whose end the log does not have is shown, with how long it had run.
func TestAutoLogModuleNoAnswer(t *testing.T) {
	recs, _ := readModLog(t, modLog(t,
		ml{at: 1, msg: `calling hook "before-create" for urn ` + petURN},
		ml{at: 2, id: "a-1", call: hookCall("before-create")},
		ml{at: 1502, msg: "something else the engine logs"},
	))
	equalLists(t, "the calls", shapes(recs), []string{"pet: resource hook before-create no answer"})
	if len(recs) == 1 {
		if r := recs[0]; !r.NoDuration || !strings.Contains(r.Note, "ended before it answered") || !strings.Contains(r.Note, "1.5") {
			t.Errorf("the unanswered call: duration given %v, note %q", !r.NoDuration, r.Note)
		}
	}
}

// TestAutoLogModuleAndOtherServers: the engine's lines about calls the
// module did not record (another server's, as the SDK's own) still count,
// and then the account says what it cannot tell of those.
func TestAutoLogModuleAndOtherServers(t *testing.T) {
	small := map[string]any{"length": 2.0}
	recs, info := readModLog(t, modLog(t,
		ml{at: 1, msg: before(t, "other", small)},
		ml{at: 2, msg: after(t, small, "map[custom_timeouts:map[]]")},
		ml{at: 10, msg: `calling hook "before-create" for urn ` + petURN},
		ml{at: 11, id: "a-1", call: hookCall("before-create")},
		ml{at: 12, id: "a-1", end: true, call: hookCall("before-create"), attrs: ended(1)},
		ml{at: 13, msg: `ResourceHook pet returned ""`},
		ml{at: 20, msg: `calling hook "sdk-hook" for urn ` + petURN},
		ml{at: 21, msg: `ResourceHook pet returned ""`},
	))
	equalLists(t, "the calls", shapes(recs), []string{
		"other: resource transform transform unchanged",
		"pet: resource hook before-create ok",
		"pet: resource hook sdk-hook ok",
	})
	if info.moduleCalls != 1 || info.engineCalls != 2 {
		t.Errorf("%d calls from the module's records, %d from the engine's lines; want 1 and 2", info.moduleCalls, info.engineCalls)
	}
	if o := info.origin(); !strings.Contains(strings.Join(o.Cannot, "\n"), "no record of the module covers") {
		t.Errorf("the account does not say what it cannot tell of the calls the module did not record: %q", o.Cannot)
	}
}

// TestAutoLogModuleUncertainChanges: two transforms of one resource, both
// recorded, whose engine lines overlap: what each changed is left out, with
// a note, and each is told once.
func TestAutoLogModuleUncertainChanges(t *testing.T) {
	small := map[string]any{"length": 2.0}
	plain := "map[custom_timeouts:map[]]"
	recs, _ := readModLog(t, modLog(t,
		ml{at: 1, msg: before(t, "pet", small)},
		ml{at: 1, msg: before(t, "pet", small)},
		ml{at: 2, id: "a-1", call: transformCall("first", "pet")},
		ml{at: 2, id: "a-2", call: transformCall("second", "pet")},
		ml{at: 3, id: "a-1", end: true, call: transformCall("first", "pet"), attrs: ended(1)},
		ml{at: 3, id: "a-2", end: true, call: transformCall("second", "pet"), attrs: ended(1)},
		ml{at: 4, msg: after(t, map[string]any{"length": 3.0}, plain)},
		ml{at: 4, msg: after(t, small, plain)},
	))
	equalLists(t, "the calls", shapes(recs), []string{"pet: resource transform first ok", "pet: resource transform second ok"})
	for _, r := range recs {
		if len(r.Changes) > 0 || !strings.Contains(r.Note, "what it changed is not shown") {
			t.Errorf("%s: changes %v, note %q", shape(r), r.Changes, r.Note)
		}
	}
}

// TestAutoLogModuleNewerSchema: records of a newer schema are read for
// what the reader knows, and the account names the schema once.
func TestAutoLogModuleNewerSchema(t *testing.T) {
	newer := func(a map[string]any) map[string]any {
		a["callbacks.schema"], a["callbacks.something_new"] = calllog.Schema+1, map[string]any{"x": 1}
		return a
	}
	recs, info := readModLog(t, modLog(t,
		ml{at: 2, id: "a-1", call: hookCall("before-create"), attrs: newer(map[string]any{})},
		ml{at: 3, id: "a-1", end: true, call: hookCall("before-create"), attrs: newer(ended(1))},
	))
	equalLists(t, "the calls", shapes(recs), []string{"pet: resource hook before-create ok"})
	n := 0
	for _, c := range info.origin().Cannot {
		if strings.Contains(c, fmt.Sprintf("schema %d", calllog.Schema+1)) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the account names schema %d in %d notes, want 1: %q", calllog.Schema+1, n, info.origin().Cannot)
	}
}

// v2 marks a record's attributes as schema 2's.
func v2(a map[string]any) map[string]any {
	a["callbacks.schema"] = 2
	return a
}

// TestAutoLogModuleChanges: from schema 2, what a transform or migration
// changed is read from its own record, whether or not the engine's lines
// about it can be paired with it (here two transforms run at once, which
// the engine's lines cannot tell apart); a record that holds no changes
// says why; with payloads, the request and answer are shown with -v,
// secrets hidden.
func TestAutoLogModuleChanges(t *testing.T) {
	small := map[string]any{"length": 2.0}
	plain := "map[custom_timeouts:map[]]"
	migration := map[string]string{"pulumi.callback.kind": "state_migration", "pulumi.callback.name": "v2", "pulumi.resource.urn": petURN}
	changes := func(ms float64, text string, more map[string]any) map[string]any {
		a := v2(ended(ms))
		a["callbacks.changes"] = text
		for k, v := range more {
			a[k] = v
		}
		return a
	}
	request := `{"name":"pet","properties":{"length":2,"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"[secret]"}}}`
	log := modLog(t,
		ml{at: 1, msg: before(t, "pet", small)},
		ml{at: 1, msg: before(t, "pet", small)},
		ml{at: 2, id: "a-1", call: transformCall("tag", "pet"), attrs: v2(map[string]any{})},
		ml{at: 2, id: "a-2", call: transformCall("noop", "pet"), attrs: v2(map[string]any{})},
		ml{at: 3, id: "a-1", end: true, call: transformCall("tag", "pet"), attrs: changes(0.5,
			`[{"path":"properties.tags.team","new":"\"platform\""},{"path":"properties.pw","old":"[secret]","new":"[another secret]"}]`,
			map[string]any{"callbacks.changes_left_out": 3, "callbacks.request": request, "callbacks.answer": `{"properties":{"x":1}}`})},
		ml{at: 3, id: "a-2", end: true, call: transformCall("noop", "pet"), attrs: changes(0.25, "[]",
			map[string]any{"callbacks.changes_note": "no change: the answer was empty"})},
		ml{at: 4, msg: after(t, map[string]any{"length": 3.0}, plain)},
		ml{at: 4, msg: after(t, small, plain)},
		ml{at: 5, id: "a-3", call: transformCall("big", "pet"), attrs: v2(map[string]any{})},
		ml{at: 6, id: "a-3", end: true, call: transformCall("big", "pet"), attrs: func() map[string]any {
			a := v2(ended(1))
			a["callbacks.changes_note"] = "changes not recorded: payload too large"
			return a
		}()},
		ml{at: 7, id: "a-4", call: migration, attrs: v2(map[string]any{})},
		ml{at: 8, id: "a-4", end: true, call: migration, attrs: changes(2, `[{"path":"state[0].outputs.size","old":"1","new":"2"}]`, nil)},
	)
	recs, info := readModLog(t, log)
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource transform tag changed", "pet: resource transform noop unchanged",
		"pet: resource transform big ok", "pet: state migration v2 migrated",
	})
	if len(recs) != 4 {
		return
	}
	equalLists(t, "the tag's changes", changeStrings(recs[0]), []string{
		`{properties.tags.team (absent) "platform"}`, `{properties.pw [secret] [another secret]}`})
	if !strings.Contains(recs[0].Note, "3 more changes not shown") {
		t.Errorf("the tag's note: %q", recs[0].Note)
	}
	if len(recs[1].Changes) != 0 || recs[2].Note != "changes not recorded: payload too large" {
		t.Errorf("noop changed %v; big's note %q", recs[1].Changes, recs[2].Note)
	}
	equalLists(t, "the migration's changes", changeStrings(recs[3]), []string{"{state[0].outputs.size 1 2}"})
	if p := recs[0].Payload; p == nil || p.Request == nil || p.Answer == nil {
		t.Errorf("the tag's payloads: %+v", p)
	}
	if info.moduleUntold != 0 {
		t.Errorf("%d calls whose records do not say what they changed, want none", info.moduleUntold)
	}
	for _, c := range info.origin().Cannot {
		if strings.Contains(c, "what a transform or migration changed") {
			t.Errorf("the account says it cannot tell what a transform changed: %q", c)
		}
	}

	var out, errb bytes.Buffer
	if code := run([]string{"show", "-v", "-"}, strings.NewReader(log), &out, &errb); code != 0 {
		t.Fatalf("show -v: exit %d\n%s", code, errb.String())
	}
	for _, want := range []string{"properties.tags.team", `"platform"`, "properties.pw", "[secret]", "state[0].outputs.size"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the account has no %q:\n%s", want, out.String())
		}
	}
}

func changeStrings(r *record) []string {
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.String())
	}
	return out
}

// TestAutoLogModuleTypedValues: where a record holds its call's request
// and answer (payloads asked for), the changes it lists carry the typed
// values -json prints, the same the gRPC log's messages give them.
func TestAutoLogModuleTypedValues(t *testing.T) {
	secret := func(v any) map[string]any {
		return map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": v}
	}
	props := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	state := `[{"urn":"` + petURN + `","outputs":{"size":1,"tags":["a"]}},{"urn":"urn:gone","outputs":{}}]`
	for _, c := range []struct {
		wire     string // the kind as a record names it
		req, res proto.Message
		paths    []string
	}{
		{"resource_transform",
			&pulumirpc.TransformRequest{Name: "pet", Type: "random:index/randomPet:RandomPet",
				Properties: props(map[string]any{"length": 2.0, "tags": map[string]any{"team": "a"}, "pw": secret("old")}),
				Options:    &pulumirpc.TransformResourceOptions{Protect: proto.Bool(false)}},
			&pulumirpc.TransformResponse{
				Properties: props(map[string]any{"length": 3.0, "tags": map[string]any{"team": "b"}, "pw": secret("new")}),
				Options:    &pulumirpc.TransformResourceOptions{Protect: proto.Bool(true), IgnoreChanges: []string{"length"}}},
			[]string{"properties.length", "properties.tags.team", "properties.pw", "options.protect", "options.ignoreChanges"}},
		{"invoke_transform",
			&pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion", Args: props(map[string]any{"region": "us-east-1"})},
			&pulumirpc.TransformInvokeResponse{Args: props(map[string]any{"region": "eu-west-1", "ids": []any{1.0, 2.0}})},
			[]string{"args.region", "args.ids"}},
		{"state_migration",
			&pulumirpc.StateMigrationRequest{Urn: petURN, OldState: []byte(state)},
			&pulumirpc.StateMigrationResponse{NewState: []byte(`[{"urn":"` + petURN + `","outputs":{"size":2,"tags":["a","b"]}}]`)},
			[]string{"state[0].outputs.size", "state[0].outputs.tags", "state[1]"}},
	} {
		t.Run(c.wire, func(t *testing.T) {
			reqB, err := proto.Marshal(c.req)
			if err != nil {
				t.Fatal(err)
			}
			resB, err := proto.Marshal(c.res)
			if err != nil {
				t.Fatal(err)
			}
			m := moduleAttrs{}
			for attr, b := range map[string][]byte{calllog.AttrRequest: reqB, calllog.AttrAnswer: resB} {
				text, err := calllog.PayloadJSON(c.wire, attr == calllog.AttrRequest, b)
				if err != nil {
					t.Fatal(err)
				}
				m[attr] = text
			}
			changes := func() []change {
				var out []change
				for _, p := range c.paths {
					out = append(out, change{Path: p, Old: "old", New: "new"})
				}
				return out
			}
			want, got := changes(), changes()
			changeValues(c.req, c.res, want, false)
			m[calllog.AttrKind] = c.wire
			payloadValues(m, got, false)
			typed := 0
			for i := range want {
				for _, v := range [][2]*value{{want[i].OldValue, got[i].OldValue}, {want[i].NewValue, got[i].NewValue}} {
					if v[0] != nil {
						typed++
					}
					if w, g := string(v[0].rawJSON()), string(v[1].rawJSON()); w != g {
						t.Errorf("%s: from the record %s, from the messages %s", want[i].Path, g, w)
					}
				}
			}
			if typed < len(c.paths) {
				t.Errorf("only %d typed values among %d changes from the messages", typed, len(c.paths))
			}
		})
	}
}
