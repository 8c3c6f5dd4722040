package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/archive"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

const thingURN = "urn:pulumi:dev::demo::test:index:Thing::db"

// everyKindLog is a log of one call of each kind, each with secret marked
// secret in its request (a transform's properties, an invoke transform's
// arguments, a hook's inputs, an error hook's old outputs, a migration's
// old state) and in the same place of its answer, and the secret unmarked
// inside a longer string of the resource hook's inputs.
func everyKindLog(tb testing.TB, secret string) string {
	tb.Helper()
	l := newTestLog(tb)
	l.register("RegisterStackTransform", "", "tok-transform")
	l.register("RegisterStackInvokeTransform", "", "tok-invoke")
	l.register("RegisterResourceHook", "check-tags", "tok-hook")
	l.register("RegisterErrorHook", "retry-throttled", "tok-errorhook")
	l.add(logEntry{Method: "/pulumirpc.ResourceMonitor/RegisterResource",
		Request: map[string]any{"type": "test:index:Thing", "name": "db", "custom": true,
			"stateMigrations": []any{map[string]any{"target": "127.0.0.1:1", "token": "tok-migrate"}}},
		Response: map[string]any{"urn": thingURN}, Metadata: map[string]string{"mode": "server"}})

	pw := map[string]any{sig.Key: sig.Secret, "value": secret}
	props := func(length float64, team string) map[string]any {
		return map[string]any{"length": length, "password": pw, "tags": map[string]any{"team": team},
			"list": []any{1.0, "x", true, nil}, "empty": map[string]any{}}
	}
	yes := true
	l.call("tok-transform",
		&pulumirpc.TransformRequest{Type: "test:index:Thing", Name: "db", Custom: true,
			Parent: "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev", Properties: newStruct(tb, props(2, "a"))},
		&pulumirpc.TransformResponse{Properties: newStruct(tb, props(3, "b")),
			Options: &pulumirpc.TransformResourceOptions{Protect: &yes}})
	l.call("tok-invoke",
		&pulumirpc.TransformInvokeRequest{Token: "test:index:getThing", Args: newStruct(tb, map[string]any{"key": pw, "n": 1.5})},
		&pulumirpc.TransformInvokeResponse{Args: newStruct(tb, map[string]any{"key": pw, "n": 2.0})})
	l.call("tok-hook",
		&pulumirpc.ResourceHookRequest{Urn: thingURN, Name: "db", Type: "test:index:Thing",
			NewInputs: newStruct(tb, map[string]any{"password": pw, "note": "the key is " + secret})},
		&pulumirpc.ResourceHookResponse{Error: "no"})
	l.call("tok-errorhook",
		&pulumirpc.ErrorHookRequest{Urn: thingURN, Name: "db", Type: "test:index:Thing", FailedOperation: "create",
			Errors: []string{"throttled", "first"}, OldOutputs: newStruct(tb, map[string]any{"password": pw})},
		&pulumirpc.ErrorHookResponse{Retry: true})
	state := func(count int) []byte {
		plain, err := json.Marshal(secret)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := json.Marshal([]any{map[string]any{"urn": thingURN, "type": "test:index:Thing", "custom": true,
			"inputs":  map[string]any{"password": map[string]any{sig.Key: sig.Secret, "plaintext": string(plain)}},
			"outputs": map[string]any{"count": count}}})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	l.call("tok-migrate", &pulumirpc.StateMigrationRequest{Urn: thingURN, OldState: state(1)},
		&pulumirpc.StateMigrationResponse{NewState: state(2)})
	return l.String()
}

// jsonCalls decodes show -json's call lines by kind (the first of each).
func jsonCalls(tb testing.TB, js string) map[string]map[string]any {
	tb.Helper()
	out := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var c map[string]any
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			tb.Fatalf("%v: %s", err, line)
		}
		if k, ok := c["kind"].(string); ok && out[k] == nil {
			out[k] = c
		}
	}
	return out
}

// at walks a decoded JSON value by keys and indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			a, _ := v.([]any)
			if p >= len(a) {
				return nil
			}
			v = a[p]
		}
	}
	return v
}

// changeOf is the change at path of a decoded call line.
func changeOf(c map[string]any, path string) map[string]any {
	chs, _ := c["changes"].([]any)
	for _, ch := range chs {
		if m, _ := ch.(map[string]any); m["path"] == path {
			return m
		}
	}
	return nil
}

var hiddenMarker = map[string]any{"secret": hidden}

// TestVerboseJSONOfEveryKind: with -v, each kind's call line carries its
// request and answer as JSON values of the right JSON types, with secrets
// as marker objects; each change carries its values typed.
func TestVerboseJSONOfEveryKind(t *testing.T) {
	const secret = "hunter2-Hunter2"
	calls := jsonCalls(t, views(t, everyKindLog(t, secret), "-v")["json"])
	for _, c := range []struct {
		kind, what string
		got        any
		want       any
	}{
		{"resource transform", "request.type", at(calls["resource transform"], "request", "type"), "test:index:Thing"},
		{"resource transform", "request.custom", at(calls["resource transform"], "request", "custom"), true},
		{"resource transform", "request.properties.length", at(calls["resource transform"], "request", "properties", "length"), 2.0},
		{"resource transform", "request.properties.password", at(calls["resource transform"], "request", "properties", "password"), hiddenMarker},
		{"resource transform", "request.properties.list", at(calls["resource transform"], "request", "properties", "list"), []any{1.0, "x", true, nil}},
		{"resource transform", "request.properties.empty", at(calls["resource transform"], "request", "properties", "empty"), map[string]any{}},
		{"resource transform", "answer.properties.tags", at(calls["resource transform"], "answer", "properties", "tags"), map[string]any{"team": "b"}},
		{"resource transform", "answer.options.protect", at(calls["resource transform"], "answer", "options", "protect"), true},
		{"resource transform", "properties.length's values", []any{at(changeOf(calls["resource transform"], "properties.length"), "oldValue"),
			at(changeOf(calls["resource transform"], "properties.length"), "newValue")}, []any{2.0, 3.0}},
		{"invoke transform", "request.token", at(calls["invoke transform"], "request", "token"), "test:index:getThing"},
		{"invoke transform", "request.args", at(calls["invoke transform"], "request", "args"), map[string]any{"key": hiddenMarker, "n": 1.5}},
		{"invoke transform", "answer.args.n", at(calls["invoke transform"], "answer", "args", "n"), 2.0},
		{"resource hook", "request.newInputs", at(calls["resource hook"], "request", "newInputs"),
			map[string]any{"password": hiddenMarker, "note": "the key is [secret]"}},
		{"resource hook", "request.urn", at(calls["resource hook"], "request", "urn"), thingURN},
		{"resource hook", "answer", at(calls["resource hook"], "answer"), map[string]any{"error": "no"}},
		{"error hook", "request.failedOperation", at(calls["error hook"], "request", "failedOperation"), "create"},
		{"error hook", "request.errors", at(calls["error hook"], "request", "errors"), []any{"throttled", "first"}},
		{"error hook", "request.oldOutputs", at(calls["error hook"], "request", "oldOutputs"), map[string]any{"password": hiddenMarker}},
		{"error hook", "answer", at(calls["error hook"], "answer"), map[string]any{"retry": true}},
		{"state migration", "request.oldState[0].inputs", at(calls["state migration"], "request", "oldState", 0, "inputs"), map[string]any{"password": hiddenMarker}},
		{"state migration", "request.oldState[0].outputs.count", at(calls["state migration"], "request", "oldState", 0, "outputs", "count"), 1.0},
		{"state migration", "answer.newState[0].outputs.count", at(calls["state migration"], "answer", "newState", 0, "outputs", "count"), 2.0},
		{"state migration", "state[0].outputs.count's values", []any{at(changeOf(calls["state migration"], "state[0].outputs.count"), "oldValue"),
			at(changeOf(calls["state migration"], "state[0].outputs.count"), "newValue")}, []any{1.0, 2.0}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: %s is %#v, want %#v", c.kind, c.what, c.got, c.want)
		}
	}
	// A value absent on one side has no value there; a string is a string.
	ch := changeOf(calls["resource transform"], "options.protect")
	if _, has := ch["oldValue"]; has || ch["newValue"] != true {
		t.Errorf("options.protect's change is %v, want no oldValue and newValue true", ch)
	}
	if ch := changeOf(calls["resource transform"], "properties.tags.team"); ch["oldValue"] != "a" || ch["newValue"] != "b" {
		t.Errorf("properties.tags.team's change is %v, want the strings a and b", ch)
	}
	for kind, c := range calls {
		if _, has := c["requestMissing"]; has {
			t.Errorf("%s: the request is said to be missing: %v", kind, c["requestMissing"])
		}
	}
	// With -secrets, the secret's value is inside its marker.
	calls = jsonCalls(t, views(t, everyKindLog(t, secret), "-v", "-secrets")["json"])
	if got := at(calls["resource transform"], "request", "properties", "password"); !reflect.DeepEqual(got, map[string]any{"secret": secret}) {
		t.Errorf("with -secrets the password is %#v, want the secret in its marker", got)
	}
	// Without -v, no request or answer.
	calls = jsonCalls(t, views(t, everyKindLog(t, secret))["json"])
	for kind, c := range calls {
		if c["request"] != nil || c["answer"] != nil {
			t.Errorf("%s: without -v the call line has a request or an answer: %v", kind, c)
		}
	}
}

// payloadRows are the lines the text account prints under "request:" and
// "answer:", as "path = value", sorted.
func payloadRows(text string) []string {
	var out []string
	indent := -1
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		depth := len(line) - len(trimmed)
		switch {
		case trimmed == "request:" || trimmed == "answer:":
			indent = depth
		case indent >= 0 && depth > indent && trimmed != "":
			path, val, ok := strings.Cut(trimmed, "  ")
			if !ok {
				return append(out, "unparsed: "+line)
			}
			out = append(out, path+" = "+strings.TrimLeft(val, " "))
		default:
			indent = -1
		}
	}
	slices.Sort(out)
	return out
}

// pageRows are the request and answer rows of every call of the page's
// data block, as payloadRows gives the text's.
func pageRows(tb testing.TB, page string) []string {
	tb.Helper()
	_, data, _ := strings.Cut(page, "const DATA = ")
	data, _, _ = strings.Cut(data, ";\n")
	var p struct {
		Groups []struct {
			Calls []struct {
				Step            string
				Verbose         bool
				Request, Answer []field
			}
		}
	}
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		tb.Fatalf("the page's data: %v", err)
	}
	var out []string
	for _, g := range p.Groups {
		for _, c := range g.Calls {
			if c.Step != "" {
				continue // a provider step: no request or answer of a callback
			}
			if !c.Verbose {
				tb.Errorf("a call of the page is not verbose")
			}
			for _, f := range append(c.Request, c.Answer...) {
				out = append(out, f.Path+" = "+f.Value)
			}
		}
	}
	slices.Sort(out)
	return out
}

var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// jsonRows flattens the requests and answers of show -json's lines as the
// text account prints them: one row per value by property path, marker
// objects as the text's words.
func jsonRows(tb testing.TB, js string) []string {
	tb.Helper()
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if s, ok := v["secret"]; ok && len(v) == 1 && s == hidden {
				out = append(out, path+" = "+hidden)
				return
			}
			if len(v) == 0 {
				out = append(out, path+" = {}")
				return
			}
			for k, x := range v {
				p := path + "." + k
				if path == "" {
					p = k
				}
				if !plainKey.MatchString(k) {
					p = path + "[" + strconv.Quote(k) + "]"
				}
				walk(p, x)
			}
		case []any:
			if len(v) == 0 {
				out = append(out, path+" = []")
			}
			for i, x := range v {
				walk(path+"["+strconv.Itoa(i)+"]", x)
			}
		case string:
			out = append(out, path+" = "+strconv.Quote(v))
		case float64:
			out = append(out, path+" = "+strconv.FormatFloat(v, 'f', -1, 64))
		case nil:
			out = append(out, path+" = null")
		default:
			out = append(out, fmt.Sprintf("%s = %v", path, v))
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var c map[string]any
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			tb.Fatal(err)
		}
		for _, k := range []string{"request", "answer"} {
			if v, ok := c[k].(map[string]any); ok && len(v) > 0 { // the text says "answer: {}"
				walk("", v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestVerboseViewsHaveTheSameContent: with -v, the text account, the HTML
// page and the JSON lines show the same requests and answers, of every
// kind, and no view prints the secret they hold; with -secrets they do.
func TestVerboseViewsHaveTheSameContent(t *testing.T) {
	const secret = "hunter2-Hunter2"
	log := everyKindLog(t, secret)
	v := views(t, log, "-v")
	text := payloadRows(v["text"])
	if len(text) == 0 {
		t.Fatalf("the text account shows no request or answer:\n%s", v["text"])
	}
	for _, want := range []string{
		`properties.password = [secret]`, `properties.list[3] = null`, `properties.empty = {}`, `custom = true`,
		`options.protect = true`, `token = "test:index:getThing"`, `newInputs.note = "the key is [secret]"`,
		`error = "no"`, `retry = true`, `errors[1] = "first"`, `failedOperation = "create"`,
		`oldState[0].inputs.password = [secret]`, `newState[0].outputs.count = 2`,
	} {
		if !slices.Contains(text, want) {
			t.Errorf("the text account has no line %q:\n%s", want, v["text"])
		}
	}
	if page := pageRows(t, v["html"]); !slices.Equal(page, text) {
		t.Errorf("the page shows other requests and answers than the text:\npage: %q\ntext: %q", page, text)
	}
	if js := jsonRows(t, v["json"]); !slices.Equal(js, text) {
		t.Errorf("-json shows other requests and answers than the text:\njson: %q\ntext: %q", js, text)
	}
	for form, out := range v {
		if f := leak(t, form, out, secret); f != "" {
			t.Errorf("with -v the %s view prints the secret (%q):\n%s", form, f, out)
		}
		if !strings.Contains(out, "the key is [secret]") {
			t.Errorf("with -v the %s view does not show the request's words around the secret:\n%s", form, out)
		}
	}
	for form, out := range views(t, log, "-v", "-secrets") {
		if !strings.Contains(out, secret) {
			t.Errorf("with -v -secrets the %s view does not print the secret:\n%s", form, out)
		}
	}
	// Without -v, the text account shows none.
	if rows := payloadRows(views(t, log)["text"]); len(rows) > 0 {
		t.Errorf("without -v the text account shows requests and answers: %q", rows)
	}
}

// TestVerboseOfRecordedLogs: every call of the recorded logs shows its
// request, and its answer or why it has none; each kind's request has the
// fields of its message; every change has the values it names.
func TestVerboseOfRecordedLogs(t *testing.T) {
	want := map[string][]string{
		"resource transform": {"type", "name", "properties"},
		"invoke transform":   {"token"},
		"resource hook":      {"urn", "name", "type"},
		"error hook":         {"urn", "failedOperation", "errors"},
		"state migration":    {"urn", "oldState"},
	}
	for _, file := range logs(t) {
		t.Run(strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], ".jsonl"), func(t *testing.T) {
			code, js, stderr := callbacklog("", "show", "-v", "-json", file)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			calls := 0
			for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
				var c map[string]any
				if err := json.Unmarshal([]byte(line), &c); err != nil {
					t.Fatal(err)
				}
				fields, ok := want[fmt.Sprint(c["kind"])]
				if !ok {
					continue
				}
				calls++
				req, _ := c["request"].(map[string]any)
				for _, f := range fields {
					if _, has := req[f]; !has {
						t.Errorf("line %v: the %s's request has no %s: %v", c["line"], c["kind"], f, c["request"])
					}
				}
				if _, has := c["answer"].(map[string]any); has == (c["answerMissing"] != nil) {
					t.Errorf("line %v: answer %v, answerMissing %v: want one of them", c["line"], c["answer"], c["answerMissing"])
				}
				chs, _ := c["changes"].([]any)
				for _, ch := range chs {
					ch := ch.(map[string]any)
					_, hasOld := ch["oldValue"]
					_, hasNew := ch["newValue"]
					if hasOld != (ch["old"] != absent) || hasNew != (ch["new"] != absent) {
						t.Errorf("line %v: the change %v lacks a value it names (or has one it does not)", c["line"], ch)
					}
				}
			}
			if calls == 0 {
				t.Fatalf("no callback call in -json:\n%s", js)
			}
			_, text, _ := callbacklog("", "show", "-v", file)
			if n := strings.Count(text, "request:"); n != calls {
				t.Errorf("the text account shows %d requests, want one per call (%d):\n%s", n, calls, text)
			}
		})
	}
}

// TestVerboseAutomaticLog: from an automatic log, -v shows a transform's
// properties as given and as returned, and says that a hook's request is
// not in the log; its answer is what the log's line says.
func TestVerboseAutomaticLog(t *testing.T) {
	const pw = "correct-horse-battery"
	pet := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	log := autoLines(t,
		before(t, "pet", map[string]any{"length": 2.0}),
		after(t, map[string]any{"length": 3.0, "password": secretValue(pw)}, "map[custom_timeouts:map[] protect:true]"),
		`calling hook "audit" for urn `+pet,
		`ResourceHook pet returned "no"`,
	)
	page := t.TempDir() + "/page.html"
	code, text, stderr := callbacklog(log, "show", "-v", "-html", page, "-")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := payloadRows(text)
	for _, want := range []string{`properties.length = 2`, `properties.length = 3`, `properties.password = [secret]`,
		`name = "pet"`, `options = "map[custom_timeouts:map[] protect:true]"`, `error = "no"`} {
		if !slices.Contains(rows, want) {
			t.Errorf("the account has no line %q:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "request: "+missingHookReq) {
		t.Errorf("the account does not say that a hook's request is not in the log:\n%s", text)
	}
	if got := pageRows(t, string(readTestFile(t, page))); !slices.Equal(got, rows) {
		t.Errorf("the page shows other requests and answers than the text:\npage: %q\ntext: %q", got, rows)
	}
	_, js, _ := callbacklog(log, "show", "-v", "-json", "-")
	if got := jsonRows(t, js); !slices.Equal(got, rows) {
		t.Errorf("-json shows other requests and answers than the text:\njson: %q\ntext: %q", got, rows)
	}
	calls := jsonCalls(t, js)
	if c := calls["resource hook"]; c["requestMissing"] != missingHookReq || c["request"] != nil {
		t.Errorf("the hook's line says %v of its request, want %q", c["requestMissing"], missingHookReq)
	}
	if ch := changeOf(calls["resource transform"], "properties.length"); ch["oldValue"] != 2.0 || ch["newValue"] != 3.0 {
		t.Errorf("the transform's change of length is %v, want the numbers 2 and 3", ch)
	}
	if ch := changeOf(calls["resource transform"], "options.protect"); ch == nil || ch["oldValue"] != nil || ch["newValue"] != nil {
		t.Errorf("an option's change from the engine's text has a value: %v", ch)
	}
	if strings.Contains(text+js, pw) {
		t.Errorf("the secret is shown:\n%s%s", text, js)
	}
}

// TestValueForms: each kind of property value has its JSON form, of the
// JSON type encoding/json decodes it as, and its text form.
func TestValueForms(t *testing.T) {
	ref := resource.MakeCustomResourceReference("urn:pulumi:dev::demo::test:index:Thing::db", "db-1", "1.2.3")
	for _, c := range []struct {
		name     string
		v        resource.PropertyValue
		secrets  bool
		json     string
		text     string
		wantType any
	}{
		{"null", resource.NewNullProperty(), false, `null`, `null`, nil},
		{"number", resource.NewProperty(2.5), false, `2.5`, `2.5`, 0.0},
		{"string", resource.NewProperty("a\"b"), false, `"a\"b"`, `"a\"b"`, ""},
		{"bool", resource.NewProperty(true), false, `true`, `true`, false},
		{"array", resource.NewProperty([]resource.PropertyValue{resource.NewProperty(1.0), resource.NewProperty("x")}), false,
			`[1,"x"]`, `[1, "x"]`, []any{}},
		{"object", resource.NewProperty(resource.PropertyMap{"b": resource.NewProperty(1.0), "a": resource.NewProperty("x")}), false,
			`{"a":"x","b":1}`, `{"a": "x", "b": 1}`, map[string]any{}},
		{"secret", resource.MakeSecret(resource.NewProperty("pw")), false, `{"secret":"[secret]"}`, `[secret]`, map[string]any{}},
		{"secret shown", resource.MakeSecret(resource.NewProperty("pw")), true, `{"secret":"pw"}`, `secret("pw")`, map[string]any{}},
		{"unknown", resource.MakeComputed(resource.NewProperty("")), false, `{"unknown":true}`, `[unknown]`, map[string]any{}},
		{"unknown output", resource.NewProperty(resource.Output{Known: false}), false, `{"unknown":true}`, `[unknown]`, map[string]any{}},
		{"secret output", resource.NewProperty(resource.Output{Known: true, Secret: true, Element: resource.NewProperty(1.0)}), false,
			`{"secret":"[secret]"}`, `[secret]`, map[string]any{}},
		{"asset", resource.NewProperty(&asset.Asset{Sig: asset.AssetSig, Hash: "abc", Path: "index.html"}), false,
			`{"asset":{"hash":"abc","path":"index.html"}}`, `asset({"hash": "abc", "path": "index.html"})`, map[string]any{}},
		{"archive", resource.NewProperty(&archive.Archive{Sig: archive.ArchiveSig, Hash: "def", Assets: map[string]any{
			"a.txt": &asset.Asset{Sig: asset.AssetSig, Text: "hi"}}}), false,
			`{"archive":{"assets":{"a.txt":{"asset":{"text":"hi"}}},"hash":"def"}}`, `archive({"hash": "def", "assets": {"a.txt": asset({"text": "hi"})}})`, map[string]any{}},
		{"resource", ref, false,
			`{"resource":{"id":"db-1","packageVersion":"1.2.3","urn":"urn:pulumi:dev::demo::test:index:Thing::db"}}`,
			`resource({"urn": "urn:pulumi:dev::demo::test:index:Thing::db", "id": "db-1", "packageVersion": "1.2.3"})`, map[string]any{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := fromProperty(c.v, c.secrets)
			raw := v.rawJSON()
			if string(raw) != c.json {
				t.Errorf("JSON %s, want %s", raw, c.json)
			}
			var decoded any
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(decoded) != reflect.TypeOf(c.wantType) {
				t.Errorf("decodes as %T, want %T", decoded, c.wantType)
			}
			if got := v.inline(); got != c.text {
				t.Errorf("text %s, want %s", got, c.text)
			}
		})
	}
}

// TestRedactedValues: a string or number that is a secret whole becomes a
// hidden secret, a secret inside a longer string or a key is replaced, and
// keys that hide alike stay apart.
func TestRedactedValues(t *testing.T) {
	r := secretSet{"hunter2-Hunter2": true, "42": true, "abc": true}.redactor()
	v := fromProperty(resource.NewProperty(resource.PropertyMap{
		"whole":                              resource.NewProperty("hunter2-Hunter2"),
		"inside":                             resource.NewProperty("the key hunter2-Hunter2 is wrong"),
		"number":                             resource.NewProperty(42.0),
		"short":                              resource.NewProperty("abcd"),
		"key hunter2-Hunter2":                resource.NewProperty(1.0),
		"key hunter2-Hunter2hunter2-Hunter2": resource.NewProperty(2.0),
		"list":                               resource.NewProperty([]resource.PropertyValue{resource.NewProperty("abc")}),
	}), false)
	got := string(r.value(v).rawJSON())
	want := `{"inside":"the key [secret] is wrong","key [secret]":1,"key [secret] #2":2,"list":[{"secret":"[secret]"}],` +
		`"number":{"secret":"[secret]"},"short":"abcd","whole":{"secret":"[secret]"}}`
	if got != want {
		t.Errorf("redacted:\n%s\nwant\n%s", got, want)
	}
	if string(v.rawJSON()) == got {
		t.Errorf("the value itself was changed: redacting must copy")
	}
}

// TestVerboseDetailInABrowser: with -v, selecting a call on the page shows
// its request and answer, every row the page was given, and nothing of the
// secret.
func TestVerboseDetailInABrowser(t *testing.T) {
	chromium(t)
	const secret = "hunter2-Hunter2"
	page := t.TempDir() + "/timeline.html"
	if code, _, stderr := callbacklog(everyKindLog(t, secret), "show", "-v", "-html", page, "-"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	html := string(readTestFile(t, page))
	_, data, _ := strings.Cut(html, "const DATA = ")
	data, _, _ = strings.Cut(data, ";\n")
	var p struct {
		Groups []struct {
			Calls []struct {
				Seq             int
				Request, Answer []field
			}
		}
	}
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, g := range p.Groups {
		for _, c := range g.Calls {
			dom, logged := browse(t, page+"#call="+strconv.Itoa(c.Seq), "--dump-dom")
			if strings.Contains(logged, "Uncaught") || strings.Contains(dom, "data-error=") {
				t.Errorf("call #%d: the page's script failed:\n%s", c.Seq, logged)
			}
			detail := section(dom, `<div id="detail"`)
			for part, rows := range map[string][]field{"request": c.Request, "answer": c.Answer} {
				if len(rows) > 0 && !strings.Contains(detail, `data-part="`+part+`"`) {
					t.Errorf("call #%d: the details have no %s table:\n%s", c.Seq, part, detail)
				}
				for _, f := range rows {
					if !strings.Contains(detail, "<code>"+htmlText(f.Path)+"</code>") || !strings.Contains(detail, "<code>"+htmlText(f.Value)+"</code>") {
						t.Errorf("call #%d: the details do not show %s %s:\n%s", c.Seq, f.Path, f.Value, detail)
					}
					shown++
				}
			}
			if strings.Contains(dom, secret) {
				t.Errorf("call #%d: the page shows the secret", c.Seq)
			}
		}
	}
	if shown == 0 {
		t.Fatalf("the page was given no request or answer:\n%s", data)
	}
}

// htmlText is s as a browser serializes text.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\u00a0", "&nbsp;").Replace(s)
}

// TestVerboseOfRecordedAutomaticLogs: of the real automatic logs in
// testdata/autologs, -v shows each transform's request with its
// properties, says of each hook's request that the log does not hold it,
// and shows the same in every view.
func TestVerboseOfRecordedAutomaticLogs(t *testing.T) {
	files, _ := filepath.Glob("testdata/autologs/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recorded automatic log in testdata/autologs")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data := string(readTestFile(t, file))
			v := views(t, data, "-v")
			calls, hooks := 0, 0
			for _, line := range strings.Split(strings.TrimSpace(v["json"]), "\n") {
				var c map[string]any
				if err := json.Unmarshal([]byte(line), &c); err != nil {
					t.Fatal(err)
				}
				switch c["kind"] {
				case "resource transform", "invoke transform":
					calls++
					if req, _ := c["request"].(map[string]any); req == nil || (req["properties"] == nil && req["args"] == nil) {
						t.Errorf("line %v: the transform's request has no properties: %v", c["line"], c["request"])
					}
				case "resource hook", "error hook":
					calls++
					hooks++
					if c["request"] != nil || c["requestMissing"] != missingHookReq {
						t.Errorf("line %v: the hook's request is %v (%v), want it said to be missing", c["line"], c["request"], c["requestMissing"])
					}
				}
			}
			if calls == 0 {
				t.Fatalf("no transform or hook call:\n%s", v["json"])
			}
			text := payloadRows(v["text"])
			if page := pageRows(t, v["html"]); !slices.Equal(page, text) {
				t.Errorf("the page shows other requests and answers than the text:\npage: %q\ntext: %q", page, text)
			}
			if js := jsonRows(t, v["json"]); !slices.Equal(js, text) {
				t.Errorf("-json shows other requests and answers than the text:\njson: %q\ntext: %q", js, text)
			}
			if n := strings.Count(v["text"], "request: "+missingHookReq); n != hooks {
				t.Errorf("the text account says of %d hooks' requests that the log does not hold them, want %d:\n%s", n, hooks, v["text"])
			}
		})
	}
}

// payloadLog is a log of one call of kind k (0 to 4: resource transform,
// invoke transform, resource hook, error hook, state migration) whose
// payloads are req and res as they are, res nil for a call that failed.
func payloadLog(tb testing.TB, k uint8, req, res []byte) string {
	tb.Helper()
	l := newTestLog(tb)
	switch k % 5 {
	case 0:
		l.register("RegisterStackTransform", "", "tok")
	case 1:
		l.register("RegisterStackInvokeTransform", "", "tok")
	case 2:
		l.register("RegisterResourceHook", "h", "tok")
	case 3:
		l.register("RegisterErrorHook", "e", "tok")
	case 4:
		l.add(logEntry{Method: "/pulumirpc.ResourceMonitor/RegisterResource",
			Request: map[string]any{"type": "test:index:Thing", "name": "db", "custom": true,
				"stateMigrations": []any{map[string]any{"target": "127.0.0.1:1", "token": "tok"}}},
			Response: map[string]any{"urn": thingURN}, Metadata: map[string]string{"mode": "server"}})
	}
	e := logEntry{Method: "/pulumirpc.Callbacks/Invoke", Request: map[string]any{"token": "tok", "request": req},
		Metadata: map[string]string{"kind": "callbacks", "mode": "client"}, Timestamp: "2026-11-28T03:25:23Z", Duration: 1500000}
	if res != nil {
		e.Response = map[string]any{"response": res}
	} else {
		e.Errors = []string{"the call failed"}
	}
	l.add(e)
	return l.String()
}

// FuzzVerboseOfAnyPayload gives show -v a call of each kind with payloads
// of any bytes: every view is written, with no panic, and -json's lines are
// JSON.
func FuzzVerboseOfAnyPayload(f *testing.F) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	odd, err := structpb.NewStruct(map[string]any{
		"asset":   map[string]any{sig.Key: sig.AssetSig, "hash": "abc", "text": "hi"},
		"archive": map[string]any{sig.Key: sig.ArchiveSig, "assets": map[string]any{"a": map[string]any{sig.Key: sig.AssetSig, "path": "x"}}},
		"ref":     map[string]any{sig.Key: sig.ResourceReference, "urn": thingURN, "id": "db-1"},
		"out":     map[string]any{sig.Key: sig.OutputValue, "value": 1, "secret": true},
		"unknown": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
		"secret":  map[string]any{sig.Key: sig.Secret, "value": map[string]any{"deep": []any{1, "x"}}},
		"bad":     map[string]any{sig.Key: "no such signature"},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), marshal(&pulumirpc.TransformRequest{Type: "t", Name: "n", Properties: odd}), marshal(&pulumirpc.TransformResponse{Properties: odd}))
	f.Add(uint8(1), marshal(&pulumirpc.TransformInvokeRequest{Token: "f", Args: odd}), marshal(&pulumirpc.TransformInvokeResponse{}))
	f.Add(uint8(2), marshal(&pulumirpc.ResourceHookRequest{Urn: thingURN, NewInputs: odd, OldOutputs: odd}), marshal(&pulumirpc.ResourceHookResponse{Error: "no"}))
	f.Add(uint8(3), marshal(&pulumirpc.ErrorHookRequest{Urn: thingURN, Errors: []string{"a"}}), []byte(nil))
	f.Add(uint8(4), marshal(&pulumirpc.StateMigrationRequest{Urn: thingURN, OldState: []byte(`[{"urn":"u","inputs":{"a":1}}]`)}),
		marshal(&pulumirpc.StateMigrationResponse{NewState: []byte(`[{"urn":"u","inputs":{"a":2}}, 3, "x"]`), Successors: map[string]string{"u": "v"}}))
	f.Add(uint8(4), marshal(&pulumirpc.StateMigrationRequest{OldState: []byte(`{"not": "an array"`)}), []byte{0xff, 0x01})
	f.Fuzz(func(t *testing.T, k uint8, req, res []byte) {
		log := payloadLog(t, k, req, res)
		dir := t.TempDir()
		for _, args := range [][]string{
			{"show", "-v", "-html", filepath.Join(dir, "page.html"), "-trace", filepath.Join(dir, "trace.json"), "-"},
			{"show", "-v", "-secrets", "-"},
			{"show", "-v", "-json", "-"},
		} {
			code, out, stderr := callbacklog(log, args...)
			if code != exitOK && code != exitUnreadable {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			if args[2] != "-json" {
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !json.Valid([]byte(line)) {
					t.Fatalf("-json wrote a line that is not JSON: %s", line)
				}
			}
		}
	})
}
