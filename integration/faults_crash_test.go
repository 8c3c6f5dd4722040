package integration_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The provider process crashes (exits without answering) in the pet's
// Create while an error hook is bound to the pet, which asks for a retry
// until the third failure. The hook sees the crash as the create's failure
// (most often "error reading from server: EOF"), and the engine honours its answers:
// it retries twice, against the provider it does not restart, so each retry
// fails to connect, and after the hook's third answer the create fails. The
// user is told why: the CLI reports that the provider exited prematurely,
// with its standard error. The next `up` starts the provider afresh and
// creates the pet. Both engines and the Go SDK's own callbacks behave the
// same.
func TestProviderCrashesWithAnErrorHook(t *testing.T) {
	t.Parallel()
	for _, side := range callbackSides {
		t.Run(side.name, func(t *testing.T) {
			t.Parallel()
			s := newFaultStack(t, side.env, "RANDOM_CRASH_ON_CREATE="+filepath.Join(t.TempDir(), "crashed"))
			up := s.Up().MustFail(t)

			var answered []string
			for _, line := range s.calls(t) {
				if strings.HasPrefix(line, "error-hook ") {
					answered = append(answered, line)
				}
			}
			require.Len(t, answered, 3, "the error hook's calls: %q\n%s", answered, up)
			for i, line := range answered {
				assert.True(t, strings.HasPrefix(line, fmt.Sprintf("error-hook pet attempt %d: ", i+1)), "%q", line)
			}
			// How the crash reads depends on when the connection drops:
			// "error reading from server: EOF" most often.
			assert.Greater(t, len(answered[0]), len("error-hook pet attempt 1: "), "the hook sees the crash as the failure")
			t.Logf("the error hook saw: %q", answered)
			assert.Equal(t, []string{
				"warning: retrying create due to on-error hook request (1/100)",
				"warning: retrying create due to on-error hook request (2/100)",
			}, warnings(up.Diagnostics("pet")), "%s", up)
			assert.Contains(t, up.Stdout, "exited prematurely", "%s", up)
			assert.Contains(t, up.Stdout, "random provider: crashing in the Create of", "%s", up)
			assert.Empty(t, s.Export().OfType(petType))

			next := s.Up().MustSucceed(t)
			assert.Contains(t, next.Stdout, "+ 1 created", "%s", next)
			assert.Equal(t, []string{"pet"}, s.Export().OfType(petType))
		})
	}
}

// warnings returns the lines of diags that are warnings.
func warnings(diags []string) []string {
	var w []string
	for _, d := range diags {
		if strings.HasPrefix(d, "warning:") {
			w = append(w, d)
		}
	}
	return w
}
