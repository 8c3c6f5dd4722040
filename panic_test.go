package callbacks_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks"
)

// reports records what a registry reports, as the engine's log would.
type reports struct {
	mu   sync.Mutex
	sevs []callbacks.Severity
	msgs []string
}

func (r *reports) Report(_ context.Context, sev callbacks.Severity, _, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sevs = append(r.sevs, sev)
	r.msgs = append(r.msgs, msg)
	return nil
}

func panicking(t *testing.T, opts ...callbacks.RegistryOption) error {
	t.Helper()
	reg := newTestRegistry(t, opts...)
	token, err := reg.Register(callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		panic("out of cheese")
	}), callbacks.Name("cheese"))
	require.NoError(t, err)
	_, err = reg.Invoke(t.Context(), token, nil)
	require.ErrorIs(t, err, callbacks.ErrPanicked)
	return err
}

// A panic's value reaches the user in the error; its stack reaches only
// whoever asks for it: a debug-level logger, or the engine's log at debug
// severity, which `pulumi up` shows only with --debug. The default logger
// (warning level, on the standard error the CLI shows the user) prints
// nothing.
func TestPanicStackIsForWhoeverAsks(t *testing.T) {
	err := panicking(t)
	assert.Contains(t, err.Error(), "out of cheese")
	assert.Contains(t, err.Error(), "(its stack goes to a debug-level logger: callbacks.WithLogger)", "the error must say where the stack is")
	noStack(t, err.Error())

	var warn bytes.Buffer
	panicking(t, callbacks.WithLogger(slog.New(slog.NewTextHandler(&warn, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	assert.Empty(t, warn.String(), "a logger at warning level got the panic")

	var debug bytes.Buffer
	panicking(t, callbacks.WithLogger(slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	assert.Contains(t, debug.String(), "out of cheese")
	assert.Contains(t, debug.String(), "goroutine ", "a debug logger did not get the stack")

	fake, addr := startEngineLog(t)
	eng := serve(t, callbacks.EngineAddress(addr), callbacks.WithLogger(slog.New(slog.DiscardHandler)))
	srv := eng.srv
	cb, err := srv.Register(t.Context(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
		panic("out of cheese")
	}), callbacks.Name("cheese"))
	require.NoError(t, err)
	_, err = eng.invoke(t.Context(), cb.Token, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "(its stack is in the engine's debug log: pulumi up --debug)", "the error must say where the stack is")
	logs := fake.recorded()
	require.Len(t, logs, 1, "the engine's log got no report of the panic")
	assert.Equal(t, pulumirpc.LogSeverity_DEBUG, logs[0].GetSeverity())
	assert.True(t, strings.HasPrefix(logs[0].GetMessage(), `raw callback "cheese" panicked: out of cheese`), logs[0].GetMessage())
	assert.Contains(t, logs[0].GetMessage(), "goroutine ", "the report has no stack")

	// A Reporter of the program's own gets what callbacks report, not this.
	rep := &reports{}
	panicking(t, callbacks.WithReporter(rep), callbacks.WithLogger(slog.New(slog.DiscardHandler)))
	assert.Empty(t, rep.msgs)
}
