package replay_test

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/replay"
)

// readFile reads every call and error of a log file.
func readFile(t *testing.T, path string) ([]*replay.Call, []error) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var calls []*replay.Call
	var errs []error
	for c, err := range replay.Read(f) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		calls = append(calls, c)
	}
	return calls, errs
}

// summary is what a test checks of a call.
type summary struct {
	Kind     callbacks.Kind
	Method   string
	Name     string
	Order    int
	URN      string
	Outcome  replay.Outcome
	Message  string
	Changes  []replay.Change
	HasStart bool
}

func summarize(calls []*replay.Call) []summary {
	var out []summary
	for _, c := range calls {
		word, msg := c.Outcome()
		out = append(out, summary{
			Kind: c.Kind, Method: c.Registration.Method, Name: c.Registration.Name, Order: c.Registration.Order,
			URN: string(c.URN), Outcome: word, Message: msg, Changes: c.Changes(replay.HideSecrets),
			HasStart: !c.Start.IsZero() && c.Duration > 0,
		})
	}
	return out
}

func TestReadSampleLogs(t *testing.T) {
	t.Parallel()
	hooks := `{"afterCreate":["after-create"],"afterDelete":["after-delete"],"afterUpdate":["after-update"],"beforeCreate":["before-create"],"beforeDelete":["before-delete"],"beforeUpdate":["before-update"]}`
	for _, tc := range []struct {
		log  string
		want []summary
	}{
		{"transform", []summary{
			{callbacks.KindResourceTransform, "RegisterStackTransform", "", 1, "urn:pulumi:dev::transform::random:index/randomPet:RandomPet::pet", "changed", "",
				[]replay.Change{{Path: "properties.prefix", New: `"tx"`}}, true},
		}},
		{"hooks", []summary{
			{callbacks.KindResourceTransform, "RegisterStackTransform", "", 1, "urn:pulumi:dev::hooks::random:index/randomPet:RandomPet::pet", "changed", "",
				[]replay.Change{{Path: "options.hooks", New: hooks}}, true},
			{callbacks.KindResourceHook, "RegisterResourceHook", "before-create", 0, "urn:pulumi:dev::hooks::random:index/randomPet:RandomPet::pet", "ok", "", nil, true},
			{callbacks.KindResourceHook, "RegisterResourceHook", "after-create", 0, "urn:pulumi:dev::hooks::random:index/randomPet:RandomPet::pet", "ok", "", nil, true},
		}},
		{"errorhook", []summary{
			{callbacks.KindResourceTransform, "RegisterStackTransform", "", 1, "urn:pulumi:dev::errorhook::random:index/randomString:RandomString::token", "changed", "",
				[]replay.Change{{Path: "options.hooks", New: `{"onError":["retry-throttled"]}`}}, true},
			{callbacks.KindErrorHook, "RegisterErrorHook", "retry-throttled", 0, "urn:pulumi:dev::errorhook::random:index/randomString:RandomString::token", "retry", "",
				[]replay.Change{{Path: "retry", New: "true"}}, true},
		}},
		{"migrations", nil},
	} {
		t.Run(tc.log, func(t *testing.T) {
			t.Parallel()
			calls, errs := readFile(t, "testdata/"+tc.log+".jsonl")
			require.Empty(t, errs)
			assert.Equal(t, tc.want, summarize(calls))
			for i, c := range calls {
				assert.Equal(t, i+1, c.Seq)
				_, _, err := c.Messages()
				assert.NoError(t, err)
			}
		})
	}
}

func TestLineErrorUnwraps(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	err := error(&replay.LineError{Line: 12, Err: cause})
	assert.Equal(t, "log line 12: cause", err.Error())
	assert.ErrorIs(t, err, cause)
}
