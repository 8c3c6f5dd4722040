package integration_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrorHookRetriesAThrottledCreate runs programs/errorhook with a
// provider that throttles the first create: the error hook sees the
// provider's error, asks for a retry, and the second attempt creates the
// string.
func TestErrorHookRetriesAThrottledCreate(t *testing.T) {
	t.Parallel()
	s := newStack(t, "errorhook", "github.com/langhost/callbacks/integration/programs/errorhook", throttle)

	up := s.Up().MustSucceed(t)
	assert.Equal(t, []string{
		"create failed (attempt 1): throttled: too many requests for token, try again; retry: true",
		retryWarning + " (1/100)",
	}, up.Diagnostics("token"), "the hook's report and the engine's retry, under the resource:\n%s", up)
	assert.Contains(t, up.Stdout, "+ 2 created")

	token := s.Export().Get(stringType, "token")
	require.NotNil(t, token)
	assert.Len(t, token.ID, 12)
	assert.Equal(t, token.ID, token.Outputs["result"])
	assert.Equal(t, map[string][]string{"OnError": {"retry-throttled"}}, token.Hooks)
}
