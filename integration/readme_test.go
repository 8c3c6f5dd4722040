package integration_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throttle makes the stand-in provider fail the first create of every
// resource with a "throttled" error.
const throttle = "RANDOM_THROTTLE_FIRST_CREATE=1"

// retryWarning is the warning the engine shows each time an error hook asks
// it to try an operation again.
const retryWarning = "warning: retrying create due to on-error hook request"

// TestReadmeExample runs the README's example, examples/readme built as it
// is, under `pulumi up`, with a provider that throttles the first create:
// the error hook asks for one retry, the pet is created with the stack
// transform's keepers and the hooks bound by hooks.Attach, and the audit
// hook's message shows under the pet.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	s := newStack(t, "readme", "github.com/langhost/callbacks/examples/readme", throttle)

	up := s.Up().MustSucceed(t)
	assert.Equal(t, []string{
		"creating pet",
		retryWarning + " (1/100)",
	}, up.Diagnostics("pet"), "the hook's message and one retry, under the pet:\n%s", up)
	assert.Contains(t, up.Stdout, "+ 2 created")

	state := s.Export()
	pet := state.Get(petType, "pet")
	require.NotNil(t, pet, "the state holds %v", state.Names())
	assert.Equal(t, map[string]any{"team": "infra"}, pet.Inputs["keepers"], "the stack transform's tag")
	assert.Equal(t, float64(2), pet.Inputs["length"])
	assert.Equal(t, map[string][]string{"BeforeCreate": {"audit"}, "OnError": {"retry"}}, pet.Hooks)
	assert.Len(t, strings.Split(pet.ID, "-"), 2, "a pet name of two words: %q", pet.ID)
}
