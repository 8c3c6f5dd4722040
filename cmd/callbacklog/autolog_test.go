package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/cmd/callbacklog/testdata/sdkprogram/secret"
)

// pv encodes a property map as the engine logs it: base64 of "pulumiPv"
// and a binary google.protobuf.Value.
func pv(tb testing.TB, props map[string]any) string {
	tb.Helper()
	v, err := structpb.NewValue(props)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := proto.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	magic := binary.LittleEndian.AppendUint64(nil, propertyValueMagic)
	return base64.StdEncoding.EncodeToString(append(magic, b...))
}

// secretValue is a property value marked secret, as a decoded Value holds
// it.
func secretValue(v any) map[string]any {
	return map[string]any{sig.Key: sig.Secret, "value": v}
}

// autoLines writes msgs as lines of a decrypted automatic log, a
// millisecond apart, after a line that shows a deployment.
func autoLines(tb testing.TB, msgs ...string) string {
	tb.Helper()
	var b strings.Builder
	msgs = append([]string{"deploymentExecutor.Execute(...): starting"}, msgs...)
	for i, m := range msgs {
		line, err := json.Marshal(map[string]any{
			"level": "INFO", "msg": m, "v": 5,
			"time": fmt.Sprintf("2026-11-29T09:44:21.%03dZ", i),
		})
		if err != nil {
			tb.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func readAutoString(tb testing.TB, log string, secrets bool) ([]*record, []problem) {
	tb.Helper()
	recs, problems, _ := readAutoLog(strings.NewReader(log), secrets)
	return recs, problems
}

const parent = "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev"

func before(tb testing.TB, name string, props map[string]any) string {
	return fmt.Sprintf("Transform: name=%s type=random:index/randomPet:RandomPet custom=true parent=%s props=%s opts=map[custom_timeouts:map[]]",
		name, parent, pv(tb, props))
}

func after(tb testing.TB, props map[string]any, opts string) string {
	return fmt.Sprintf("Transform: props=%s opts=%s", pv(tb, props), opts)
}

func outcomes(recs []*record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Name + " " + r.Outcome
	}
	return out
}

// TestAutoLogTransformPairing: an after line names no resource, so it is
// paired with a before only while that one transform is running.
func TestAutoLogTransformPairing(t *testing.T) {
	a := map[string]any{"length": 2.0}
	changed := map[string]any{"length": 2.0, "prefix": "tx"}
	plain := "map[custom_timeouts:map[]]"
	for _, c := range []struct {
		name string
		msgs []string
		want []string
	}{
		{"one at a time", []string{before(t, "a", a), after(t, changed, plain), before(t, "b", a), after(t, a, plain)},
			[]string{"a changed", "b unchanged"}},
		{"two at once", []string{before(t, "a", a), before(t, "b", a), after(t, a, plain), after(t, changed, plain)},
			[]string{"a unknown", "b unknown"}},
		{"a third while the answers come", []string{before(t, "a", a), before(t, "b", a), after(t, a, plain),
			before(t, "c", a), after(t, a, plain), after(t, a, plain)},
			[]string{"a unknown", "b unknown", "c unknown"}},
		{"one at a time again after", []string{before(t, "a", a), before(t, "b", a), after(t, a, plain), after(t, a, plain),
			before(t, "c", a), after(t, changed, plain)},
			[]string{"a unknown", "b unknown", "c changed"}},
		{"no answer", []string{before(t, "a", a)}, []string{"a unknown"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, problems := readAutoString(t, autoLines(t, c.msgs...), false)
			if len(problems) > 0 {
				t.Errorf("problems: %v", problems)
			}
			equalLists(t, "the outcomes", outcomes(recs), c.want)
			for _, r := range recs {
				if r.Outcome == "unknown" && (!r.NoDuration || r.Note == "" || r.Given != `{"length": 2}`) {
					t.Errorf("%s: an unknown answer with duration given %v, note %q, given %q", r.Name, !r.NoDuration, r.Note, r.Given)
				}
				if r.Outcome == "changed" && fmt.Sprint(r.Changes) != `[{properties.prefix (absent) "tx"}]` {
					t.Errorf("%s changed %v", r.Name, r.Changes)
				}
			}
		})
	}
}

func TestAutoLogOptionChanges(t *testing.T) {
	got := optionChanges("map[custom_timeouts:map[] protect:false]",
		"map[custom_timeouts:map[] hooks:map[on_error:[retry throttled]] protect:true]")
	want := `[{options.hooks (absent) map[on_error:[retry throttled]]} {options.protect false true}]`
	if fmt.Sprint(got) != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := optionChanges("map[a:[b]", "map[]"); len(got) != 1 || got[0].Path != "options" {
		t.Errorf("text that is not a map is compared whole: got %v", got)
	}
}

// TestAutoLogHookPairing: a hook's answer names the resource, not the hook,
// so it is paired by the resource's name, and only while one call about a
// resource of that name is running.
func TestAutoLogHookPairing(t *testing.T) {
	pet := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	otherPet := "urn:pulumi:dev::demo::other:index/Pet:Pet::pet"
	token := "urn:pulumi:dev::demo::random:index/randomString:RandomString::token"
	log := autoLines(t,
		`calling hook "audit" for urn `+pet,
		`ResourceHook calling hook "pet" for urn `+pet,
		`calling hook "audit" for urn `+token,
		`ResourceHook calling hook "token" for urn `+token,
		`ResourceHook token returned "no token today"`,
		`ResourceHook pet returned ""`,
		`calling hook "naming" for urn `+pet,
		`calling hook "naming" for urn `+otherPet,
		`ResourceHook pet returned ""`,
		`ResourceHook pet returned "bad name"`,
		`Provider[0xc0001].Create(`+token+`) failed: throttled`,
		`calling error hook "retry" for urn `+token,
		`ErrorHook calling hook "token" for urn `+token,
		`ErrorHook token returned "", retry=true`,
		`Provider[0xc0001].Create(`+token+`) failed: throttled again`,
		`calling error hook "retry" for urn `+token,
		`ErrorHook token returned "", retry=false`,
	)
	recs, problems := readAutoString(t, log, false)
	if len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource hook audit ok",
		"token: resource hook audit refused",
		"pet: resource hook naming unknown",
		"pet: resource hook naming unknown",
		"token: error hook retry retry",
		"token: error hook retry no retry",
	})
	if len(recs) == 6 {
		if recs[1].Message != "no token today" {
			t.Errorf("the refusal is %q", recs[1].Message)
		}
		if r := recs[5]; r.Op != "create" || r.Attempt != 2 || r.Message != "throttled again" {
			t.Errorf("the second error hook call saw %s attempt %d %q, want create attempt 2 \"throttled again\"", r.Op, r.Attempt, r.Message)
		}
		if r := recs[2]; !strings.Contains(r.Note, "resources named \"pet\"") {
			t.Errorf("the note of an uncertain hook call: %q", r.Note)
		}
	}
}

// TestAutoLogSecrets: values a logged property value marks secret are
// hidden wherever the account prints them, unless -secrets.
func TestAutoLogSecrets(t *testing.T) {
	const pw = "correct-horse-battery"
	pet := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	log := autoLines(t,
		before(t, "pet", map[string]any{"length": 2.0}),
		after(t, map[string]any{"length": 2.0, "password": secretValue(pw)}, "map[custom_timeouts:map[]]"),
		`calling hook "audit" for urn `+pet,
		`ResourceHook pet returned "the password `+pw+` is too short"`,
	)
	recs, _ := readAutoString(t, log, false)
	var text bytes.Buffer
	if err := writeText(&text, "x", fromAuto, recs, nil, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), pw) || !strings.Contains(text.String(), "properties.password  (absent) → [secret]") ||
		!strings.Contains(text.String(), "refused: the password [secret] is too short") {
		t.Errorf("the account:\n%s", text.String())
	}
	recs, _ = readAutoString(t, log, true)
	if len(recs) != 2 || !strings.Contains(recs[1].Message, pw) || !strings.Contains(fmt.Sprint(recs[0].Changes), pw) {
		t.Errorf("with -secrets, the secret is not shown: %+v %+v", recs[0].Changes, recs[1])
	}
}

func TestAutoLogMigration(t *testing.T) {
	pet := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	old := pv(t, map[string]any{"keepers": map[string]any{"owner": "infra"}})
	nw := pv(t, map[string]any{"keepers": map[string]any{"team": "infra"}})
	lines := []map[string]any{
		{"level": "INFO", "msg": "deploymentExecutor.Execute(...): starting", "time": "2026-11-29T09:45:43.0Z"},
		{"level": "DEBUG", "msg": "state migration prior resource", "rootURN": pet, "resourceURN": pet, "inputs": old, "outputs": old, "time": "2026-11-29T09:45:43.1Z"},
		{"level": "DEBUG", "msg": "running state migration", "urn": pet, "migrationNumber": 1, "migrationCount": 1, "time": "2026-11-29T09:45:43.2Z"},
		{"level": "INFO", "msg": "StateMigration: urn=" + pet, "time": "2026-11-29T09:45:43.2Z"},
		{"level": "DEBUG", "msg": "state migration result resource", "rootURN": pet, "resourceURN": pet, "inputs": nw, "outputs": old, "time": "2026-11-29T09:45:43.5Z"},
		{"level": "INFO", "msg": "state migration applied", "rootURN": pet, "time": "2026-11-29T09:45:43.6Z"},
	}
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	recs, problems := readAutoString(t, b.String(), false)
	if len(problems) > 0 {
		t.Errorf("problems: %v", problems)
	}
	equalLists(t, "the calls", shapes(recs), []string{"pet: state migration migration #1 migrated"})
	if len(recs) == 1 {
		want := `[{inputs.keepers.owner "infra" (absent)} {inputs.keepers.team (absent) "infra"}]`
		if fmt.Sprint(recs[0].Changes) != want || recs[0].Duration.Milliseconds() != 300 {
			t.Errorf("the migration changed %v in %v, want %s in 300ms", recs[0].Changes, recs[0].Duration, want)
		}
	}
}

// TestAutoLogBadLines: a line that is not JSON, a property value that does
// not decode, and a last line cut short are problems naming their lines;
// the rest is read.
func TestAutoLogBadLines(t *testing.T) {
	log := autoLines(t,
		before(t, "a", map[string]any{"length": 2.0}),
		after(t, map[string]any{"length": 3.0}, "map[custom_timeouts:map[]]"),
		"Transform: name=b type=random:index/randomPet:RandomPet custom=true parent="+parent+" props=cHVsdW1pUHYq/w== opts=map[]",
		"callbacks: call 1 (a record this command does not read yet)",
	)
	log = strings.Replace(log, "\n", "\nthis is not JSON\n", 1) // after line 1
	log += `{"level":"INFO","msg":"Transform: props=`

	var stdout, stderr bytes.Buffer
	code := run([]string{"show", "-"}, strings.NewReader(log), &stdout, &stderr)
	if code != exitUnreadable {
		t.Errorf("exit %d, want %d", code, exitUnreadable)
	}
	for _, want := range []string{
		"#1  +0.000s  resource transform  transform  changed",
		"properties.length  2 → 3",
		"line 2: not a line of the log (JSON)",
		"line 5: the transform's properties (props=) do not decode",
		"line 7: the line is cut short",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the account has no %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "callbacks: call") {
		t.Errorf("the account shows a line it does not know:\n%s", stdout.String())
	}
}

func TestAutoLogRefusals(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"encrypted", "PLOG\x01\x00Tv1:jrsUoYKcc08A0QpI:p/0lu/VOvv3Opgd11\x93\x00\x12", "still encrypted: decrypt it first"},
		{"no deployment", `{"level":"INFO","msg":"CLI Metadata","metadata":{"Command":"pulumi config set"},"time":"2026-11-29T09:45:41Z"}` + "\n" +
			`{"level":"INFO","msg":"skipping update check","time":"2026-11-29T09:45:41Z"}` + "\n",
			"automatic log of pulumi config set, which ran no deployment"},
		{"neither log", "hello\nworld\n", "is not an engine gRPC log"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"show", "-"}, strings.NewReader(c.in), &stdout, &stderr)
			if code != exitFile || !strings.Contains(stderr.String(), c.want) || stdout.Len() > 0 ||
				strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and one line with %q", code, stdout.String(), stderr.String(), exitFile, c.want)
			}
		})
	}
	// A deployment without callback calls is a log: the account says so.
	out := showTextFrom(t, autoLines(t, "EvalSourceIterator produced a registration"))
	if !strings.Contains(out, "no callback calls") || !strings.Contains(out, "automatic log") {
		t.Errorf("the account of a deployment without callbacks:\n%s", out)
	}
}

func showTextFrom(t *testing.T, in string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"show", "-"}, strings.NewReader(in), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// TestAutoLogRecorded reads real decrypted logs kept in testdata/autologs
// (recorded by TestAutoLogOf… with CALLBACKLOG_RECORD_DIR, their paths
// replaced) and compares the accounts with the golden files beside them.
func TestAutoLogRecorded(t *testing.T) {
	logs, _ := filepath.Glob("testdata/autologs/*.jsonl")
	if len(logs) == 0 {
		t.Fatal("no recorded automatic log in testdata/autologs")
	}
	for _, log := range logs {
		name := strings.TrimSuffix(filepath.Base(log), ".jsonl")
		t.Run(name, func(t *testing.T) {
			text := showText(t, log)
			golden(t, filepath.Join("autologs", name+".txt"), []byte(text))
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte(secret.Value)) && strings.Contains(text+showText(t, "-json", log), secret.Value) {
				t.Errorf("the account prints the secret the log holds")
			}
		})
	}
}
