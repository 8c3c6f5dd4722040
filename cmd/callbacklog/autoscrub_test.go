package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/cmd/callbacklog/testdata/sdkprogram/secret"
	"github.com/langhost/callbacks/internal/redact"
)

// pvOf encodes any property value as the engine logs it.
func pvOf(tb testing.TB, v any) string {
	tb.Helper()
	val, err := structpb.NewValue(v)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := proto.Marshal(val)
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(append(binary.LittleEndian.AppendUint64(nil, propertyValueMagic), b...))
}

// scrubAutoString scrubs a log held in a string, as scrub does.
func scrubAutoString(tb testing.TB, log string) string {
	tb.Helper()
	var out bytes.Buffer
	again := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(log)), nil }
	if err := scrubAutoLog(&out, strings.NewReader(log), again); err != nil {
		tb.Fatalf("scrubbing: %v", err)
	}
	return out.String()
}

// survivors says where a secret is still in a scrubbed log: in a line's
// text, in any form (as it is, Go-quoted, JSON-escaped, in base64 at any
// alignment), in any string the line's JSON holds, inside every property
// value decoded, and inside every run of base64 decoded.
func survivors(log, secret string) []string {
	var found []string
	forms := []string{secret, quoteInner(secret), jsonInner(secret, true), jsonInner(secret, false)}
	prints := base64Prints([]byte(secret))
	for n, line := range strings.Split(log, "\n") {
		for _, f := range append(forms, prints...) {
			if strings.Contains(line, f) {
				found = append(found, fmt.Sprintf("line %d holds %q", n+1, f))
			}
		}
		v, _ := redact.Decode([]byte(line))
		m, ok := v.(map[string]any)
		if !ok {
			continue
		}
		var strs []string
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					strs = append(strs, k)
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			case string:
				strs = append(strs, x)
			case json.Number:
				strs = append(strs, string(x))
			}
		}
		walk(m)
		for i := 0; i < len(strs); i++ {
			str := strs[i]
			for _, f := range append(forms, prints...) {
				if strings.Contains(str, f) {
					found = append(found, fmt.Sprintf("line %d: a decoded string holds %q: %q", n+1, f, str))
				}
			}
			for _, run := range rePropertyValue.FindAllString(str, -1) {
				if v, err := decodePropertyValue(run); err == nil {
					walk(v.AsInterface())
				}
			}
			for _, run := range reBase64.FindAllString(str, -1) {
				for _, enc := range base64Encodings {
					raw, err := enc.DecodeString(run)
					if err != nil {
						continue
					}
					for _, f := range forms {
						if bytes.Contains(raw, []byte(f)) {
							found = append(found, fmt.Sprintf("line %d: base64 holds %q: %q", n+1, f, run))
						}
					}
				}
			}
		}
	}
	return found
}

// TestScrubAutoLog scrubs a constructed automatic log that holds secrets in
// every place and form the engine and the module write them: each is
// replaced, by the same placeholder everywhere, the providers'
// configuration too, and show reads the scrubbed log as the original.
func TestScrubAutoLog(t *testing.T) {
	const (
		pw     = "correct-horse-battery"   // marked in a transform's properties
		quoted = `pa"ss\word <9>`          // marked too, written Go-quoted and JSON-escaped
		text   = "only-in-text-9f3a"       // marked only in an engine's text line
		env    = "envelope-secret-77e1"    // marked in a JSON member
		key    = "provider-api-key-0c41"   // a provider's secret configuration
		region = "eu-central-hypothetical" // a provider's configuration
	)
	pet := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	withPrefix := base64.StdEncoding.EncodeToString([]byte("x:" + pw + ";"))
	lines := autoLines(t,
		// Before the line that marks it.
		`calling hook "audit" for urn `+pet,
		`ResourceHook pet returned "the password `+pw+` is wrong"`,
		before(t, "pet", map[string]any{"length": 2.0}),
		after(t, map[string]any{"length": 2.0, "password": secretValue(pw), "note": secretValue(quoted)}, "map[custom_timeouts:map[]]"),
		"Marshaling property for RPC[ResourceMonitor.RegisterResource(random:index/randomPet:RandomPet,pet)]: value="+pvOf(t, pw)+
			" keyed="+pvOf(t, map[string]any{pw: 1.0}),
		"Unmarshaling property for RPC[ResourceMonitor.Transform(x, random:index/randomPet:RandomPet, pet)]: token=map[V:map[Element:map[V:"+text+"]]]",
		"token was "+text+" then "+base64.StdEncoding.EncodeToString(must(json.Marshal(map[string]string{"note": quoted}))),
		"payload "+base64.StdEncoding.EncodeToString([]byte(pw))+" and "+withPrefix+" and x"+withPrefix,
		fmt.Sprintf("ResourceHook pet returned %q", "bad note: "+quoted),
		"Marshaling property for RPC[Provider[0x1].CheckConfig(urn:pulumi:dev::demo::pulumi:providers:random::default).news]: apiKey="+
			pvOf(t, secretValue(key))+" region="+pvOf(t, region)+" retries="+pvOf(t, 3.0),
		"the key "+key+" and "+base64.RawURLEncoding.EncodeToString([]byte(key)),
		"state: "+string(must(json.Marshal(map[string]string{"note": quoted}))),
		// As 3.260.0 writes a provider's configuration.
		"Unmarshaling property for RPC[Provider[0x1].CheckConfig(urn:pulumi:dev::demo::pulumi:providers:random::default).inputs]: region=map[V:"+region+"] retries=map[V:3]",
	)
	lines += `{"level":"INFO","msg":"migration state","state":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"` + env + `"},"note":"` + env + ` again","time":"2026-11-29T09:44:22Z"}` + "\n"
	lines += `{"callbacks.call_id":"c-1","callbacks.error":"hook failed: ` + pw + `","callbacks.module":"github.com/langhost/callbacks","callbacks.outcome":"error","callbacks.schema":1,"level":"WARN","msg":"callbacks: call finished","pulumi.callback.kind":"resource_hook","pulumi.callback.name":"audit","time":"2026-11-29T09:44:23Z"}` + "\n"
	lines += "this line is not JSON: " + pw + "\n"
	lines += `{"level":"INFO","msg":"the log ends inside ` + pw

	out := scrubAutoString(t, lines)
	for _, s := range []string{pw, quoted, text, env, key, region} {
		for _, w := range survivors(out, s) {
			t.Errorf("%q survives: %s", s, w)
		}
	}
	// The same value, the same placeholder, in every form it was in.
	outLines := strings.Split(out, "\n")
	ph := func(line int) string {
		i := strings.Index(outLines[line-1], "[secret ")
		if i < 0 {
			t.Fatalf("line %d has no placeholder: %s", line, outLines[line-1])
		}
		return outLines[line-1][i : i+strings.Index(outLines[line-1][i:], "]")+1]
	}
	pwPH := ph(3)
	for _, n := range []int{16} {
		if got := ph(n); got != pwPH {
			t.Errorf("line %d replaces the password with %s, line 3 with %s", n, got, pwPH)
		}
	}
	if pwPH != "[secret 2]" {
		t.Errorf("the password's placeholder is %s, want [secret 2]: numbered by first appearance (after the note's)", pwPH)
	}
	recs, _ := readAutoString(t, out, true)
	if len(recs) < 2 || !strings.Contains(fmt.Sprint(recs[1].Changes), pwPH) || !strings.Contains(fmt.Sprint(recs[1].Changes), "[secret 1]") {
		t.Errorf("read with -secrets, the scrubbed transform changed %+v, want the placeholders", recs[1:])
	}
	for _, want := range []string{
		base64.StdEncoding.EncodeToString([]byte(pwPH)),
		base64.StdEncoding.EncodeToString([]byte("x:" + pwPH + ";")),
		"[scrubbed: base64 holding a secret]",
		"[scrubbed: line 17 was not a JSON object and was removed]",
		"[scrubbed: line 18 was cut short and was removed]",
		"keyed=" + "[scrubbed: base64 holding a secret]", // a secret as a key: the value is removed whole
		"region=map[V:[config 1]] retries=map[V:[config 2]]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the scrubbed log has no %q:\n%s", want, out)
		}
	}
	// Configuration: replaced in the line about it, numbers as well.
	if cfg := outLines[10]; !strings.Contains(cfg, "apiKey=") {
		t.Errorf("line 11 is not the configuration's: %s", cfg)
	} else {
		var got []string
		for _, run := range rePropertyValue.FindAllString(cfg, -1) {
			v, err := decodePropertyValue(run)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(v.AsInterface())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(b))
		}
		want := []string{`{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"[secret 4]"}`, `"[config 1]"`, `"[config 2]"`}
		if !slices.Equal(got, want) {
			t.Errorf("the configuration's values are now %v, want %v", got, want)
		}
	}
	if again := scrubAutoString(t, out); again != out {
		t.Errorf("scrubbing the scrubbed log changed it:\n%s", lineDiff(out, again))
	}
	// A line with nothing to scrub is copied as it was.
	in := strings.Split(lines, "\n")
	if outLines[0] != in[0] {
		t.Errorf("the first line changed:\n%s\n%s", in[0], outLines[0])
	}
	// show reads the scrubbed log as it read the original: the same calls,
	// and no line it cannot read but the one removed.
	orig, origProblems := readAutoString(t, lines, false)
	scrubbed, problems := readAutoString(t, out, false)
	equalLists(t, "the calls of the scrubbed log", shapes(scrubbed), shapes(orig))
	if len(problems) != len(origProblems) {
		t.Errorf("the scrubbed log has %d lines show cannot read (%v), the original %d", len(problems), problems, len(origProblems))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestConfigLines: the lines whose property values are a provider's
// configuration, and lines that only refer to a provider.
func TestConfigLines(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{"Marshaling property for RPC[Provider[0x1].CheckConfig(urn:pulumi:dev::p::pulumi:providers:random::default).news]: k=x", true},
		{"Provider[0x1].Configure() executing (#vars=1)", true},
		{"Planner decided to create 'urn:pulumi:dev::p::pulumi:providers:random::default' (inputs=x)", true},
		{"Planner decided to create 'urn:pulumi:dev::p::my:comp$pulumi:providers:aws::p' (inputs=x)", true},
		{"Transform: name=p type=pulumi:providers:aws custom=true parent=urn:x props=x opts=map[]", true},
		{"ResourceMonitor.RegisterResource received: t=pulumi:providers:aws, name=p", true},
		{"Marshaling property for RPC[ResourceMonitor.RegisterResource(pulumi:providers:aws,p)]: region=x", true},
		{"ResourceMonitor.RegisterResource received: t=random:index/randomPet:RandomPet, name=pet, provider=urn:pulumi:dev::p::pulumi:providers:random::default::0a1b, deps=x", false},
		{"Planner decided to create 'urn:pulumi:dev::p::random:index/randomPet:RandomPet::pet' (inputs=x)", false},
		{"Transform: name=pet type=random:index/randomPet:RandomPet custom=true parent=urn:x props=x opts=map[provider:urn:pulumi:dev::p::pulumi:providers:random::default]", false},
	} {
		if got := isConfigLine(c.msg); got != c.want {
			t.Errorf("isConfigLine(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}

// TestBase64Prints: a secret's prints are found in the base64 of any bytes
// that hold it, at any offset, in either alphabet.
func TestBase64Prints(t *testing.T) {
	secrets := []string{"abcdef", "sdkprogram-secret-b7c1e9", "\x00\xff\x10 é ü"}
	for _, s := range secrets {
		prints := base64Prints([]byte(s))
		if len(prints) != 6 {
			t.Errorf("%q: %d prints, want two alphabets at three alignments", s, len(prints))
		}
		for pre := range 5 {
			for post := range 3 {
				b := append(append(bytes.Repeat([]byte{'>'}, pre), s...), bytes.Repeat([]byte{'<'}, post)...)
				for _, enc := range base64Encodings {
					text := enc.EncodeToString(b)
					if !slices.ContainsFunc(prints, func(p string) bool { return strings.Contains(text, p) }) {
						t.Errorf("%q after %d bytes: %s holds none of its prints %v", s, pre, text, prints)
					}
				}
			}
		}
	}
	if p := base64Prints([]byte("short")); len(p) != 0 {
		t.Errorf("a secret under %d bytes has prints %v: too short to tell from chance", minSecret, p)
	}
}

// TestScrubAutoLogCommand: scrub takes an automatic log from a file or
// standard input, writes the same bytes either way, and with -o replaces
// the file whole, even the log itself, keeping its mode.
func TestScrubAutoLogCommand(t *testing.T) {
	src := filepath.Join("testdata", "autologs", "sdkprogram-3.260.0.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile, fromStdin, stderr bytes.Buffer
	if code := run([]string{"scrub", src}, nil, &fromFile, &stderr); code != exitOK {
		t.Fatalf("scrub %s: exit %d: %s", src, code, stderr.String())
	}
	if code := run([]string{"scrub", "-"}, bytes.NewReader(data), &fromStdin, &stderr); code != exitOK {
		t.Fatalf("scrub -: exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(fromFile.Bytes(), fromStdin.Bytes()) {
		t.Errorf("scrub of the file and of standard input differ:\n%s", lineDiff(fromFile.String(), fromStdin.String()))
	}
	if !strings.Contains(string(data), secret.Value) || strings.Contains(fromFile.String(), secret.Value) {
		t.Errorf("the log held the secret: %v; the scrubbed log holds it: %v", strings.Contains(string(data), secret.Value), strings.Contains(fromFile.String(), secret.Value))
	}
	inPlace := filepath.Join(t.TempDir(), "up.jsonl")
	if err := os.WriteFile(inPlace, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"scrub", "-o", inPlace, inPlace}, nil, io.Discard, &stderr); code != exitOK {
		t.Fatalf("scrub -o LOG LOG: exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(inPlace)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fromFile.Bytes()) {
		t.Errorf("scrub -o LOG LOG wrote otherwise than to standard output:\n%s", lineDiff(fromFile.String(), string(got)))
	}
	if fi, err := os.Stat(inPlace); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the scrubbed log's mode: %v %v, want 0600 kept", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(inPlace), ".*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestScrubRecordedAutoLogs scrubs the real logs in testdata/autologs: no
// secret the log marks survives, and show gives the same account of the
// scrubbed log as of the original.
func TestScrubRecordedAutoLogs(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join("testdata", "autologs", "*.jsonl"))
	if len(logs) == 0 {
		t.Fatal("no recorded automatic log in testdata/autologs")
	}
	for _, log := range logs {
		t.Run(filepath.Base(log), func(t *testing.T) {
			checkAutoScrub(t, log, secret.Value)
		})
	}
}

// checkAutoScrub scrubs the automatic log at path and fails t if any of
// secrets, or any secret the log marks, survives, or if show's account of
// the scrubbed log differs from its account of the log.
func checkAutoScrub(t *testing.T, path string, secrets ...string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	learnt := newAutoScrubber()
	if err := eachLine(bytes.NewReader(data), func(n int, line []byte, last bool) error {
		learnt.scrubLine(n, line, last)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for s := range learnt.t.Noted() {
		if len(s) >= minSecret {
			secrets = append(secrets, s)
		}
	}
	scrubbed := filepath.Join(t.TempDir(), filepath.Base(path))
	var stderr bytes.Buffer
	if code := run([]string{"scrub", "-o", scrubbed, path}, nil, io.Discard, &stderr); code != exitOK {
		t.Fatalf("scrub: exit %d: %s", code, stderr.String())
	}
	out, err := os.ReadFile(scrubbed)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		for _, w := range survivors(string(out), s) {
			t.Errorf("%q survives: %s", s, w)
		}
	}
	if want, got := showText(t, path), showText(t, scrubbed); got != want {
		t.Errorf("the account of the scrubbed log differs:\n%s", lineDiff(want, got))
	}
	return string(out)
}

// autoTemplates are the places a fuzzed log puts its secret s: each line
// as the engine or the module writes it. The first marks s as secret.
var autoTemplates = []func(tb testing.TB, s string, n byte) string{
	func(tb testing.TB, s string, _ byte) string {
		return after(tb, map[string]any{"length": 2.0, "keepers": map[string]any{"password": secretValue(s)}}, "map[custom_timeouts:map[]]")
	},
	func(tb testing.TB, s string, _ byte) string {
		return before(tb, "pet", map[string]any{"length": 2.0})
	},
	func(tb testing.TB, s string, _ byte) string {
		return fmt.Sprintf("ResourceHook pet returned %q", "denied: "+s)
	},
	func(tb testing.TB, s string, _ byte) string {
		return `calling hook "audit" for urn urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet`
	},
	func(tb testing.TB, s string, _ byte) string {
		return "Unmarshaling property for RPC[ResourceMonitor.Transform(x, t, pet)]: password=map[V:map[Element:map[V:" + s + "]]]"
	},
	func(tb testing.TB, s string, _ byte) string {
		return "Marshaling property for RPC[ResourceMonitor.RegisterResource(t,pet)]: value=" + pvOf(tb, s)
	},
	func(tb testing.TB, s string, _ byte) string {
		return "Marshaling property for RPC[ResourceMonitor.RegisterResource(t,pet)]: keepers=" + pvOf(tb, map[string]any{"k": []any{"a", s}})
	},
	func(tb testing.TB, s string, n byte) string {
		pre, post := strings.Repeat("p", int(n%3)), strings.Repeat("q", int(n/3%3))
		return "payload " + base64.StdEncoding.EncodeToString([]byte(pre+s+post))
	},
	func(tb testing.TB, s string, n byte) string {
		return "payload x" + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("r", int(n%3))+s))
	},
	func(tb testing.TB, s string, _ byte) string { return "the text " + s + s + " twice" },
	func(tb testing.TB, s string, _ byte) string {
		return "state: " + string(must(json.Marshal(map[string]any{"v": "<" + s + ">"})))
	},
	func(tb testing.TB, s string, _ byte) string {
		return "Marshaling property for RPC[Provider[0x1].Configure(urn:pulumi:dev::demo::pulumi:providers:random::default).news]: key=" +
			pvOf(tb, secretValue(s)) + " region=" + pvOf(tb, "eu-north-9")
	},
	func(tb testing.TB, s string, _ byte) string { return s },
}

// fuzzAutoLog builds an automatic log from layout, each byte a line: a
// template of autoTemplates and its variant, with s in it. The first
// template is always among them, so that s is marked.
func fuzzAutoLog(tb testing.TB, layout []byte, s string) string {
	var msgs []string
	marked := false
	for i, b := range layout {
		k := int(b) % len(autoTemplates)
		marked = marked || k == 0
		msgs = append(msgs, autoTemplates[k](tb, s, byte(i)+b/16))
	}
	if !marked {
		at := 0
		if len(layout) > 0 {
			at = int(layout[0]) % (len(msgs) + 1)
		}
		msgs = slices.Insert(msgs, at, autoTemplates[0](tb, s, 0))
	}
	log := autoLines(tb, msgs...)
	if len(layout) > 0 && layout[len(layout)-1]%4 == 0 {
		// A module record, and a line that is not JSON (s on one line).
		log += `{"callbacks.call_id":"c-1","callbacks.error":` + string(must(json.Marshal("failed: "+s))) +
			`,"callbacks.module":"github.com/langhost/callbacks","callbacks.outcome":"error","callbacks.schema":1,"level":"WARN","msg":"callbacks: call finished","pulumi.callback.kind":"resource_hook","pulumi.callback.name":"audit","time":"2026-11-29T09:44:23Z"}` + "\n"
		log += "not JSON " + strings.NewReplacer("\r", " ", "\n", " ").Replace(s) + "\n"
	}
	return log
}

// neutralSecret stands for the fuzzed secret in the log it is compared with.
const neutralSecret = "neutral-secret-value-0"

// FuzzScrubAutoLog: a secret placed in a random automatic log never
// survives scrub. Beyond searching the scrubbed log for it, the scrubbed log
// must be the very bytes of the scrubbed log holding another secret in the
// same places: nothing of the secret is left, not its length, not its bytes
// in any encoding. And show reads the scrubbed log as it reads the log.
func FuzzScrubAutoLog(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, "sdkprogram-secret-b7c1e9")
	f.Add([]byte{2, 0, 7, 8, 9, 10, 11, 12}, `pa"ss\word <9>`)
	f.Add([]byte{4, 5, 6, 0, 2, 12}, "correct horse battery staple")
	f.Add([]byte{7, 23, 39, 8, 24, 40, 0}, "ünïcødé-secret")
	f.Add([]byte{12, 11, 0, 4}, "s3cr3t\nline")
	f.Add([]byte{9, 9, 12, 0}, "ab-cHVsdW1pUHYz") // a secret that runs into what looks like a property value
	f.Fuzz(func(t *testing.T, layout []byte, s string) {
		// Brackets are left out: the text form of a secret
		// (map[Element:map[V:s]]) would mark a part of s as another secret,
		// and numbering the placeholders otherwise tells nothing of s.
		if len(layout) > 40 || len(s) < minSecret || len(s) > 200 || !utf8.ValidString(s) || strings.ContainsAny(s, "[]") {
			t.Skip()
		}
		neutral := fuzzAutoLog(t, layout, neutralSecret)
		scrubbedNeutral := scrubAutoString(t, neutral)
		// A secret that is already in the log or its placeholders' words
		// elsewhere, or the other way round, cannot be told from them.
		for _, text := range []string{neutral, scrubbedNeutral, "[secret 1][secret 2][secret 3][config 1][scrubbed: "} {
			if len(survivors(text, s)) > 0 || strings.Contains(s, neutralSecret) || strings.Contains(neutralSecret, s) {
				t.Skip()
			}
		}
		log := fuzzAutoLog(t, layout, s)
		out := scrubAutoString(t, log)
		for _, w := range survivors(out, s) {
			t.Errorf("the secret survives: %s", w)
		}
		if out != scrubbedNeutral {
			t.Errorf("the scrubbed log depends on the secret:\n%s", lineDiff(scrubbedNeutral, out))
		}
		if again := scrubAutoString(t, out); again != out {
			t.Errorf("scrubbing the scrubbed log changed it:\n%s", lineDiff(out, again))
		}
		orig, origProblems := readAutoString(t, neutral, false)
		scrubbed, problems := readAutoString(t, scrubbedNeutral, false)
		equalLists(t, "the calls of the scrubbed log", shapes(scrubbed), shapes(orig))
		if len(problems) > len(origProblems) {
			t.Errorf("show cannot read %d lines of the scrubbed log (%v), %d of the log", len(problems), problems, len(origProblems))
		}
	})
}

// The module's records hold their changes and payloads as JSON text, every
// secret already "[secret]": scrub leaves those as they are, learns no
// secret from them, and replaces in them a secret another line marks,
// however it is escaped there.
func TestScrubModuleRecords(t *testing.T) {
	const leaked = `pass"word-4f1e` // a secret the engine's line marks, which a record shows in plain text
	text, err := json.Marshal(leaked)
	if err != nil {
		t.Fatal(err)
	}
	changes := `[{"path":"properties.note","new":` + strconvQuote(string(text)) + `},{"path":"properties.pw","old":"[secret]","new":"[another secret]"}]`
	request := `{"properties":{"note":` + string(text) + `,"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"[secret]"}}}`
	attrs := v2(ended(1))
	attrs["callbacks.changes"], attrs["callbacks.request"] = changes, request
	log := modLog(t,
		ml{at: 1, msg: "Planner decided to create 'urn:pulumi:dev::p::t::n' (inputs=" + pvOf(t, map[string]any{
			"k": map[string]any{"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "value": leaked}}) + ")"},
		ml{at: 2, id: "a-1", call: transformCall("tag", "pet"), attrs: v2(map[string]any{})},
		ml{at: 3, id: "a-1", end: true, call: transformCall("tag", "pet"), attrs: attrs},
	)
	out := scrubAutoString(t, log)
	if s := survivors(out, leaked); len(s) > 0 {
		t.Errorf("the secret survives scrub: %v\n%s", s, out)
	}
	recs, _ := readModLog(t, out)
	if len(recs) != 1 {
		t.Fatalf("the scrubbed log's calls: %v", shapes(recs))
	}
	got := changeStrings(recs[0])
	if len(got) != 2 || strings.Contains(got[0], "pass") || !strings.HasPrefix(got[0], "{properties.note (absent) ") ||
		got[1] != "{properties.pw [secret] [another secret]}" {
		t.Errorf("the scrubbed record's changes: %v", got)
	}
	if p := recs[0].Payload; p == nil || p.Request == nil {
		t.Errorf("the scrubbed record's request does not read: %+v", p)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestScrubbedURNsStillRead: a secret in a resource's name is in the URNs
// of the engine's lines; scrubbed, the placeholder has a space in it, and
// the account of the scrubbed log still finds every call those lines tell.
func TestScrubbedURNsStillRead(t *testing.T) {
	const name = "db-s3cr3t-7d1e"
	urn := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::" + name
	log := autoLines(t,
		before(t, name, map[string]any{"length": 2.0}),
		after(t, map[string]any{"length": 2.0, "owner": secretValue(name)}, "map[custom_timeouts:map[]]"),
		`calling hook "audit" for urn `+urn,
		`ResourceHook `+name+` returned ""`,
		`calling error hook "retry" for urn `+urn,
		`ErrorHook retry returned "", retry=true`,
		`StateMigration: urn=`+urn,
		`Provider[random, 0x1].Create(`+urn+`) failed: quota`,
	)
	recs, _ := readAutoString(t, log, false)
	out := scrubAutoString(t, log)
	if w := survivors(out, name); len(w) > 0 {
		t.Fatalf("the name survives the scrub: %v", w)
	}
	scrubbed, problems := readAutoString(t, out, false)
	if len(problems) > 0 {
		t.Errorf("problems reading the scrubbed log: %v", problems)
	}
	if len(recs) < 4 {
		t.Fatalf("only %d calls read before the scrub: %v", len(recs), shapes(recs))
	}
	equalLists(t, "the calls after the scrub", kindsOf(scrubbed), kindsOf(recs))
	for _, r := range scrubbed {
		if r.URN != "" && !strings.Contains(r.URN, "[secret") {
			t.Errorf("a %s's URN after the scrub: %q", r.Kind, r.URN)
		}
	}
}

func kindsOf(recs []*record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Kind + " " + r.Outcome
	}
	return out
}
