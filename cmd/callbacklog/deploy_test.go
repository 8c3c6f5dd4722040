package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// logWriter writes a gRPC log by hand, two entries per call, as CLI
// 3.274.1 writes it; each entry is a millisecond after the last.
type logWriter struct {
	tb    testing.TB
	b     bytes.Buffer
	now   time.Time
	lines int
}

var (
	langMeta     = map[string]string{"kind": "language", "mode": "client", "runtime": "go"}
	providerMeta = map[string]string{"kind": "resource", "mode": "client", "name": "random"}
	callbackMeta = map[string]string{"kind": "callbacks", "mode": "client"}
	monitorMeta  = map[string]string{"mode": "server"}
)

func newLogWriter(tb testing.TB) *logWriter {
	return &logWriter{tb: tb, now: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
}

// entry writes one entry and returns its line; a server's request_started
// has the zero time, as the engine writes it.
func (l *logWriter) entry(method string, meta map[string]string, req, res any, errs []string, progress string, took time.Duration) int {
	l.tb.Helper()
	l.now = l.now.Add(time.Millisecond + took)
	// The engine's order of members: the method first.
	e := logEntry{Method: method, Request: req, Metadata: meta, Progress: progress, Timestamp: l.now.Format(time.RFC3339Nano)}
	if progress == "request_started" && meta["mode"] == "server" {
		e.Timestamp = "0001-01-01T00:00:00Z"
	}
	if progress == "response_completed" {
		e.Response, e.Errors, e.Duration = res, errs, int64(took)
	}
	data, err := json.Marshal(e)
	if err != nil {
		l.tb.Fatal(err)
	}
	l.b.Write(append(data, '\n'))
	l.lines++
	return l.lines
}

// call writes a call's two entries; it returns the completing line.
func (l *logWriter) call(method string, meta map[string]string, req, res any, errs []string, took time.Duration) int {
	l.entry(method, meta, req, nil, nil, "request_started", 0)
	return l.entry(method, meta, req, res, errs, "response_completed", took)
}

// start writes a call's request_started entry alone, a call never
// answered; it returns its line.
func (l *logWriter) start(method string, meta map[string]string, req any) int {
	return l.entry(method, meta, req, nil, nil, "request_started", 0)
}

func payload(tb testing.TB, m proto.Message) string {
	tb.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

const (
	demoSecret = "hunter2-password"
	petURN     = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	dbURN      = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::db"
)

// deploymentLog is the log of `pulumi up --yes` without --skip-preview of
// a program with a before-create hook on two RandomPets and a secret in
// its configuration: a preview that succeeds, then an update in which pet's
// Create fails with the secret in its error, and the log ends while the
// hook is called for db and db's Check waits: both never answered.
func deploymentLog(tb testing.TB) (log string, hookLine, checkLine int) {
	l := newLogWriter(tb)
	l.call("/pulumirpc.LanguageRuntime/GetPluginInfo", langMeta, map[string]any{}, map[string]any{"version": "3.274.1"}, nil, time.Millisecond)
	for _, dryRun := range []bool{true, false} {
		req := map[string]any{
			"project": "demo", "stack": "dev", "organization": "acme", "dryRun": dryRun,
			"config": map[string]string{"demo:password": demoSecret}, "configSecretKeys": []string{"demo:password"},
		}
		l.start("/pulumirpc.LanguageRuntime/Run", langMeta, req)
		token := "tok-preview"
		if !dryRun {
			token = "tok-update"
		}
		hook := map[string]any{"name": "check-owner", "callback": map[string]any{"target": "127.0.0.1:1", "token": token}}
		l.call("/pulumirpc.ResourceMonitor/RegisterResourceHook", monitorMeta, hook, map[string]any{}, nil, 0)
		for _, urn := range []string{petURN, dbURN} {
			name := urn[strings.LastIndex(urn, "::")+2:]
			reg := map[string]any{
				"type": "random:index/randomPet:RandomPet", "name": name, "custom": true,
				"parent": "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev", "hooks": map[string]any{"beforeCreate": []string{"check-owner"}},
				"sourcePosition": map[string]any{"uri": "file:///go/pkg/mod/github.com/pulumi/pulumi/sdk/v3@v3.274.1/go/pulumi/context.go", "line": 10},
			}
			l.start("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, reg)
			check := map[string]any{"urn": urn, "news": map[string]any{"length": 2}, "name": name, "type": "random:index/randomPet:RandomPet"}
			if !dryRun && urn == dbURN {
				// The log ends here: the hook was called for db and its
				// Check waits.
				hookReq := payload(tb, &pulumirpc.ResourceHookRequest{Urn: urn, Name: name, Type: "random:index/randomPet:RandomPet"})
				hookLine := l.start("/pulumirpc.Callbacks/Invoke", callbackMeta, map[string]any{"token": token, "request": hookReq})
				checkLine := l.start("/pulumirpc.ResourceProvider/Check", providerMeta, check)
				l.now = l.now.Add(2 * time.Second)
				l.start("/pulumirpc.ResourceMonitor/RegisterResourceOutputs", monitorMeta, map[string]any{})
				l.entry("/pulumirpc.ResourceProvider/GetPluginInfo", providerMeta, map[string]any{}, nil, nil, "request_started", 0)
				return l.b.String(), hookLine, checkLine
			}
			l.call("/pulumirpc.ResourceProvider/Check", providerMeta, check, map[string]any{"inputs": map[string]any{"length": 2}}, nil, 2*time.Millisecond)
			if dryRun {
				l.call("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, reg, map[string]any{"urn": urn}, nil, 0)
				continue
			}
			hookReq := payload(tb, &pulumirpc.ResourceHookRequest{Urn: urn, Name: name, Type: "random:index/randomPet:RandomPet"})
			l.call("/pulumirpc.Callbacks/Invoke", callbackMeta, map[string]any{"token": token, "request": hookReq},
				map[string]any{"response": payload(tb, &pulumirpc.ResourceHookResponse{})}, nil, 3*time.Millisecond)
			l.call("/pulumirpc.ResourceProvider/Create", providerMeta, map[string]any{"urn": urn, "properties": map[string]any{"length": 2}},
				nil, []string{"rpc error: code = Unknown desc = the password " + demoSecret + " was refused"}, 5*time.Millisecond)
			l.call("/pulumirpc.ResourceMonitor/RegisterResource", monitorMeta, reg, map[string]any{"urn": urn}, nil, 0)
		}
		l.entry("/pulumirpc.LanguageRuntime/Run", langMeta, req, map[string]any{}, nil, "response_completed", 20*time.Millisecond)
	}
	tb.Fatal("unreachable")
	return "", 0, 0
}

func TestDeploymentAroundTheCalls(t *testing.T) {
	log, hookLine, checkLine := deploymentLog(t)
	file := writeFile(t, "up.jsonl", []byte(log))
	code, text, stderr := callbacklog("", "show", file)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, text, stderr)
	}
	golden(t, "deployment.txt", []byte(text))
	if strings.Contains(text, demoSecret) {
		t.Errorf("the account shows the configuration's secret:\n%s", text)
	}
	// What never answered comes first, before any run.
	never := strings.Index(text, "never answered (the log ends")
	preview := strings.Index(text, "== preview (log line 3): succeeded")
	update := strings.Index(text, "== update (log line 17): did not end in the log")
	if never < 0 || preview < 0 || update < 0 || !(never < preview && preview < update) {
		t.Fatalf("the account does not list what never answered, then the preview, then the update:\n%s", text)
	}
	top := text[never:preview]
	for _, want := range []string{
		"#2  resource hook  check-owner  " + dbURN,
		"started on line " + itoa(hookLine) + " in the update, had run 2.00s when the log ended",
		"-  provider step  Check (random)  " + dbURN,
		"started on line " + itoa(checkLine) + " in the update, had run 2.00s when the log ended",
	} {
		if !strings.Contains(top, want) {
			t.Errorf("what never answered does not say %q:\n%s", want, top)
		}
	}
	for _, want := range []string{
		"  project       demo", "  stack         dev", "  organization  acme", "  CLI           3.274.1", "  SDK           v3.274.1",
		"  runs          preview (log line 3)", "update (log line 17)",
		"failed  ", "error: rpc error: code = Unknown desc = the password [secret] was refused",
		"time split    2.01s in callbacks, 2.01s in 5 provider steps",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the account does not say %q:\n%s", want, text)
		}
	}
	// The error hook's row would sit beside the failed Create: the steps
	// are in the resource's calls, in the order of the log.
	pet := regexp.MustCompile(`(?s)== update.*?"pet"\n(.*?)\n\n`).FindStringSubmatch(text)
	if pet == nil || !regexp.MustCompile(`(?s)Check \(random\).*#1  .*check-owner.*Create \(random\)\s+failed`).MatchString(pet[1]) {
		t.Errorf("the update's pet does not show Check, the hook, then the failed Create:\n%s", text)
	}

	code, js, stderr := callbacklog("", "show", "-json", file)
	if code != exitOK {
		t.Fatalf("-json: exit %d: %s", code, stderr)
	}
	if strings.Contains(js, demoSecret) {
		t.Errorf("-json shows the secret:\n%s", js)
	}
	lines := strings.Split(strings.TrimSuffix(js, "\n"), "\n")
	var head struct {
		Deployment struct {
			Project, Stack, Organization, CLI, SDK string
			Runs                                   []struct {
				Name, Result, Error string
				Line                int
			}
			Unanswered int
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil {
		t.Fatal(err)
	}
	h := head.Deployment
	if h.Project != "demo" || h.Stack != "dev" || h.Organization != "acme" || h.CLI != "3.274.1" || h.SDK != "v3.274.1" || h.Unanswered != 2 ||
		len(h.Runs) != 2 || h.Runs[0].Name != "preview" || h.Runs[0].Result != "succeeded" || h.Runs[1].Name != "update" ||
		h.Runs[1].Result != "did not end in the log" || !strings.Contains(h.Runs[1].Error, "[secret]") {
		t.Errorf("the first line does not tell the deployment: %s", lines[0])
	}
	type obj struct {
		Run      string
		Answered *bool
		Seq      int
		Kind     string
		Line     int
		Provider *struct{ Name, Method string }
	}
	var objs []obj
	var wouldRun []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, `{"wouldRun":`) {
			wouldRun = append(wouldRun, l)
			continue
		}
		var o obj
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatal(err)
		}
		if o.Run == "" {
			t.Errorf("a line has no run: %s", l)
		}
		objs = append(objs, o)
	}
	if len(objs) < 2 || objs[0].Answered == nil || *objs[0].Answered || objs[0].Line != hookLine || objs[0].Seq != 2 ||
		objs[1].Answered == nil || *objs[1].Answered || objs[1].Line != checkLine || objs[1].Provider == nil || objs[1].Provider.Method != "Check" {
		t.Errorf("the lines do not start with the calls never answered, marked so:\n%s", js)
	}
	// What an update would run, told by the preview: pet and db, each
	// created with its before-create hook, then what is about no resource.
	if len(wouldRun) != 3 || !strings.Contains(wouldRun[0], `"name":"pet"`) || !strings.Contains(wouldRun[1], `"name":"db"`) ||
		!strings.Contains(wouldRun[1], `"hooks":[{"moment":"before-create","name":"check-owner","step":"create: no prior state"}]`) ||
		!strings.Contains(wouldRun[2], `"deletes":"cannot tell: `) {
		t.Errorf("-json does not say what an update would run:\n%s", strings.Join(wouldRun, "\n"))
	}
	for _, o := range objs[2:] {
		if o.Answered != nil {
			t.Errorf("an answered call is marked unanswered: %+v", o)
		}
	}

	// The timeline: runs apart, what never answered first and marked.
	chromium(t)
	page := filepath.Join(t.TempDir(), "up.html")
	if code, _, stderr := callbacklog("", "show", "-html", page, file); code != exitOK {
		t.Fatalf("-html: exit %d: %s", code, stderr)
	}
	dom, logged := browse(t, page, "--dump-dom")
	recs, _, d := readLog(strings.NewReader(log), false, false)
	checkPage(t, dom, logged, recs, d.Steps)
	if strings.Contains(dom, demoSecret) {
		t.Errorf("the page shows the secret")
	}
	heads := regexp.MustCompile(`class="row run-head" data-run="([^"]*)"`).FindAllStringSubmatch(dom, -1)
	if len(heads) != 2 || heads[0][1] != "preview (log line 3)" || heads[1][1] != "update (log line 17)" {
		t.Errorf("the timeline's runs are %v, want the preview then the update", heads)
	}
	un := section(dom, `<div id="unanswered"`)
	for _, want := range []string{"Never answered", "check-owner", "provider Check (random)", "started on log line " + itoa(hookLine), "had run 2.00s"} {
		if !strings.Contains(un, want) {
			t.Errorf("the page's list of calls never answered does not say %q:\n%s", want, un)
		}
	}
	if i, j := strings.Index(dom, `id="unanswered"`), strings.Index(dom, `id="timeline"`); i < 0 || i > j {
		t.Errorf("the calls never answered are not above the timeline")
	}
	for _, want := range []string{"project <b>demo</b>", `data-run="update (log line 17)">update (log line 17): did not end in the log`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}
