package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/integration/clitest"
	"github.com/langhost/callbacks/replay"
)

const plainSDKProgram = "github.com/langhost/callbacks/integration/programs/plainsdk"

// recordUp runs `pulumi up` with PULUMI_DEBUG_GRPC and returns the log the
// engine wrote and what the command printed.
//
// With CALLBACKS_KEEP_LOGS=DIR, the log is also written, scrubbed, to
// DIR/<label>-<engine version>.jsonl, to refresh replay/testdata.
func recordUp(t *testing.T, s *clitest.Stack, label string, wantOK bool) (log []byte, output string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grpc.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := s.Command(ctx, "up", "--yes", "--non-interactive", "--skip-preview")
	cmd.Env = append(cmd.Env, "PULUMI_DEBUG_GRPC="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("pulumi up: %v\n%s", err, out)
	}
	if wantOK != (err == nil) {
		t.Fatalf("pulumi up: exit %v, want success %v\n%s", err, wantOK, out)
	}
	log, err = os.ReadFile(path)
	require.NoError(t, err)
	if dir := os.Getenv("CALLBACKS_KEEP_LOGS"); dir != "" {
		var scrubbed bytes.Buffer
		require.NoError(t, replay.Scrub(&scrubbed, bytes.NewReader(log)))
		name := label + "-" + clitest.EngineVersion(t) + ".jsonl"
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), scrubbed.Bytes(), 0o600))
	}
	return log, string(out)
}

// readLog reads every call of a log but those about the stack resource
// (the SDK may register its stack transform before the stack's own
// registration is done, and then the engine transforms the stack), failing
// t on any error.
func readLog(t *testing.T, log []byte) []*replay.Call {
	t.Helper()
	var calls []*replay.Call
	for c, err := range replay.Read(bytes.NewReader(log)) {
		require.NoError(t, err)
		if c.Type == "pulumi:pulumi:Stack" {
			assert.Regexp(t, `^urn:pulumi:dev::\w+::pulumi:pulumi:Stack::\w+-dev$`, c.URN)
			continue
		}
		calls = append(calls, c)
	}
	return calls
}

// step is what a test checks of one call.
type step struct {
	Kind     callbacks.Kind
	Method   string
	Name     string // the hook's name
	Order    int
	Resource string // the resource the callback is attached to
	URN      string
	Outcome  replay.Outcome
	Message  string
}

func steps(calls []*replay.Call) []step {
	var out []step
	for _, c := range calls {
		word, msg := c.Outcome()
		out = append(out, step{c.Kind, c.Registration.Method, c.Registration.Name, c.Registration.Order,
			string(c.Registration.Resource), string(c.URN), word, msg})
	}
	return out
}

// leaks says where a log still holds value: in its text, or in a base64
// string once decoded.
func leaks(log []byte, value string) []string {
	var found []string
	for n, line := range bytes.Split(log, []byte("\n")) {
		if bytes.Contains(line, []byte(value)) {
			found = append(found, "line "+itoa(n+1))
		}
		var v any
		if json.Unmarshal(line, &v) != nil {
			continue
		}
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			case string:
				if raw, err := base64.StdEncoding.DecodeString(v); err == nil && bytes.Contains(raw, []byte(value)) {
					found = append(found, "a payload of line "+itoa(n+1))
				}
			}
		}
		walk(v)
	}
	return found
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestReplayReadsAPlainGoSDKProgram records `pulumi up` of a program on the
// plain Go SDK with a secret in its configuration and in the pet's inputs:
// first with the hook refusing the create, then letting it through. Read
// recovers every call with its registration and outcome, the transforms'
// changes name the property and hide the secret, and Scrub leaves no trace
// of the secret while the scrubbed log reads the same.
func TestReplayReadsAPlainGoSDKProgram(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-Zq81x"
	s := newStack(t, "plainsdk", plainSDKProgram)
	s.Run("config", "set", "--secret", "password", secret).MustSucceed(t)
	s.SetConfig("refuse", "true")
	pet := "urn:pulumi:dev::plainsdk::" + petType + "::pet"

	refused, out := recordUp(t, s, "plainsdk-refused", false)
	assert.Contains(t, out, "creates are frozen")
	own := step{callbacks.KindResourceTransform, "RegisterResource", "", 1, pet, pet, "changed", ""}
	stack := step{callbacks.KindResourceTransform, "RegisterStackTransform", "", 1, "", pet, "changed", ""}
	calls := readLog(t, refused)
	assert.Equal(t, []step{own, stack,
		{callbacks.KindResourceHook, "RegisterResourceHook", "freeze", 0, "", pet, "refused", "creates are frozen"},
	}, steps(calls))
	if len(calls) == 3 {
		assert.Equal(t, []replay.Change{{Path: "properties.separator", New: `"_"`}}, calls[0].Changes(replay.HideSecrets))
		assert.Equal(t, []replay.Change{{Path: "properties.prefix", New: `"plain"`}}, calls[1].Changes(replay.HideSecrets))
		assert.Equal(t, "pet", calls[2].Name)
		assert.Equal(t, petType, calls[2].Type)
		assert.Positive(t, calls[2].Duration)
		assert.False(t, calls[2].Start.IsZero())
		req, _, err := calls[1].Messages()
		require.NoError(t, err)
		assert.Contains(t, req.(interface{ String() string }).String(), secret, "the payload holds the secret")
	}

	s.Run("config", "rm", "refuse").MustSucceed(t)
	created, _ := recordUp(t, s, "plainsdk", true)
	assert.Equal(t, []step{own, stack,
		{callbacks.KindResourceHook, "RegisterResourceHook", "freeze", 0, "", pet, "ok", ""},
	}, steps(readLog(t, created)))

	for _, log := range [][]byte{refused, created} {
		require.NotEmpty(t, leaks(log, secret), "the log holds the secret: the check checks something")
		var scrubbed bytes.Buffer
		require.NoError(t, replay.Scrub(&scrubbed, bytes.NewReader(log)))
		assert.Empty(t, leaks(scrubbed.Bytes(), secret))
		assert.Equal(t, steps(readLog(t, log)), steps(readLog(t, scrubbed.Bytes())))
	}
}

// TestReplayReadsErrorHookRetries records programs/errorhook with a
// provider that throttles the first create: the error hook's call says it
// asked for a retry, and its request holds the provider's error.
func TestReplayReadsErrorHookRetries(t *testing.T) {
	t.Parallel()
	s := newStack(t, "errorhook", "github.com/langhost/callbacks/integration/programs/errorhook", throttle)
	log, _ := recordUp(t, s, "errorhook-retry", true)
	token := "urn:pulumi:dev::errorhook::" + stringType + "::token"
	calls := readLog(t, log)
	assert.Equal(t, []step{
		{callbacks.KindResourceTransform, "RegisterStackTransform", "", 1, "", token, "changed", ""},
		{callbacks.KindErrorHook, "RegisterErrorHook", "retry-throttled", 0, "", token, "retry", ""},
	}, steps(calls))
	if len(calls) == 2 {
		req, _, err := calls[1].Messages()
		require.NoError(t, err)
		assert.Contains(t, req.(interface{ String() string }).String(), "throttled: too many requests")
		assert.Equal(t, []replay.Change{{Path: "retry", New: "true"}}, calls[1].Changes(replay.HideSecrets))
	}
}

// TestReplayReadsAStateMigration records the update in which
// programs/migrations renames the keeper "owner" to "team" in the stored
// state. 3.274.1 runs migrations; 3.260.0 does not (the program stops), and
// then the log holds no migration call.
func TestReplayReadsAStateMigration(t *testing.T) {
	t.Parallel()
	runs := engineRunsMigrations(t)
	s := newStack(t, "migrations", migrationsProgram)
	s.Up().MustSucceed(t)
	s.SetConfig("stage", "v1")
	log, _ := recordUp(t, s, "migration", runs)
	pet := "urn:pulumi:dev::migrations::" + petType + "::pet"
	var migrations []*replay.Call
	for _, c := range readLog(t, log) {
		if c.Kind == callbacks.KindStateMigration {
			migrations = append(migrations, c)
		}
	}
	if !runs {
		assert.Empty(t, migrations)
		return
	}
	require.Len(t, migrations, 1)
	m := migrations[0]
	assert.Equal(t, replay.Registration{Method: "RegisterResource", Order: 1, Resource: "urn:pulumi:dev::migrations::" + petType + "::pet"}, m.Registration)
	assert.Equal(t, pet, string(m.URN))
	word, _ := m.Outcome()
	assert.Equal(t, replay.OutcomeMigrated, word)
	var paths []string
	for _, ch := range m.Changes(replay.HideSecrets) {
		paths = append(paths, ch.Path+": "+ch.Old+" -> "+ch.New)
	}
	assert.Subset(t, paths, []string{
		`state[0].inputs.keepers.owner: "infra" -> `,
		`state[0].inputs.keepers.team:  -> "infra"`,
	}, "%v", paths)
}
