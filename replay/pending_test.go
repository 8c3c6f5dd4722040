package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/replay"
)

// TestReadReportsCallsNeverAnswered cuts a recorded log right after the
// request_started entry of its last callback call (a hook that hangs, a CLI
// stopped while it waits) and checks that Read yields that call last,
// Pending, with the line that started it and how long it had run when the
// log ended.
func TestReadReportsCallsNeverAnswered(t *testing.T) {
	data, err := os.ReadFile("testdata/errorhook-retry-3.274.1.jsonl")
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"/pulumirpc.Callbacks/Invoke"`) && strings.Contains(l, `"request_started"`) {
			cut = i
		}
	}
	require.GreaterOrEqual(t, cut, 0, "the log has no request_started of a callback call")
	var started struct {
		Timestamp time.Time `json:"timestamp"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[cut]), &started))
	// One more entry, a second later, that is not the answer: the log's
	// end time.
	end := started.Timestamp.Add(1500 * time.Millisecond)
	last := `{"method":"/pulumirpc.LanguageRuntime/Cancel","request":{},"metadata":{"kind":"language","mode":"client"},"progress":"request_started","timestamp":"` + end.Format(time.RFC3339Nano) + `"}` + "\n"
	log := strings.Join(lines[:cut+1], "") + last

	whole, errs := readFile(t, "testdata/errorhook-retry-3.274.1.jsonl")
	require.Empty(t, errs)
	var calls []*replay.Call
	for c, err := range replay.Read(bytes.NewReader([]byte(log))) {
		require.NoError(t, err)
		calls = append(calls, c)
	}
	require.NotEmpty(t, calls)
	p := calls[len(calls)-1]
	for _, c := range calls[:len(calls)-1] {
		assert.False(t, c.Pending, "call %d completed in the log", c.Seq)
	}
	require.True(t, p.Pending, "the last call yielded is not the one never answered: %+v", p)
	assert.Equal(t, cut+1, p.Line)
	assert.Equal(t, len(calls), p.Seq)
	assert.Equal(t, started.Timestamp, p.Start)
	assert.Equal(t, 1500*time.Millisecond, p.Duration)
	assert.Nil(t, p.Response)
	assert.Empty(t, p.Err)
	word, _ := p.Outcome()
	assert.Equal(t, replay.OutcomeUnanswered, word)
	assert.Empty(t, p.Changes(replay.HideSecrets))
	// It is the call the whole log completes last, with its registration
	// and resource.
	want := whole[len(whole)-1]
	assert.Equal(t, want.Kind, p.Kind)
	assert.Equal(t, want.Registration, p.Registration)
	assert.Equal(t, want.URN, p.URN)
	assert.Equal(t, want.Request, p.Request)
	assert.NotEqual(t, callbacks.Kind(0), p.Kind)

	// In the whole log every call is answered.
	for _, c := range whole {
		assert.False(t, c.Pending, "call %d of the whole log", c.Seq)
	}
}
