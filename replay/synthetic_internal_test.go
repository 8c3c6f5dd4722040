package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
)

func readAll(t testing.TB, log []byte) ([]*Call, []*LineError) {
	t.Helper()
	var calls []*Call
	var errs []*LineError
	for c, err := range Read(bytes.NewReader(log)) {
		if err != nil {
			var le *LineError
			require.True(t, errors.As(err, &le), "not a *LineError: %v", err)
			errs = append(errs, le)
			continue
		}
		calls = append(calls, c)
	}
	return calls, errs
}

func TestReadSyntheticBothForms(t *testing.T) {
	t.Parallel()
	for _, oneEntry := range []bool{false, true} {
		var log bytes.Buffer
		require.NoError(t, writeSynthetic(&log, synthetic{resources: 3, oneEntry: oneEntry, every: true, secret: "hunter2-secret", plain: "us-west-2"}))
		calls, errs := readAll(t, log.Bytes())
		var kinds []callbacks.Kind
		seqs := map[int]bool{}
		for _, c := range calls {
			kinds = append(kinds, c.Kind)
			seqs[c.Seq] = true
		}
		R, S, M, H, E, I := callbacks.KindResourceTransform, callbacks.KindResourceTransform, callbacks.KindStateMigration, callbacks.KindResourceHook, callbacks.KindErrorHook, callbacks.KindInvokeTransform
		assert.Equal(t, []callbacks.Kind{I, R, S, M, H, E, R, S, M, H, R, S, M, H}, kinds, "oneEntry=%v", oneEntry)
		require.Len(t, errs, 3, "oneEntry=%v: %v", oneEntry, errs)
		assert.ErrorContains(t, errs[0], "a callback kind this module does not know, registered by RegisterFutureHook")
		assert.ErrorContains(t, errs[1], "does not decode as a resource transform")
		assert.ErrorContains(t, errs[2], "token future-field is a callback kind this module does not know, registered by RegisterResource")
		assert.Len(t, seqs, len(calls))
		var names []string
		for _, c := range calls[:6] {
			names = append(names, c.String())
		}
		assert.Equal(t, []string{"stack invoke transform #1", "transform #1 of the resource", "stack transform #1", "migration #1", "audit", "retry"}, names)
		other := *calls[1]
		other.URN = "urn:pulumi:dev::synth::random:index/randomPet:RandomPet::pet-1"
		assert.Equal(t, "transform #1 of pet-0", other.String(), "a transform of another resource")

		own := calls[1]
		assert.Equal(t, Registration{Method: "RegisterResource", Order: 1, Resource: "urn:pulumi:dev::synth::random:index/randomPet:RandomPet::pet-0"}, own.Registration)
		assert.Equal(t, "urn:pulumi:dev::synth::random:index/randomPet:RandomPet::pet-0", string(own.URN))
		assert.Equal(t, Registration{Method: "RegisterStackTransform", Order: 1}, calls[2].Registration)
		assert.Equal(t, "random:index/getPet:getPet", calls[0].Invoke)
		assert.Equal(t, Registration{Method: "RegisterErrorHook", Name: "retry"}, calls[5].Registration)
		mig := calls[3]
		assert.Equal(t, "pet-0", mig.Name)
		assert.Equal(t, synthPetType, mig.Type)
		word, _ := mig.Outcome()
		assert.Equal(t, OutcomeUnchanged, word)
		word, _ = calls[2].Outcome()
		assert.Equal(t, OutcomeChanged, word)
		assert.Equal(t, []Change{
			{Path: "properties.prefix", New: `"tx"`},
			{Path: "options.hooks", New: `{"beforeCreate":["audit"]}`},
		}, calls[2].Changes(HideSecrets))
		// Calls come in completion order, each after its line.
		for i := 1; i < len(calls); i++ {
			assert.Greater(t, calls[i].Seq, calls[i-1].Seq)
			assert.Greater(t, calls[i].Line, calls[i-1].Line)
		}
	}
}

// TestReadLongLines reads a call whose payload is 8 MiB, far past any
// line-length limit of bufio.Scanner and past the size of the buffer kept
// between lines, followed by a small call.
func TestReadLongLines(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 8<<20)
	var log bytes.Buffer
	s := &synthWriter{o: synthetic{}, w: bufio.NewWriter(&log), now: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)}
	s.enc = json.NewEncoder(s.w)
	s.call(monitorPrefix+resourceHook, map[string]any{"name": "audit", "callback": map[string]any{"target": "t", "token": "h"}}, map[string]any{}, nil, serverMeta)
	s.invoke("h", &pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::t:m:T::big", Name: big}, &pulumirpc.ResourceHookResponse{}, nil)
	s.invoke("h", &pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::p::t:m:T::small", Name: "small"}, &pulumirpc.ResourceHookResponse{Error: "no"}, nil)
	require.NoError(t, s.w.Flush())
	calls, errs := readAll(t, log.Bytes())
	require.Empty(t, errs)
	require.Len(t, calls, 2)
	assert.Equal(t, big, calls[0].Name)
	assert.Equal(t, "small", calls[1].Name)
	word, msg := calls[1].Outcome()
	assert.Equal(t, []string{"refused", "no"}, []string{string(word), msg})
}
