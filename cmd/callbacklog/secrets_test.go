package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// testLog writes a log of the engine's form (one entry per call) for a
// test.
type testLog struct {
	tb    testing.TB
	lines []string
	at    time.Time
}

type logEntry struct {
	Method    string            `json:"method"`
	Request   any               `json:"request"`
	Response  any               `json:"response,omitempty"`
	Errors    []string          `json:"errors,omitempty"`
	Metadata  map[string]string `json:"metadata"`
	Progress  string            `json:"progress,omitempty"`
	Timestamp string            `json:"timestamp,omitempty"`
	Duration  int64             `json:"duration,omitempty"`
}

func newTestLog(tb testing.TB) *testLog {
	l := &testLog{tb: tb, at: time.Date(2026, 11, 28, 3, 25, 22, 0, time.UTC)}
	l.add(logEntry{Method: "/pulumirpc.ResourceMonitor/GetDeploymentInfo", Request: map[string]any{},
		Response: map[string]any{"stack": "dev", "project": "demo"}, Metadata: map[string]string{"mode": "server"}})
	return l
}

func (l *testLog) add(e logEntry) {
	l.tb.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		l.tb.Fatal(err)
	}
	l.lines = append(l.lines, string(b)+"\n")
}

// register writes a monitor entry registering token: a stack transform
// when name is "", else a hook or error hook of that name.
func (l *testLog) register(method, name, token string) {
	l.tb.Helper()
	var req any = map[string]any{"target": "127.0.0.1:1", "token": token}
	if name != "" {
		req = map[string]any{"name": name, "callback": req}
	}
	l.add(logEntry{Method: "/pulumirpc.ResourceMonitor/" + method, Request: req, Response: map[string]any{},
		Metadata: map[string]string{"mode": "server"}})
}

// call writes a callback call; res is nil for a call that failed with errs.
func (l *testLog) call(token string, req, res proto.Message, errs ...string) {
	l.tb.Helper()
	reqB, err := proto.Marshal(req)
	if err != nil {
		l.tb.Fatal(err)
	}
	l.at = l.at.Add(5 * time.Millisecond)
	e := logEntry{Method: "/pulumirpc.Callbacks/Invoke", Request: map[string]any{"token": token, "request": reqB},
		Errors: errs, Metadata: map[string]string{"kind": "callbacks", "mode": "client"},
		Timestamp: l.at.Format(time.RFC3339Nano), Duration: 1500000}
	if res != nil {
		resB, err := proto.Marshal(res)
		if err != nil {
			l.tb.Fatal(err)
		}
		e.Response = map[string]any{"response": resB}
	}
	l.add(e)
}

func (l *testLog) String() string { return strings.Join(l.lines, "") }

func newStruct(tb testing.TB, m map[string]any) *structpb.Struct {
	tb.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// Where secretLog puts its text.
const (
	inErrorHooksError = iota // the error an error hook saw
	inHooksRefusal           // a hook's refusal
	inProperty               // a property's value, not marked secret
	inEngineError            // the error the engine got from a call
	inResourceName           // a resource's name (and so its URN)
	inHookName               // a hook's name
	places
)

var placeNames = [places]string{"error hook's error", "hook's refusal", "property", "engine's error", "resource name", "hook name"}

// secretLog is a log of four callback calls, with text in one place where a
// program's or a provider's words land. Only its last call, a transform,
// marks secret as secret: a password property it adds.
func secretLog(tb testing.TB, secret, text string, where int) string {
	tb.Helper()
	pick := func(place int, dflt string) string {
		if place == where {
			return text
		}
		return dflt
	}
	l := newTestLog(tb)
	l.register("RegisterStackTransform", "", "tok-transform")
	l.register("RegisterResourceHook", pick(inHookName, "check-tags"), "tok-hook")
	l.register("RegisterErrorHook", "retry-throttled", "tok-errorhook")
	const thing = "urn:pulumi:dev::demo::test:index:Thing::"
	l.call("tok-errorhook", &pulumirpc.ErrorHookRequest{Urn: thing + "db", Name: "db", Type: "test:index:Thing",
		FailedOperation: "create", Errors: []string{pick(inErrorHooksError, "throttled: try again")}},
		&pulumirpc.ErrorHookResponse{Retry: true})
	name := pick(inResourceName, "bucket")
	l.call("tok-hook", &pulumirpc.ResourceHookRequest{Urn: thing + name, Name: name, Type: "test:index:Thing"},
		&pulumirpc.ResourceHookResponse{Error: pick(inHooksRefusal, "buckets need an owner tag")})
	l.call("tok-hook", &pulumirpc.ResourceHookRequest{Urn: thing + "other", Name: "other", Type: "test:index:Thing"},
		nil, pick(inEngineError, "rpc error: code = Unavailable desc = connection refused"))
	props := map[string]any{"password": map[string]any{sig.Key: sig.Secret, "value": secret}}
	if where == inProperty {
		props["note"] = text
	}
	l.call("tok-transform", &pulumirpc.TransformRequest{Type: "test:index:Thing", Name: "db"},
		&pulumirpc.TransformResponse{Properties: newStruct(tb, props)})
	return l.String()
}

// views runs show on log in each form and returns what each printed: the
// text account, the -json lines and the -html page.
func views(tb testing.TB, log string, args ...string) map[string]string {
	tb.Helper()
	page := filepath.Join(tb.TempDir(), "timeline.html")
	trace := filepath.Join(tb.TempDir(), "trace.json")
	code, text, stderr := callbacklog(log, append(append([]string{"show"}, args...), "-html", page, "-trace", trace, "-")...)
	if code != exitOK {
		tb.Fatalf("show: exit %d\n%s%s", code, text, stderr)
	}
	code, js, stderr := callbacklog(log, append(append([]string{"show"}, args...), "-json", "-")...)
	if code != exitOK {
		tb.Fatalf("show -json: exit %d\n%s%s", code, js, stderr)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := os.ReadFile(trace)
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]string{"text": text, "json": js, "html": string(html), "trace": string(tr)}
}

// forms are the ways a view may print s: as it is, quoted, in JSON, with
// control characters escaped.
func forms(s string) []string {
	out := []string{s, quoteInner(s), jsonInner(s, true), jsonInner(s, false)}
	for _, f := range out[:4] {
		out = append(out, oneLine(f))
	}
	return out
}

// viewStrings returns every string a view's JSON holds: the -json lines, the
// data block of the HTML page, or the trace.
func viewStrings(tb testing.TB, form, out string) []string {
	tb.Helper()
	var docs []string
	switch form {
	case "json":
		docs = strings.Split(strings.TrimSpace(out), "\n")
	case "html":
		_, data, ok := strings.Cut(out, "const DATA = ")
		data, _, ok2 := strings.Cut(data, ";\n")
		if !ok || !ok2 {
			tb.Fatalf("the page has no data block:\n%s", out)
		}
		docs = []string{data}
	case "trace":
		docs = []string{out}
	default:
		return nil
	}
	var all []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				all = append(all, k)
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			all = append(all, v)
		}
	}
	for _, d := range docs {
		if d == "" {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			tb.Fatalf("%s: %v: %s", form, err, d)
		}
		walk(v)
	}
	return all
}

// leak returns the form of secret a view printed, or "": anywhere in it
// (and in any string of its JSON) for a secret long enough to be looked for
// inside longer strings, else as a whole string of its JSON.
func leak(tb testing.TB, form, out, secret string) string {
	tb.Helper()
	fs := forms(secret)
	strs := viewStrings(tb, form, out)
	for _, f := range fs {
		if f == "" {
			continue
		}
		for _, s := range strs {
			if s == f || s == `"`+f+`"` || len(secret) >= minSecret && strings.Contains(s, f) {
				return f
			}
		}
		if len(secret) >= minSecret && strings.Contains(out, f) {
			return f
		}
	}
	return ""
}

// TestNoSecretInMessages puts a secret in each place a program's or a
// provider's words land, in calls before the one that marks it secret: no
// view prints it, unless -secrets.
func TestNoSecretInMessages(t *testing.T) {
	const secret = "hunter2-Hunter2"
	for where := range places {
		t.Run(placeNames[where], func(t *testing.T) {
			log := secretLog(t, secret, "the provider said: "+secret+" is wrong", where)
			for form, out := range views(t, log) {
				if f := leak(t, form, out, secret); f != "" {
					t.Errorf("the %s view prints the secret (%q):\n%s", form, f, out)
				}
				if !strings.Contains(out, "the provider said: [secret] is wrong") {
					t.Errorf("the %s view does not show the words around the secret:\n%s", form, out)
				}
			}
			for form, out := range views(t, log, "-secrets") {
				if !strings.Contains(out, secret) {
					t.Errorf("with -secrets the %s view does not print the secret:\n%s", form, out)
				}
			}
		})
	}
}

// TestShortSecretsHiddenWhole: a secret shorter than minSecret bytes is
// hidden where a string is the secret whole, and left inside longer ones.
func TestShortSecretsHiddenWhole(t *testing.T) {
	const secret = "ab1"
	for _, where := range []int{inHooksRefusal, inProperty, inEngineError} {
		t.Run(placeNames[where], func(t *testing.T) {
			js := views(t, secretLog(t, secret, secret, where))["json"]
			if f := leak(t, "json", js, secret); f != "" {
				t.Errorf("a string that is the short secret %q whole is printed (%q):\n%s", secret, f, js)
			}
			js = views(t, secretLog(t, secret, "cab12 and ab1x", where))["json"]
			if !strings.Contains(js, "cab12 and ab1x") {
				t.Errorf("the short secret %q was hidden inside a longer string:\n%s", secret, js)
			}
		})
	}
}

func TestRedactor(t *testing.T) {
	set := secretSet{"abcdef12": true, "ef12gh34": true, `pa"ss<word>`: true, "1": true, "ab1": true}
	r := set.redactor()
	for _, tc := range []struct{ in, want string }{
		{"xxabcdef12gh34yy", "xx[secret]yy"},                   // two overlapping secrets: one stretch
		{"abcdef12 and ef12gh34", "[secret] and [secret]"},     // each
		{`got "pa\"ss<word>" back`, `got "[secret]" back`},     // quoted
		{`{"p":"pa\"ss\u003cword\u003e"}`, `{"p":"[secret]"}`}, // in JSON
		{"1", "[secret]"}, {`"ab1"`, "[secret]"}, {"ab12", "ab12"}, // short: whole only
		{"no secret here", "no secret here"}, {"", ""},
	} {
		if got := r.str(tc.in); got != tc.want {
			t.Errorf("str(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzNoSecretInAnyView places a random secret in a random place of a log
// (and at a random offset in the words there): no view prints it without
// -secrets, with -v (every request and answer in full) or without, and the
// JSON view does with it.
func FuzzNoSecretInAnyView(f *testing.F) {
	f.Add("hunter2-Hunter2", uint8(inErrorHooksError), uint8(3))
	f.Add("s3cr\"et\n<x>&\u2028", uint8(inHooksRefusal), uint8(0))
	f.Add("ab", uint8(inProperty), uint8(9))
	f.Add("correct horse", uint8(inEngineError), uint8(200))
	f.Add("naming-secret", uint8(inResourceName), uint8(1))
	f.Add("hooked-secret", uint8(inHookName), uint8(7))
	f.Add("\x01\x7f\u0085é secret", uint8(inProperty), uint8(4))
	f.Fuzz(func(t *testing.T, secret string, where, at uint8) {
		if secret == "" || !utf8.ValidString(secret) {
			return // a payload's strings are UTF-8
		}
		place := int(where) % places
		words := "the provider said: bucket name taken"
		text := func(s string) string {
			if len(secret) < minSecret {
				return s // a short secret is hidden only as a whole string
			}
			i := int(at) % (len(words) + 1)
			return words[:i] + s + words[i:]
		}
		const neutral = "QZQZQZ"
		// The same log with another secret: if it prints the secret, that is
		// the account's own words (a kind, a field's name, the page's script).
		for _, args := range [][]string{nil, {"-v"}} {
			for form, out := range views(t, secretLog(t, neutral, text(neutral), place), args...) {
				if leak(t, form, out, secret) != "" {
					return
				}
			}
		}
		log := secretLog(t, secret, text(secret), place)
		for _, args := range [][]string{nil, {"-v"}} {
			for form, out := range views(t, log, args...) {
				if f := leak(t, form, out, secret); f != "" {
					t.Fatalf("show %v: the %s view prints the secret %q as %q, placed in the %s:\n%s", args, form, secret, f, placeNames[place], out)
				}
			}
		}
		// A secret marked in the requests of every kind, which -v shows.
		neutralSays := false
		for form, out := range views(t, everyKindLog(t, neutral), "-v") {
			neutralSays = neutralSays || leak(t, form, out, secret) != ""
		}
		if !neutralSays {
			for form, out := range views(t, everyKindLog(t, secret), "-v") {
				if f := leak(t, form, out, secret); f != "" {
					t.Fatalf("show -v: the %s view prints the secret %q of the requests as %q:\n%s", form, secret, f, out)
				}
			}
		}
		// The words with the secret are where they were put.
		_, js, _ := callbacklog(log, "show", "-json", "-secrets", "-")
		if !slices.Contains(viewStrings(t, "json", js), text(secret)) && !slices.Contains(viewStrings(t, "json", js), strconv.Quote(text(secret))) {
			t.Fatalf("with -secrets the JSON view does not print %q, placed in the %s:\n%s", text(secret), placeNames[place], js)
		}
	})
}

// TestSecretsOfTheDeploymentHidden: a secret a provider was given (inside a
// secret envelope of its Check) and one of the configuration are hidden in
// the providers' errors and in the header's run errors, in every form.
func TestSecretsOfTheDeploymentHidden(t *testing.T) {
	const fromProvider = "s3cr3t-api-token"
	l := newLogWriter(t)
	req := map[string]any{"project": "demo", "stack": "dev", "config": map[string]string{"demo:key": demoSecret}, "configSecretKeys": []string{"demo:key"}}
	l.start("/pulumirpc.LanguageRuntime/Run", langMeta, req)
	secret := map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": fromProvider}
	l.call("/pulumirpc.ResourceProvider/Check", providerMeta, map[string]any{"urn": petURN, "news": map[string]any{"token": secret}}, map[string]any{}, nil, time.Millisecond)
	l.call("/pulumirpc.ResourceProvider/Create", providerMeta, map[string]any{"urn": petURN}, nil, []string{"token " + fromProvider + " refused"}, time.Millisecond)
	l.entry("/pulumirpc.LanguageRuntime/Run", langMeta, req, map[string]any{"error": "the key " + demoSecret + " is wrong"}, nil, "response_completed", time.Second)
	file := writeFile(t, "up.jsonl", l.b.Bytes())
	page := filepath.Join(t.TempDir(), "up.html")
	for _, args := range [][]string{{"show", file}, {"show", "-json", file}, {"show", "-html", page, file}} {
		code, out, stderr := callbacklog("", args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if args[1] == "-html" {
			out = string(readTestFile(t, page))
		}
		for _, s := range []string{fromProvider, demoSecret} {
			if strings.Contains(out, s) {
				t.Errorf("%v shows the secret %q:\n%s", args, s, out)
			}
		}
		if !strings.Contains(out, "token [secret] refused") || !strings.Contains(out, "the key [secret] is wrong") {
			t.Errorf("%v does not show the errors with their secrets hidden:\n%s", args, out)
		}
	}
	// With -secrets they are shown.
	if _, out, _ := callbacklog("", "show", "-secrets", file); !strings.Contains(out, "token "+fromProvider+" refused") {
		t.Errorf("-secrets hides the provider's error:\n%s", out)
	}
}
