package integration_test

import (
	"testing"

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
		version = append(version, enginetest.EngineVersion(enginetest.Engine3_260))
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
