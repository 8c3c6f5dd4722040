package integration_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHooksAtEveryPoint runs programs/hooks, a pet with a hook at each of
// the six points that reports under the pet, through a create, an update
// (its length changed in the stack's configuration) and a destroy, each
// after a preview. Previews run only the hooks registered with
// hooks.OnDryRun (before create, after update, before delete); updates run
// the hooks of the points their steps pass. Each hook gets the pet's ID and
// its inputs as its point carries them.
func TestHooksAtEveryPoint(t *testing.T) {
	t.Parallel()
	s := newStack(t, "hooks", "github.com/langhost/callbacks/integration/programs/hooks")

	preview := s.Preview().MustSucceed(t)
	assert.Equal(t, []string{
		`before-create: id "", length is 2`,
	}, preview.Diagnostics("pet"), "a create's preview:\n%s", preview)

	up := s.Up().MustSucceed(t)
	pet := s.Export().Get(petType, "pet")
	require.NotNil(t, pet)
	assert.Equal(t, []string{
		`before-create: id "", length is 2`,
		`after-create: id "` + pet.ID + `", length is 2`,
	}, up.Diagnostics("pet"), "a create:\n%s", up)
	assert.Equal(t, map[string][]string{
		"BeforeCreate": {"before-create"}, "AfterCreate": {"after-create"},
		"BeforeUpdate": {"before-update"}, "AfterUpdate": {"after-update"},
		"BeforeDelete": {"before-delete"}, "AfterDelete": {"after-delete"},
	}, pet.Hooks, "the bindings in the state")

	s.SetConfig("length", "3")
	preview = s.Preview().MustSucceed(t)
	assert.Equal(t, []string{
		`after-update: id "` + pet.ID + `", length was 2, length is 3`,
	}, preview.Diagnostics("pet"), "an update's preview:\n%s", preview)

	up = s.Up().MustSucceed(t)
	assert.Equal(t, []string{
		`before-update: id "` + pet.ID + `", length was 2, length is 3`,
		`after-update: id "` + pet.ID + `", length was 2, length is 3`,
	}, up.Diagnostics("pet"), "an update:\n%s", up)
	assert.Contains(t, up.Stdout, "~ 1 updated")

	// Delete hooks need the program, which registers them.
	refused := s.Destroy().MustFail(t)
	assert.Equal(t, []string{
		"error: Resource has delete hooks registered, but the program is not running. Hooks: before-delete, after-delete",
	}, refused.Diagnostics("pet"), "%s", refused)
	assert.Contains(t, refused.Stderr, "You must run with the `--run-program` flag to use delete hooks during destroy.")

	destroy := s.Destroy("--run-program").MustSucceed(t)
	assert.Equal(t, []string{
		`before-delete: id "` + pet.ID + `", length was 3`, // the destroy's preview
		`before-delete: id "` + pet.ID + `", length was 3`,
		`after-delete: id "` + pet.ID + `", length was 3`,
	}, destroy.Diagnostics("pet"), "a destroy:\n%s", destroy)
	assert.Empty(t, s.Export().Names(), "the stack is empty")
}
