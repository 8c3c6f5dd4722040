package integration_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/integration/clitest"
)

const migrationsProgram = "github.com/langhost/callbacks/integration/programs/migrations"

// engineRunsMigrations reports whether the pulumi on PATH runs state
// migrations: 3.274.1 does, 3.260.0 does not.
func engineRunsMigrations(t *testing.T) bool {
	t.Helper()
	clitest.RequireCLI(t)
	out, err := exec.Command("pulumi", "version").Output()
	require.NoError(t, err)
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	switch {
	case strings.HasPrefix(v, "3.260."):
		return false
	case strings.HasPrefix(v, "3.274."):
		return true
	}
	t.Fatalf("pulumi %s: the test knows what 3.260.0 and 3.274.1 do with state migrations, not this release", v)
	return false
}

// storedPet is the pet as `pulumi stack export` shows it, with the fields
// the SDK's registration leaves in the state.
type storedPet struct {
	ID             string         `json:"id"`
	Inputs         map[string]any `json:"inputs"`
	Outputs        map[string]any `json:"outputs"`
	SourcePosition string         `json:"sourcePosition"`
	StackTrace     []any          `json:"stackTrace"`
}

func exportPet(t *testing.T, s *clitest.Stack) storedPet {
	t.Helper()
	r := s.Run("stack", "export").MustSucceed(t)
	var exp struct {
		Deployment struct {
			Resources []struct {
				URN  string `json:"urn"`
				Type string `json:"type"`
				storedPet
			} `json:"resources"`
		} `json:"deployment"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &exp))
	for _, res := range exp.Deployment.Resources {
		if res.Type == petType && strings.HasSuffix(res.URN, "::pet") {
			return res.storedPet
		}
	}
	t.Fatalf("no pet in the state:\n%s", r.Stdout)
	return storedPet{}
}

func keepersOf(p storedPet) (in, out any) {
	return p.Inputs["keepers"], p.Outputs["keepers"]
}

// TestStateMigrationUnderPulumi runs programs/migrations: a pet created
// with the keeper "owner", then a version of the program that names it
// "team" and attaches, with program.Migrations, a migration chain that
// renames it in the stored state. Under 3.274.1 the preview plans the
// migration and shows no change, the update applies it and changes
// nothing else (a changed keeper would replace the pet), the state keeps
// the source position and stack trace the SDK records, and the next update
// is a no-op in which the chain changes nothing. Under 3.260.0, which does
// not run migrations, the program fails at once with one line that names
// the release that does.
func TestStateMigrationUnderPulumi(t *testing.T) {
	t.Parallel()
	runs := engineRunsMigrations(t)
	s := newStack(t, "migrations", migrationsProgram)
	s.Up().MustSucceed(t)
	before := exportPet(t, s)
	require.Equal(t, map[string]any{"owner": "infra"}, before.Inputs["keepers"])

	s.SetConfig("stage", "v1")
	if !runs {
		up := s.Up().MustFail(t)
		assert.Contains(t, up.Output(), "program.Migrations: state migrations need Pulumi 3.274.1 or later: "+
			"monitor: the engine lacks a required feature: the engine does not support state migrations "+
			"(STATE_MIGRATIONS); upgrade the Pulumi CLI", "%s", up)
		assert.Equal(t, before, exportPet(t, s), "the state changed")
		return
	}

	preview := s.Preview().MustSucceed(t)
	assert.Contains(t, preview.Diagnostics("pet"), "State migration planned (state entries: 1 before, 1 after).", "%s", preview)
	assert.Contains(t, preview.Stdout, "2 unchanged", "%s", preview)

	up := s.Up().MustSucceed(t)
	assert.Contains(t, up.Diagnostics("pet"), "State migration applied (state entries: 1 before, 1 after).", "%s", up)
	assert.Contains(t, up.Stdout, "2 unchanged", "%s", up)
	after := exportPet(t, s)
	assert.Equal(t, before.ID, after.ID, "the pet was replaced")
	in, out := keepersOf(after)
	assert.Equal(t, map[string]any{"team": "infra"}, in)
	assert.Equal(t, map[string]any{"team": "infra"}, out)
	assert.NotEmpty(t, after.SourcePosition, "the SDK's source position is gone")
	assert.NotEmpty(t, after.StackTrace, "the SDK's stack trace is gone")
	assert.Equal(t, before.SourcePosition, after.SourcePosition)

	again := s.Up().MustSucceed(t)
	assert.NotContains(t, again.Stdout, "State migration", "the chain changed migrated state:\n%s", again)
	assert.Contains(t, again.Stdout, "2 unchanged", "%s", again)
	assert.Equal(t, after, exportPet(t, s))
}

// TestBadStateMigrationsUnderPulumi gives the engine a migration that
// panics, one that returns JSON that is not checkpoint state, and one that
// runs past its deadline. Under 3.274.1 each fails the update with an
// error under the pet that says what went wrong; under 3.260.0 the program
// stops at the one line that says the engine is too old. Either way the
// stored state is unchanged.
func TestBadStateMigrationsUnderPulumi(t *testing.T) {
	t.Parallel()
	runs := engineRunsMigrations(t)
	s := newStack(t, "migrations", migrationsProgram)
	s.Up().MustSucceed(t)
	before := exportPet(t, s)
	for _, tt := range []struct{ stage, want string }{
		{"panic", "panicked: the migration lost its way"},
		{"bad-state", "the result breaks the rule not-checkpoint-state: the new state is not a JSON array of checkpoint resources: json: unknown field \"shape\""},
		{"slow", "code = DeadlineExceeded desc = callbacks: state migration for urn:pulumi:"},
	} {
		s.SetConfig("stage", tt.stage)
		up := s.Up().MustFail(t)
		if runs {
			msg := strings.Join(up.Diagnostics("pet"), "\n")
			assert.Contains(t, msg, "state migration 1 of 1 for urn:pulumi:", "%s: %s", tt.stage, up)
			assert.Contains(t, msg, tt.want, "%s: %s", tt.stage, up)
		} else {
			assert.Contains(t, up.Output(), "state migrations need Pulumi 3.274.1 or later", "%s: %s", tt.stage, up)
		}
		assert.Equal(t, before, exportPet(t, s), "%s: the state changed", tt.stage)
	}
}

// TestCancelledStateMigrationUnderPulumi runs a migration while another
// resource's create fails. 3.274.1 cancels the migration and reports it
// under the migrated resource in its own words, as a failure of the
// resource: "state migration 1 of 1 for URN: rpc error: code = Canceled
// desc = context canceled". The call ends before the program can answer
// it, so no language host can word it otherwise; README says what it
// means. The stored pet is unchanged. Under 3.260.0, which runs no
// migration, only doomed fails.
func TestCancelledStateMigrationUnderPulumi(t *testing.T) {
	t.Parallel()
	runs := engineRunsMigrations(t)
	clitest.RequireCLI(t)
	p := clitest.Project{
		Name:      "migrations",
		Program:   builds.Program(t, migrationsProgram),
		Providers: map[string]string{"random": builds.Provider(t, providerPkg, "random")},
	}
	s := clitest.NewStack(t, p)
	s.Up().MustSucceed(t)
	before := exportPet(t, s)

	p.Env = []string{"RANDOM_THROTTLE_FIRST_CREATE=1"}
	s.SetProject(p)
	s.SetConfig("stage", "cancelled")
	up := s.Up().MustFail(t)
	assert.Contains(t, strings.Join(up.Diagnostics("doomed"), "\n"), "throttled", "%s", up)
	assert.Equal(t, before, exportPet(t, s), "the state changed")
	if !runs {
		// 3.260.0 stops the program after doomed's failure, before the
		// program has attached the migration.
		assert.Empty(t, up.Diagnostics("pet"), "%s", up)
		return
	}
	assert.Contains(t, up.Diagnostics("pet"), "error: state migration 1 of 1 for urn:pulumi:dev::migrations::"+petType+"::pet: "+
		"rpc error: code = Canceled desc = context canceled", "%s", up)
}
