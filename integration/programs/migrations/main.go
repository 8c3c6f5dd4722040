// Command migrations is a Pulumi program whose RandomPet changes the shape
// of its keepers between versions of the program, with a state migration
// that moves the stored state along. The stack's configuration picks the
// version ("stage"):
//
//   - v0: keepers {"owner": "infra"}, no migration;
//   - v1: keepers {"team": "infra"}, and a migration chain that renames the
//     stored keeper "owner" to "team" (in inputs and outputs), so the pet
//     is not replaced;
//   - panic, bad-state, slow: keepers as in v0, and a migration that panics,
//     returns JSON that is not checkpoint state, or runs past its one-second
//     deadline;
//   - cancelled: keepers as in v0, a migration that waits for the engine
//     to give up on it, and a second pet, "doomed", registered first,
//     whose create fails as throttled (RANDOM_THROTTLE_FIRST_CREATE) and
//     whose error hook, once the migration runs, says not to retry: the
//     create fails while the migration runs;
//   - held: keepers as in v0, a migration that waits (two seconds at most)
//     for a second pet, "later", registered once the migration has started,
//     and a message under "later" that says which came first, the
//     migration's answer or later's registration (the engine decides steps
//     one registration at a time, so the migration's);
//   - id-changed: keepers as in v0, and a migration that changes the pet's
//     ID, a result the engine refuses. It is a plain SDK migration
//     (pulumi.StateMigrations), which the module does not check before the
//     engine does, so that the engine's own words reach the user.
//
// An error hook retries a create that failed as throttled, as the stand-in
// provider's RANDOM_THROTTLE_FIRST_CREATE makes the first one fail.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

const petType = "random:index/randomPet:RandomPet"

// ownerToTeam is the migration of v1: version 0 keeps "owner", version 1
// "team".
var ownerToTeam = &migrations.Chain{
	Version: func(r map[string]any) (int, error) {
		inputs, _ := r["inputs"].(map[string]any)
		if keepers, _ := inputs["keepers"].(map[string]any); keepers["owner"] != nil {
			return 0, nil
		}
		return 1, nil
	},
	Upgrades: []migrations.Upgrade{func(_ context.Context, r map[string]any) error {
		for _, k := range []string{"inputs", "outputs"} {
			props, _ := r[k].(map[string]any)
			if keepers, ok := props["keepers"].(map[string]any); ok {
				keepers["team"] = keepers["owner"]
				delete(keepers, "owner")
			}
		}
		return nil
	}},
}

// bad are the migrations of the stages that fail.
var bad = map[string]migrations.Func{
	"panic": func(context.Context, *migrations.Args) (*migrations.Result, error) {
		panic("the migration lost its way")
	},
	"bad-state": func(_ context.Context, a *migrations.Args) (*migrations.Result, error) {
		state, _ := json.Marshal([]map[string]any{{"urn": string(a.URN), "shape": "not a checkpoint"}})
		return &migrations.Result{NewState: state}, nil
	},
	"slow": func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, nil
		}
	},
}

// changeID is the migration of id-changed: it gives the pet another ID.
func changeID(_ context.Context, a *pulumi.StateMigrationArgs) (*pulumi.StateMigrationResult, error) {
	a.OldState[0]["id"] = fmt.Sprint(a.OldState[0]["id"]) + "-changed"
	return &pulumi.StateMigrationResult{NewState: a.OldState}, nil
}

// cancelledStage registers the pet "doomed", whose create fails before the
// migration it returns has answered. The program registers the migrated
// pet only once doomed's create has failed once and its error hook holds
// the failure (the engine generates steps one registration at a time); the
// hook lets it fail for good once the migration has started, or after five
// seconds (3.274.1 calls the migration only once the hook has answered),
// and the migration waits for the engine to cancel it (at most a minute).
func cancelledStage(ctx *pulumi.Context, mon *monitor.Monitor) (pulumi.ResourceOption, error) {
	holding, started := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold, err := hooks.RegisterErrorHook(ctx.Context(), mon, "hold", func(context.Context, *hooks.ErrorArgs) (bool, error) {
		once.Do(func() { close(holding) })
		select {
		case <-started:
		case <-time.After(5 * time.Second):
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	var doomed pulumi.CustomResourceState
	err = ctx.RegisterResource(petType, "doomed", pulumi.Map{}, &doomed,
		program.Hooks(&transforms.HooksBinding{OnError: []transforms.HookRef{hold}}))
	if err != nil {
		return nil, err
	}
	select {
	case <-holding:
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("doomed's create never failed")
	}
	return program.Migrations(ctx, func(ctx context.Context, _ *migrations.Args) (*migrations.Result, error) {
		close(started)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, nil
		}
	}, callbacks.Timeout(time.Minute))
}

// heldStage returns the migration of the stage held, and a function to
// call once the pet is registered, which registers the pet "later" once the
// migration has started. The migration answers once later is registered,
// or after two seconds; then a message under later says which came first.
func heldStage(ctx *pulumi.Context, laterOpts []pulumi.ResourceOption) (pulumi.ResourceOption, func() error, error) {
	started, laterDone, answered := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	upgrade, err := program.Migrations(ctx, func(context.Context, *migrations.Args) (*migrations.Result, error) {
		close(started)
		select {
		case <-laterDone:
		case <-time.After(2 * time.Second):
		}
		note("the migration answered")
		close(answered)
		return nil, nil
	}, callbacks.Timeout(time.Minute))
	if err != nil {
		return nil, nil, err
	}
	registerLater := func() error {
		select {
		case <-started:
		case <-time.After(time.Minute):
			return fmt.Errorf("the pet's migration never started")
		}
		var later pulumi.CustomResourceState
		if err := ctx.RegisterResource(petType, "later", pulumi.Map{
			"keepers": pulumi.Map{"owner": pulumi.String("later")},
		}, &later, laterOpts...); err != nil {
			return err
		}
		later.URN().ApplyT(func(pulumi.URN) error {
			note("later's registration completed")
			close(laterDone)
			<-answered
			mu.Lock()
			msg := strings.Join(order, ", then ")
			mu.Unlock()
			return ctx.Log.Info(msg, &pulumi.LogArgs{Resource: &later})
		})
		return nil
	}
	return upgrade, registerLater, nil
}

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		retry, err := hooks.RegisterErrorHook(ctx.Context(), mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			return strings.Contains(a.LastError(), "throttled") && a.Attempt() < 3, nil
		})
		if err != nil {
			return err
		}
		stage, _ := ctx.GetConfig(ctx.Project() + ":stage")
		keeper := "owner"
		var fn migrations.Func
		switch stage {
		case "v1":
			keeper, fn = "team", ownerToTeam.Migrate
		case "", "v0":
		default:
			fn = bad[stage]
		}
		opts := []pulumi.ResourceOption{program.Hooks(&transforms.HooksBinding{OnError: []transforms.HookRef{retry}})}
		if stage == "id-changed" {
			opts = append(opts, pulumi.StateMigrations([]pulumi.StateMigration{changeID}))
		}
		if fn != nil {
			var migOpts []callbacks.RegisterOption
			if stage == "slow" {
				// Only the migration meant to overrun has a deadline of
				// its own: one on the others could pass on a busy machine.
				migOpts = append(migOpts, callbacks.Timeout(time.Second))
			}
			upgrade, err := program.Migrations(ctx, fn, migOpts...)
			if err != nil {
				return err
			}
			opts = append(opts, upgrade)
		}
		then := func() error { return nil }
		if stage == "held" {
			upgrade, registerLater, err := heldStage(ctx, slices.Clone(opts))
			if err != nil {
				return err
			}
			opts, then = append(opts, upgrade), registerLater
		}
		if stage == "cancelled" {
			upgrade, err := cancelledStage(ctx, mon)
			if err != nil {
				return err
			}
			opts = append(opts, upgrade)
		}
		var pet pulumi.CustomResourceState
		if err := ctx.RegisterResource(petType, "pet", pulumi.Map{
			"keepers": pulumi.Map{keeper: pulumi.String("infra")},
		}, &pet, opts...); err != nil {
			return err
		}
		return then()
	})
}
