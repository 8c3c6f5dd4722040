package integration_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/enginetest"
)

// TestSimulatorMatchesTheEngineOnMigrations compares the engines as
// TestSimulatorMatchesTheEngine does, on programs/migrations: a pet created
// with the keeper "owner"; a preview and an update of the version of the
// program that names it "team" and migrates the stored state to match; an
// update with nothing left to migrate. The simulator plays the release of
// the CLI on PATH: 3.274.1 runs the migrations, 3.260.0 refuses them.
func TestSimulatorMatchesTheEngineOnMigrations(t *testing.T) {
	t.Parallel()
	var version []enginetest.Option
	if !engineRunsMigrations(t) {
		version = append(version, enginetest.EngineVersion("3.260.0"))
	}
	tw := newTwin(t, "migrations", migrationsProgram, "pet")
	tw.upOn(t, "the create", version...)

	tw.setConfig(t, "stage", "v1")
	tw.previewOn(t, "preview of the migration", version...)
	tw.upOn(t, "the migration", version...)
	tw.upOn(t, "the update after it", version...)
}

// previewOn is preview, with the simulator started with opts.
func (tw *twin) previewOn(t *testing.T, what string, opts ...enginetest.Option) {
	t.Helper()
	tw.compare(t, what, tw.cli.Preview(), []*enginetest.Result{tw.simulate(t, true, append(opts, enginetest.DryRun(true))...)})
}

// upOn is up, with the simulator started with opts.
func (tw *twin) upOn(t *testing.T, what string, opts ...enginetest.Option) {
	t.Helper()
	cli := tw.cli.Up()
	res := tw.simulate(t, true, opts...)
	tw.compare(t, what, cli, []*enginetest.Result{res})
	tw.compareStates(t, what, res.State)
}

// TestSimulatorMatchesTheEngineOnABadMigration compares the engines on a
// migration whose result the engine refuses: programs/migrations at stage
// id-changed changes the pet's ID, through a plain SDK migration that the
// module does not check first. Both engines fail the update with the
// engine's words under the pet and keep the stored state. The IDs in the
// words are the providers' (the stand-in's pet name, the simulator's
// "pet-id"), so the CLI's is read as the simulator's.
func TestSimulatorMatchesTheEngineOnABadMigration(t *testing.T) {
	t.Parallel()
	var version []enginetest.Option
	if !engineRunsMigrations(t) {
		version = append(version, enginetest.EngineVersion("3.260.0"))
	}
	tw := newTwin(t, "migrations", migrationsProgram, "pet")
	tw.upOn(t, "the create", version...)
	cliID := tw.cli.Export().Get(petType, "pet").ID
	require.NotEmpty(t, cliID)

	tw.setConfig(t, "stage", "id-changed")
	cli := tw.cli.Up()
	res := tw.simulate(t, true, version...)
	var simID string
	for _, r := range res.State.Resources {
		if r.Type == petType && r.Name == "pet" {
			simID = r.ID
		}
	}
	require.True(t, res.Failed, "the simulator accepted a migration that changes the ID")
	assert.NotEqual(t, 0, cli.ExitCode, "the CLI accepted a migration that changes the ID:\n%s", cli)
	var want []string
	for _, line := range cli.Diagnostics("pet") {
		want = append(want, strings.ReplaceAll(line, cliID, simID))
	}
	assert.Equal(t, want, tw.diagnostics(res, false)["pet"], "the diagnostics under the pet (CLI, then simulator)")
	if engineRunsMigrations(t) {
		assert.Contains(t, strings.Join(want, "\n"),
			`changed ID from "`+simID+`" to "`+simID+`-changed" without changing URN`, "the engine's words")
	}
	tw.compareStates(t, "after the refused migration", res.State)
}

// TestSimulatorMatchesTheEngineOnAHeldMigration compares the engines on
// programs/migrations at stage held: the pet's migration waits (at most two
// seconds) for the pet "later", which the program registers once the
// migration has started. Both engines decide steps one registration at a
// time, so later's registration completes only after the migration
// answered, and the message under later says so. Under 3.260.0, which
// refuses migrations, both fail the update the same way.
func TestSimulatorMatchesTheEngineOnAHeldMigration(t *testing.T) {
	t.Parallel()
	runs := engineRunsMigrations(t)
	var version []enginetest.Option
	if !runs {
		version = append(version, enginetest.EngineVersion("3.260.0"))
	}
	tw := newTwin(t, "migrations", migrationsProgram, "pet", "later")
	tw.upOn(t, "the create", version...)

	tw.setConfig(t, "stage", "held")
	cli := tw.cli.Up()
	res := tw.simulate(t, true, version...)
	tw.compare(t, "the held migration", cli, []*enginetest.Result{res})
	tw.compareStates(t, "the held migration", res.State)
	if runs {
		assert.Contains(t, cli.Diagnostics("later"), "the migration answered, then later's registration completed",
			"the message under later on the CLI")
	} else {
		assert.Contains(t, cli.Output(), "state migrations need Pulumi 3.274.1 or later", "%s", cli)
	}
}
