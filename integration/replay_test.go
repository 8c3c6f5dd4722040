package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/integration/clitest"
	"github.com/langhost/callbacks/integration/programs/replay/app"
	"github.com/langhost/callbacks/replay"
)

const replayProgram = "github.com/langhost/callbacks/integration/programs/replay"

// recordingStack is a stack of programs/replay whose CLI commands write the
// engine's gRPC log to the file log returns, with a provider that
// throttles the first create.
type recordingStack struct {
	*clitest.Stack
	log string
}

func newRecordingStack(t *testing.T) *recordingStack {
	t.Helper()
	log := filepath.Join(t.TempDir(), "grpc.jsonl")
	s := newStack(t, "replay", replayProgram, throttle, "PULUMI_DEBUG_GRPC="+log)
	return &recordingStack{Stack: s, log: log}
}

// fresh removes the log of the commands before, so that the next command's
// log is the file's whole content.
func (s *recordingStack) fresh(t *testing.T) {
	t.Helper()
	if err := os.Remove(s.log); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// outcomes lists the log's calls as "kind registration: outcome", in order.
func outcomes(t *testing.T, log string) []string {
	t.Helper()
	f, err := os.Open(log)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	var out []string
	for c, err := range replay.Read(f) {
		require.NoError(t, err)
		word, _ := c.Outcome()
		what := c.Registration.Name
		if what == "" {
			what = fmt.Sprintf("%s #%d", c.Registration.Method, c.Registration.Order)
		}
		out = append(out, fmt.Sprintf("%v %s %s: %s", c.Kind, what, c.Name, word))
	}
	return out
}

// recordingT stands in for a test's T in replay.Run, to check what it
// reports.
type recordingT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingT) Logf(format string, args ...any) { r.TB.Logf(format, args...) }

// TestReplayOfARealUp records `pulumi up` of programs/replay: two pets,
// each transformed and passed by the hook "audit", the first create
// throttled and retried by the error hook. Replayed against the same body
// the log shows no difference, with the error hook deciding the retry
// again; replayed against a body whose transform sets another prefix, each
// transform call fails, naming the property.
func TestReplayOfARealUp(t *testing.T) {
	t.Parallel()
	s := newRecordingStack(t)
	s.fresh(t)
	s.Up().MustSucceed(t)

	got := outcomes(t, s.log)
	assert.GreaterOrEqual(t, countSuffix(got, ": retry"), 1, "the throttled create's retry is in the log: %q", got)
	assert.Equal(t, 2, countSuffix(got, ": changed"), "the pets' transforms (the stack's own, if any, changes nothing): %q", got)
	assert.Equal(t, 2, countPrefix(got, "resource hook audit "), "%q", got)

	replay.Run(t, s.log, app.Program(app.Prefix))

	changed := &recordingT{TB: t}
	replay.Run(changed, s.log, app.Program("ty"))
	require.Len(t, changed.errors, 2, "one error per transform call: %q", changed.errors)
	for _, e := range changed.errors {
		assert.Contains(t, e, "resource transform, stack transform #1, for urn:pulumi:dev::replay::"+app.PetType+"::")
		assert.Contains(t, e, `properties.prefix: "tx" → "ty"`)
	}
}

// TestReplayOfARealRefusal records an up in which the hook "audit"
// refuses the pet "other", which fails the up; "pet", which other depends
// on, was created first, its create throttled and retried. Replayed against
// the same body, the hook refuses other again and the error hook decides as
// before.
func TestReplayOfARealRefusal(t *testing.T) {
	t.Parallel()
	s := newRecordingStack(t)
	s.SetConfig("refuse", "other")
	s.fresh(t)
	s.Up().MustFail(t)

	got := outcomes(t, s.log)
	assert.Contains(t, got, "resource hook audit other: refused", "%q", got)
	assert.Contains(t, got, "resource hook audit pet: ok", "%q", got)
	assert.GreaterOrEqual(t, countSuffix(got, ": retry"), 1, "the throttled create's retry is in the log: %q", got)
	replay.Run(t, s.log, app.Program(app.Prefix))
}

// TestReplayOfARealMigration records the update in which programs/replay
// attaches its state migration (stage v1) to pets created with the keeper
// "owner": replayed against the same body, each migration gives the same
// new state. Under 3.260.0, which runs no migration, the program refuses
// to register them (TestStateMigrationUnderPulumi), so the log has none.
func TestReplayOfARealMigration(t *testing.T) {
	t.Parallel()
	runs := engineRunsMigrations(t)
	s := newRecordingStack(t)
	s.Up().MustSucceed(t)
	s.SetConfig("stage", "v1")
	s.fresh(t)
	if !runs {
		s.Up().MustFail(t)
		assert.Zero(t, countPrefix(outcomes(t, s.log), callbacks.KindStateMigration.String()), "no migration ran")
		return
	}
	s.Up().MustSucceed(t)

	got := outcomes(t, s.log)
	for _, name := range []string{"pet", "other"} {
		assert.Contains(t, got, fmt.Sprintf("%v RegisterResource #1 %s: migrated", callbacks.KindStateMigration, name), "%q", got)
	}
	replay.Run(t, s.log, app.Program(app.Prefix))
}

func countPrefix(ss []string, prefix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

func countSuffix(ss []string, suffix string) int {
	n := 0
	for _, s := range ss {
		if strings.HasSuffix(s, suffix) {
			n++
		}
	}
	return n
}

// TestReplayOfARealUpWithItsPreview records `pulumi up` with its preview,
// as a user runs it: the log holds two runs of the program, and each run's
// calls replay against a run of the body with that run's dry-run flag.
func TestReplayOfARealUpWithItsPreview(t *testing.T) {
	t.Parallel()
	s := newRecordingStack(t)
	s.fresh(t)
	s.Run("up", "--yes", "--non-interactive").MustSucceed(t)

	b, err := os.ReadFile(s.log)
	require.NoError(t, err)
	assert.Equal(t, 4, strings.Count(string(b), `"method":"/pulumirpc.LanguageRuntime/Run"`),
		"the preview's run and the update's, each logged when it started and when it completed")
	got := outcomes(t, s.log)
	// The pets' transforms; 3.260.0 may also call the transform for the
	// stack itself, when the program's registration of the transform
	// overtakes the SDK's of the stack.
	assert.Equal(t, 4, countSuffix(got, ": changed"), "two pets transformed in each run: %q", got)

	replay.Run(t, s.log, app.Program(app.Prefix))

	changed := &recordingT{TB: t}
	replay.Run(changed, s.log, app.Program("ty"))
	assert.Len(t, changed.errors, 4, "one error per transform call, in both runs: %q", changed.errors)
}
