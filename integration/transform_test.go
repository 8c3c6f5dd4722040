package integration_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStackTransform runs programs/transform, whose stack transform gives
// the pet the prefix "tx", through a preview, an update, a second preview
// and `destroy --run-program`: the preview shows the transformed input, the
// state holds it, the second preview finds nothing to change (the transform
// ran there too), and the destroy, which runs the program and so the
// transform twice, empties the stack.
func TestStackTransform(t *testing.T) {
	t.Parallel()
	s := newStack(t, "transform", "github.com/langhost/callbacks/integration/programs/transform")

	preview := s.Preview("--diff").MustSucceed(t)
	assert.Contains(t, preview.Stdout, `prefix: "tx"`, "the preview shows the transformed input:\n%s", preview)
	assert.Contains(t, preview.Stdout, "+ 2 to create")

	up := s.Up().MustSucceed(t)
	assert.Equal(t, []string{"transforming pet"}, up.Diagnostics("pet"), "the transform's message, under the pet:\n%s", up)
	pet := s.Export().Get(petType, "pet")
	require.NotNil(t, pet)
	assert.Equal(t, "tx", pet.Inputs["prefix"], "the transformed input in the state")
	assert.Equal(t, "tx", pet.Outputs["prefix"], "the provider got the transformed input")
	assert.True(t, strings.HasPrefix(pet.ID, "tx-"), "the provider named the pet with the prefix: %q", pet.ID)
	assert.Contains(t, up.Stdout, `pet: "`+pet.ID+`"`, "the stack output")

	again := s.Preview().MustSucceed(t)
	assert.Contains(t, again.Stdout, "2 unchanged", "without the transform the preview would drop the prefix:\n%s", again)
	assert.NotContains(t, again.Stdout, "to update")
	assert.Equal(t, []string{"transforming pet"}, again.Diagnostics("pet"))

	destroy := s.Destroy("--run-program").MustSucceed(t)
	assert.Equal(t, []string{"transforming pet", "transforming pet"}, destroy.Diagnostics("pet"),
		"the program runs in the destroy's preview and again in the destroy:\n%s", destroy)
	assert.Contains(t, destroy.Stdout, "- 2 deleted")
	assert.Empty(t, s.Export().Names(), "the stack is empty")
}
