package integration_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `pulumi up` interrupted (SIGINT, as ^C sends) or killed (SIGKILL) while a
// before-create hook blocks, ignoring its context: the program ends and
// nothing listens where its callback server did, and the next `up`
// completes, running the hook again (the pet was never created). After a
// SIGKILL the CLI's own leftovers stay, whatever the program: its lock on
// the stack (the next `up` refuses until `pulumi cancel`), and its language
// host and providers (until their five-minute health check of the engine
// fails). The same holds for the Go SDK's own callbacks.
func TestUpInterruptedWhileAHookBlocks(t *testing.T) {
	t.Parallel()
	for _, side := range callbackSides {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
			t.Run(side.name+"/"+signalName(sig), func(t *testing.T) {
				t.Parallel()
				s := newFaultStack(t, side.env, "FAULT_BLOCK=before-create")
				up := s.start(t, "up", "--yes", "--non-interactive", "--skip-preview")
				b := s.waitBlocked(t, up, "before-create")
				endOrphans(t, b)
				signalled := time.Now()
				require.NoError(t, up.cmd.Process.Signal(sig))
				up.wait(t)
				exited := time.Since(signalled)
				assert.Error(t, up.err, "an interrupted up must not succeed: %s", up)
				requireGone(t, b)
				t.Logf("after %s: the CLI exited in %v, the program had ended %v after the signal; language host alive: %t",
					signalName(sig), exited, time.Since(signalled), alive(b.hostPID))

				if sig == syscall.SIGKILL {
					// A killed CLI leaves its lock on the stack, whatever
					// the program; the user removes it as the CLI says.
					locked := s.Up().MustFail(t)
					assert.Contains(t, locked.Stderr, "the stack is currently locked", "%s", locked)
					s.Run("cancel", "--yes", "--non-interactive").MustSucceed(t)
				}
				next := s.Up().MustSucceed(t)
				assert.Contains(t, next.Stdout, "+ 1 created", "%s", next)
				assert.Equal(t, []string{"pet"}, s.Export().OfType(petType))
				assert.Equal(t, 2, count(s.calls(t), "before-create pet"), "%q", s.calls(t))
			})
		}
	}
}
