package integration_test

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `pulumi destroy --run-program` interrupted (SIGINT) while the pet's
// before-delete hook blocks, ignoring its context: the program ends, the
// pet stays in the state (its delete never began), and the next destroy
// completes, running the hook again: it is never skipped. The same holds
// for the Go SDK's own callbacks.
func TestDestroyInterruptedWhileADeleteHookBlocks(t *testing.T) {
	t.Parallel()
	for _, side := range callbackSides {
		t.Run(side.name, func(t *testing.T) {
			t.Parallel()
			s := newFaultStack(t, side.env, "FAULT_BLOCK=before-delete")
			s.Up().MustSucceed(t)
			require.Equal(t, []string{"pet"}, s.Export().OfType(petType))

			destroy := s.start(t, "destroy", "--yes", "--non-interactive", "--run-program")
			b := s.waitBlocked(t, destroy, "before-delete")
			endOrphans(t, b)
			require.NoError(t, destroy.cmd.Process.Signal(syscall.SIGINT))
			destroy.wait(t)
			assert.Error(t, destroy.err, "an interrupted destroy must not succeed: %s", destroy)
			requireGone(t, b)
			assert.Equal(t, []string{"pet"}, s.Export().OfType(petType), "the pet's delete never began")

			next := s.Destroy("--run-program").MustSucceed(t)
			assert.Contains(t, next.Stdout, "random:index:RandomPet pet deleted", "%s", next)
			assert.Empty(t, s.Export().OfType(petType))
			assert.Equal(t, 2, count(s.calls(t), "before-delete pet"), "the hook runs again: %q", s.calls(t))
		})
	}
}
