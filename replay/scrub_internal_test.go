package replay

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaks returns where the output of Scrub still holds one of values: in
// its text, in its JSON strings, or in a base64 payload once decoded.
func leaks(out []byte, values ...string) []string {
	var found []string
	for n, line := range bytes.Split(out, []byte("\n")) {
		for _, v := range values {
			if bytes.Contains(line, []byte(v)) {
				found = append(found, "line "+itoa(n+1)+" holds "+v)
			}
		}
		var entry any
		if json.Unmarshal(line, &entry) != nil {
			continue
		}
		eachString(entry, func(s string) {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return
			}
			for _, v := range values {
				if bytes.Contains(raw, []byte(v)) {
					found = append(found, "a payload of line "+itoa(n+1)+" holds "+v)
				}
			}
		})
	}
	return found
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonNumber(n)) }

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

func eachString(v any, f func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			eachString(x, f)
		}
	case []any:
		for _, x := range v {
			eachString(x, f)
		}
	case string:
		f(v)
	}
}

// callView is what must survive scrubbing of a call.
type callView struct {
	Seq, Line    int
	Kind         string
	Registration Registration
	URN          string
	Invoke       string
	Outcome      Outcome
	Changes      []Change
}

func views(t *testing.T, log []byte) ([]callView, []int) {
	t.Helper()
	calls, errs := readAll(t, log)
	var out []callView
	for _, c := range calls {
		w, _ := c.Outcome()
		out = append(out, callView{c.Seq, c.Line, c.Kind.String(), c.Registration, string(c.URN), c.Invoke, w, c.Changes(HideSecrets)})
	}
	var lines []int
	for _, e := range errs {
		lines = append(lines, e.Line)
	}
	return out, lines
}

func scrubSynthetic(t *testing.T, o synthetic) (log, out []byte) {
	t.Helper()
	var in, dst bytes.Buffer
	require.NoError(t, writeSynthetic(&in, o))
	require.NoError(t, Scrub(&dst, bytes.NewReader(in.Bytes())))
	return in.Bytes(), dst.Bytes()
}

func TestScrubRemovesSecretsAndKeepsCalls(t *testing.T) {
	t.Parallel()
	for _, oneEntry := range []bool{false, true} {
		o := synthetic{resources: 3, oneEntry: oneEntry, every: true, secret: "hunter2-secret", plain: "us-west-2"}
		log, out := scrubSynthetic(t, o)
		require.NotEmpty(t, leaks(log, o.secret, o.plain), "the test log holds the values")
		assert.Empty(t, leaks(out, o.secret, o.plain), "oneEntry=%v", oneEntry)

		// The scrubbed log reads as the log did: same calls, same
		// outcomes and changes, errors on the same lines.
		want, wantErrs := views(t, log)
		got, gotErrs := views(t, out)
		assert.Equal(t, want, got)
		assert.Equal(t, wantErrs, gotErrs)
		assert.Equal(t, bytes.Count(log, []byte("\n")), bytes.Count(out, []byte("\n")))

		// The same value has the same placeholder everywhere.
		placeholders := func(key string) map[string]int {
			found := map[string]int{}
			for _, m := range regexp.MustCompile(`"`+regexp.QuoteMeta(key)+`":"([^"]*)"`).FindAllStringSubmatch(string(out), -1) {
				found[m[1]]++
			}
			return found
		}
		password := placeholders("synth:password")
		require.Len(t, password, 1)
		for ph := range password {
			assert.Regexp(t, `^\[secret \d+\]$`, ph)
			assert.Equal(t, []string{ph}, slices.Collect(maps.Keys(placeholders("random:config:password"))))
			assert.Equal(t, []string{ph}, slices.Collect(maps.Keys(placeholders("value"))), "every secret envelope")
		}
		region := placeholders("synth:region")
		require.Len(t, region, 1)
		for ph := range region {
			assert.Regexp(t, `^\[config \d+\]$`, ph)
		}
		assert.NotEqual(t, password, region)

		// Scrubbing is deterministic and a scrubbed log scrubs to itself.
		_, again := scrubSynthetic(t, o)
		assert.Equal(t, string(out), string(again))
		var twice bytes.Buffer
		require.NoError(t, Scrub(&twice, bytes.NewReader(out)))
		assert.Equal(t, string(out), twice.String())
	}
}

// TestScrubKeepsWhatIsNotSecret: a log with no secret and no configuration
// is copied byte for byte.
func TestScrubKeepsWhatIsNotSecret(t *testing.T) {
	t.Parallel()
	log, out := scrubSynthetic(t, synthetic{resources: 4, every: true})
	// Only the payloads Scrub cannot vouch for change.
	logLines, outLines := strings.Split(string(log), "\n"), strings.Split(string(out), "\n")
	require.Equal(t, len(logLines), len(outLines))
	changed := 0
	for i := range logLines {
		if logLines[i] != outLines[i] {
			changed++
			assert.Contains(t, outLines[i], scrubbedPrefix)
		}
	}
	assert.Equal(t, 6, changed, "the two entries of each call of an unknown kind (two) and of the undecodable payload")
}

func TestScrubSecretInsidePayloadOfUnknownKind(t *testing.T) {
	t.Parallel()
	o := synthetic{resources: 1, every: true, secret: "zzTopSecret", plain: "plainvalue"}
	_, out := scrubSynthetic(t, o)
	assert.Contains(t, string(out), `[scrubbed: payload of a callback kind this module does not know, registered by RegisterFutureHook]`)
	assert.Contains(t, string(out), `[scrubbed: payload that does not decode as a resource transform request]`)
}

func TestScrubBadLines(t *testing.T) {
	t.Parallel()
	in := "{\"method\":\"x\",\"request\":{\"a\":{\"4dabf18193072939515e22adb298388d\":\"1b47061264138c4ac30d75fd1eb44270\",\"value\":\"sekrit-1\"}}}\nnot json sekrit-2\n\n{\"method\":\"y\",\"req"
	var out bytes.Buffer
	require.NoError(t, Scrub(&out, strings.NewReader(in)))
	assert.Equal(t, "{\"method\":\"x\",\"request\":{\"a\":{\"4dabf18193072939515e22adb298388d\":\"1b47061264138c4ac30d75fd1eb44270\",\"value\":\"[secret 1]\"}}}\n"+
		"[scrubbed: line 2 was not a JSON entry and was removed]\n\n[scrubbed: line 4 was a truncated entry and was removed]\n", out.String())
}

// TestScrubKeepsUnknownFields: a field of a payload this module's protocol
// version does not know survives scrubbing, and the secret beside it does
// not.
func TestScrubKeepsUnknownFields(t *testing.T) {
	t.Parallel()
	req := &pulumirpc.TransformRequest{Type: synthPetType, Name: "pet", Parent: synthStack,
		Properties: &structpb.Struct{Fields: map[string]*structpb.Value{"password": secretPB("s3cret-Value")}}}
	raw := mustMarshal(req)
	raw = protowire.AppendTag(raw, 99, protowire.BytesType)
	raw = protowire.AppendBytes(raw, []byte("from a later engine"))
	got := scrubOneTransform(t, raw)
	assert.Contains(t, string(got.ProtoReflect().GetUnknown()), "from a later engine")
	assert.Equal(t, "[secret 1]", got.GetProperties().GetFields()["password"].GetStructValue().GetFields()["value"].GetStringValue())
}

// TestScrubPropertyValueOfNoKind: a property value holding a Value of no
// kind, which has no JSON form, is emptied, and the secret beside it does
// not survive.
func TestScrubPropertyValueOfNoKind(t *testing.T) {
	t.Parallel()
	req := &pulumirpc.TransformRequest{Type: synthPetType, Name: "pet", Parent: synthStack,
		Properties: &structpb.Struct{Fields: map[string]*structpb.Value{"broken": {}, "password": secretPB("s3cret-Value")}}}
	got := scrubOneTransform(t, mustMarshal(req))
	assert.Equal(t, "pet", got.GetName())
	assert.Empty(t, got.GetProperties().GetFields())
}

// scrubOneTransform scrubs a log of one stack transform called once with
// the request raw, checks that the secret "s3cret-Value" does not survive,
// and returns the request read back from the scrubbed log.
func scrubOneTransform(t *testing.T, raw []byte) *pulumirpc.TransformRequest {
	t.Helper()
	var log bytes.Buffer
	s := &synthWriter{o: synthetic{}, w: bufio.NewWriter(&log), now: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)}
	s.enc = json.NewEncoder(s.w)
	s.call(monitorPrefix+stackTransform, map[string]any{"target": "t", "token": "tok"}, map[string]any{}, nil, serverMeta)
	s.invokeRaw("tok", raw, &pulumirpc.TransformResponse{}, nil)
	require.NoError(t, s.w.Flush())

	var out bytes.Buffer
	require.NoError(t, Scrub(&out, &log))
	assert.Empty(t, leaks(out.Bytes(), "s3cret-Value"))
	calls, errs := readAll(t, out.Bytes())
	require.Empty(t, errs)
	require.Len(t, calls, 1)
	got, _, err := calls[0].Messages()
	require.NoError(t, err)
	return got.(*pulumirpc.TransformRequest)
}

// TestScrubSecretsMetBefore: a secret met in an envelope is replaced where
// it appears again as plain text, in a whole string or inside a longer one,
// whatever characters JSON escapes in it.
func TestScrubSecretsMetBefore(t *testing.T) {
	t.Parallel()
	for _, secret := range []string{"plainSecret42", `pa"ss<wo>rd&x\y`, "naïve-sécret"} {
		enc, _ := json.Marshal(secret)
		in := `{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"object":{"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":` + string(enc) + `}}}}` + "\n" +
			`{"method":"/pulumirpc.ResourceProvider/Create","request":{"properties":{"pw":` + string(enc) + `}},"errors":["failed with ` + strings.Trim(string(enc), `"`) + ` as the password"]}` + "\n"
		var out bytes.Buffer
		require.NoError(t, Scrub(&out, strings.NewReader(in)))
		var decoded []any
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var v any
			require.NoError(t, json.Unmarshal([]byte(line), &v))
			decoded = append(decoded, v)
		}
		eachString(decoded, func(s string) { assert.NotContains(t, s, secret) })
		assert.Contains(t, out.String(), `"properties":{"pw":"[secret 1]"}`)
		assert.Contains(t, out.String(), `failed with [secret 1] as the password`)
	}
}

// TestScrubCallMembers: a call's members are scrubbed but its base64
// payloads, which are scrubbed by their kind; a member holding an object of
// its own name is no payload.
func TestScrubCallMembers(t *testing.T) {
	t.Parallel()
	const secret = "plainSecret42"
	in := `{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"object":{"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"` + secret + `"}}}}` + "\n" +
		`{"method":"/pulumirpc.Callbacks/Invoke","progress":"request_started","request":{"token":"t","request":"AAAA"},"note":{"note":"` + secret + `"}}` + "\n"
	var out bytes.Buffer
	require.NoError(t, Scrub(&out, strings.NewReader(in)))
	assert.NotContains(t, out.String(), secret)
	assert.Contains(t, out.String(), `"note":{"note":"[secret 1]"}`)
	assert.Contains(t, out.String(), `"request":"[scrubbed: payload of a token this log never registered, so its kind is unknown]"`)
}

// TestScrubConfigEverywhere: every value of the program's configuration is
// replaced wherever it appears, GetDeploymentInfo and the payloads
// included, by a placeholder that says whether it was a secret; a value
// shorter than minSubstring only where a whole string equals it; a value
// naming the stack or the project, and the entries' own members, are
// kept.
func TestScrubConfigEverywhere(t *testing.T) {
	t.Parallel()
	config := `{"app:n":"2","app:env":"dev","app:zone":"eu-west-1","app:on":"true","app:mode":"server","app:pw":"0pen-sesame"}`
	run := `{"project":"app","stack":"dev","config":` + config + `,"configSecretKeys":["app:pw"]}`
	in := strings.Join([]string{
		`{"method":"/pulumirpc.LanguageRuntime/Run","request":` + run + `,"metadata":{"kind":"language","mode":"client","runtime":"go"},"progress":"request_started","timestamp":"2026-11-28T03:00:00Z"}`,
		`{"method":"/pulumirpc.ResourceMonitor/GetDeploymentInfo","request":{},"response":{"project":"app","stack":"dev","config":` + config + `,"configSecretKeys":["app:pw"]},"metadata":{"mode":"server"},"progress":"response_completed","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"t:m:T","name":"r","object":{"count":"2","label":"v2","zone":"eu-west-1","host":"db.eu-west-1.example","flag":"true","env":"dev","pw":"0pen-sesame"}},"metadata":{"mode":"server"},"progress":"request_started","timestamp":"0001-01-01T00:00:00Z"}`,
		`{"method":"/pulumirpc.LanguageRuntime/Run","request":` + run + `,"response":{},"metadata":{"kind":"language","mode":"client","runtime":"go"},"progress":"response_completed","timestamp":"2026-11-28T03:00:01Z"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	require.NoError(t, Scrub(&out, strings.NewReader(in)))
	lines := strings.Split(out.String(), "\n")
	require.Len(t, lines, 5)
	var info, reg struct {
		Metadata map[string]string `json:"metadata"`
		Request  struct {
			Object map[string]string `json:"object"`
		} `json:"request"`
		Response struct {
			Stack  string            `json:"stack"`
			Config map[string]string `json:"config"`
		} `json:"response"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &info))
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &reg))
	cfg := info.Response.Config
	assert.Equal(t, "dev", info.Response.Stack)
	assert.Equal(t, "server", info.Metadata["mode"])
	for k, v := range cfg {
		if k == "app:pw" {
			assert.Regexp(t, `^\[secret \d+\]$`, v, k)
		} else {
			assert.Regexp(t, `^\[config \d+\]$`, v, k)
		}
	}
	assert.Equal(t, map[string]string{
		"count": cfg["app:n"], "label": "v2", "zone": cfg["app:zone"], "host": "db." + cfg["app:zone"] + ".example",
		"flag": cfg["app:on"], "env": "dev", "pw": cfg["app:pw"],
	}, reg.Request.Object)
	assert.Equal(t, "server", reg.Metadata["mode"])
	// Both entries of the Run say the same, with the stack's name kept.
	var started, completed struct{ Request map[string]any }
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &started))
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &completed))
	assert.Equal(t, started.Request, completed.Request)
	assert.Equal(t, "dev", started.Request["stack"])
	for k, v := range started.Request["config"].(map[string]any) {
		assert.Equal(t, cfg[k], v, k)
	}
	calls, errs := readAll(t, out.Bytes())
	assert.Empty(t, calls)
	assert.Empty(t, errs)
}

// TestScrubConfigBeforeItsEntry: a log of one entry per call gives the
// configuration in its last line; a value before it is replaced when the
// log can be read twice, and stays when it is read once, as documented.
func TestScrubConfigBeforeItsEntry(t *testing.T) {
	t.Parallel()
	in := `{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"t:m:T","name":"r","object":{"zone":"eu-west-1"}},"metadata":{"mode":"server"}}` + "\n" +
		`{"method":"/pulumirpc.LanguageRuntime/Run","request":{"project":"app","stack":"dev","config":{"app:zone":"eu-west-1"}},"response":{},"metadata":{"kind":"language","mode":"client"}}` + "\n"
	var twice, once bytes.Buffer
	require.NoError(t, Scrub(&twice, strings.NewReader(in)))
	assert.Empty(t, leaks(twice.Bytes(), "eu-west-1"))
	assert.Contains(t, twice.String(), `"zone":"[config 1]"`)
	require.NoError(t, Scrub(&once, struct{ io.Reader }{strings.NewReader(in)}))
	assert.Equal(t, []string{"line 1 holds eu-west-1"}, leaks(once.Bytes(), "eu-west-1"))
}

// TestScrubSecretsMetAfter: a secret that the log repeats in clear before
// the entry that marks it secret (a provider's error, a name) is replaced
// there too when the log can be read twice, and stays when it is read
// once, as documented.
func TestScrubSecretsMetAfter(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-before"
	in := `{"method":"/pulumirpc.ResourceProvider/Create","request":{"properties":{"name":"db-hunter2-before"}},"errors":["failed with hunter2-before as the password"]}` + "\n" +
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"object":{"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"hunter2-before"}}}}` + "\n"
	var twice, once bytes.Buffer
	require.NoError(t, Scrub(&twice, strings.NewReader(in)))
	assert.Empty(t, leaks(twice.Bytes(), secret))
	assert.Contains(t, twice.String(), `failed with [secret 1] as the password`)
	assert.Contains(t, twice.String(), `"name":"db-[secret 1]"`)
	require.NoError(t, Scrub(&once, struct{ io.Reader }{strings.NewReader(in)}))
	assert.Equal(t, []string{"line 1 holds hunter2-before"}, leaks(once.Bytes(), secret))
}
