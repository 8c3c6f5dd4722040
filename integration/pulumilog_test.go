package integration_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/integration/clitest"
	"github.com/langhost/callbacks/internal/calllog"
)

// TestCallbacksInPulumisLog runs programs/hooks under a plain `pulumi up`,
// no debugging flag, then reads the stack's automatic log with `pulumi logs
// decrypt --latest`: the program's callback server sent a start record and
// an end record of each hook call to the CLI's OTLP logs receiver
// (PULUMI_LOG_OTLP_ENDPOINT), and the CLI stored them in the log, the
// records' attributes as fields. Pulumi 3.260.0 and 3.274.1 both start the
// receiver, give its address to the program and store the records the
// same way (seen: the same fields, the record's own time as "time", no
// "v"); a CLI without `pulumi logs` has no automatic log, and the test says
// so.
func TestCallbacksInPulumisLog(t *testing.T) {
	t.Parallel()
	s := newStack(t, "hooks", "github.com/langhost/callbacks/integration/programs/hooks")
	if help := s.Run("logs", "decrypt", "--help"); help.ExitCode != 0 || !strings.Contains(help.Stdout, "--latest") {
		t.Skipf("pulumi %s has no `pulumi logs decrypt --latest`, so no automatic log to read:\n%s", clitest.EngineVersion(t), help)
	}
	s.Up().MustSucceed(t) // then nothing before the decrypt: every command writes a log, the latest is decrypted

	dec := s.Run("logs", "decrypt", "--latest").MustSucceed(t)
	assert.Contains(t, dec.Stderr, "organization+hooks+dev-", "the update's log is the latest")
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(dec.Stdout))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			lines = append(lines, line)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, lines, "a decrypted log:\n%s", dec)

	receiver := false
	type call struct{ start, end map[string]any }
	calls := map[string]*call{} // by hook name
	for _, l := range lines {
		if msg, _ := l["msg"].(string); strings.Contains(msg, "OTLP receiver") {
			receiver = true
		}
		if l["callbacks.module"] != "github.com/langhost/callbacks" || l["pulumi.callback.kind"] != "resource_hook" {
			continue
		}
		assert.EqualValues(t, calllog.Schema, l["callbacks.schema"])
		name, _ := l["pulumi.callback.name"].(string)
		c := calls[name]
		if c == nil {
			c = &call{}
			calls[name] = c
		}
		switch l["msg"] {
		case "callbacks: call started":
			assert.Nil(t, c.start, "a second start of %s", name)
			c.start = l
		case "callbacks: call finished":
			assert.Nil(t, c.end, "a second end of %s", name)
			c.end = l
		default:
			t.Errorf("a record of the module with msg %q", l["msg"])
		}
	}
	assert.True(t, receiver, "the log says the CLI started its OTLP receiver")
	require.Len(t, calls, 2, "the hooks a create runs, each with its records: %v", calls)
	urn := "urn:pulumi:dev::hooks::" + petType + "::pet"
	for _, name := range []string{"before-create", "after-create"} {
		c := calls[name]
		require.NotNil(t, c, "the records of %s", name)
		require.NotNil(t, c.start, "the start of %s", name)
		require.NotNil(t, c.end, "the end of %s", name)
		assert.Equal(t, c.start["callbacks.call_id"], c.end["callbacks.call_id"], "%s's records share a call id", name)
		assert.NotEmpty(t, c.start["callbacks.call_id"])
		for _, r := range []map[string]any{c.start, c.end} {
			assert.Equal(t, urn, r["pulumi.resource.urn"])
			assert.Equal(t, petType, r["pulumi.resource.type"])
			assert.Equal(t, "pet", r["pulumi.resource.name"])
			assert.Equal(t, "INFO", r["level"])
		}
		assert.Equal(t, "ok", c.end["callbacks.outcome"])
		assert.Equal(t, "OK", c.end["rpc.response.status_code"])
		assert.IsType(t, float64(0), c.end["callbacks.duration_ms"])
		assert.Contains(t, c.start["pulumi.callback.site"], "integration/programs/hooks/main.go:")
	}
}
