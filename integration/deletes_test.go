package integration_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDeleteHooksAfterTheProgramEnds runs programs/deletes twice: the first
// update creates the pets "keep" and "drop", the second one's program
// declares only "keep". The engine deletes "drop" once the program has
// ended, and its delete hooks (bound with program.Hooks, and registered
// again by that second program) still run: the callback server outlives the
// program's body.
func TestDeleteHooksAfterTheProgramEnds(t *testing.T) {
	t.Parallel()
	s := newStack(t, "deletes", "github.com/langhost/callbacks/integration/programs/deletes")

	s.Up().MustSucceed(t)
	assert.Equal(t, []string{"drop", "keep"}, s.Export().OfType(petType))

	s.SetConfig("drop", "true")
	up := s.Up().MustSucceed(t)
	assert.Equal(t, []string{
		"before-delete drop, after the program's body returned",
		"after-delete drop, after the program's body returned",
	}, up.Diagnostics("drop"), "%s", up)
	assert.Empty(t, up.Diagnostics("keep"))
	assert.Contains(t, up.Stdout, "- 1 deleted")
	assert.Equal(t, []string{"keep"}, s.Export().OfType(petType))
}
