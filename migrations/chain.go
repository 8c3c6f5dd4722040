package migrations

import (
	"context"
	"fmt"
)

// Chain is a migration built from versioned upgrades, in the shape
// Terraform's UpgradeState gives providers: the state of a resource is at
// some schema version, which [Chain.Version] reads from the state itself,
// and Upgrades[v] takes it from version v to v+1. [Chain.Migrate] runs the
// upgrades the registering resource's state still needs, in order, and
// nothing else: on state already at the newest version it changes nothing,
// so the chain is idempotent, as the engine requires a migration to be.
//
//	chain := &migrations.Chain{
//		Version:  func(r map[string]any) (int, error) { ... },
//		Upgrades: []migrations.Upgrade{renameLength, addPrefix}, // v0→v1, v1→v2
//	}
//	program.Migrations(ctx, chain.Migrate)
//
// Only the registering resource (the first resource of the old state) is
// upgraded; its descendants are passed on unchanged. A Chain is safe for
// concurrent use if its functions are.
type Chain struct {
	// Version reads the schema version of a resource's checkpoint state
	// (the map has the keys of the checkpoint format: "urn", "type",
	// "inputs", "outputs", ...). It must return a version from 0 to
	// len(Upgrades); len(Upgrades) means the state is current.
	Version func(resource map[string]any) (int, error)
	// Upgrades[v] rewrites, in place, a resource's state at version v so
	// that it is at version v+1.
	Upgrades []Upgrade
}

// Upgrade is one step of a [Chain]: it rewrites a resource's checkpoint
// state in place, from one schema version to the next.
type Upgrade func(ctx context.Context, resource map[string]any) error

// Migrate is the chain as a [Func]. After each upgrade it reads the
// version again, and fails if the upgrade did not bring the state to the
// next version: a chain whose Version and Upgrades disagree would not be
// idempotent. It returns nil, leaving the state alone, when the state is
// at the newest version.
func (c *Chain) Migrate(ctx context.Context, args *Args) (*Result, error) {
	if c == nil || c.Version == nil {
		return nil, fmt.Errorf("migrations: a Chain needs a Version function")
	}
	resources, err := args.Resources()
	if err != nil {
		return nil, err
	}
	if len(resources) == 0 {
		return nil, nil
	}
	r := resources[0]
	newest := len(c.Upgrades)
	v, err := c.version(r)
	if err != nil {
		return nil, err
	}
	if v == newest {
		return nil, nil
	}
	for ; v < newest; v++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if c.Upgrades[v] == nil {
			return nil, fmt.Errorf("migrations: the upgrade from version %d of %s is nil", v, args.URN)
		}
		if err := c.Upgrades[v](ctx, r); err != nil {
			return nil, fmt.Errorf("migrations: upgrading %s from version %d to %d: %w", args.URN, v, v+1, err)
		}
		got, err := c.version(r)
		if err != nil {
			return nil, err
		}
		if got != v+1 {
			return nil, fmt.Errorf("migrations: the upgrade of %s from version %d left it at version %d, not %d",
				args.URN, v, got, v+1)
		}
	}
	return Replace(resources, nil)
}

func (c *Chain) version(r map[string]any) (int, error) {
	v, err := c.Version(r)
	if err != nil {
		return 0, fmt.Errorf("migrations: reading the schema version of %v: %w", r["urn"], err)
	}
	if v < 0 || v > len(c.Upgrades) {
		return 0, fmt.Errorf("migrations: %v is at schema version %d, which this chain does not know (it knows 0 to %d)",
			r["urn"], v, len(c.Upgrades))
	}
	return v, nil
}
