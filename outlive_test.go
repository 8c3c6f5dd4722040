package callbacks_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/langhost/callbacks"
)

// A function that ignores its context and is still running when its server
// stops (the engine gave up on the call, as when a deployment dies) is
// named once, with its kind, name and resource, in the server's logger and
// to a Reporter set with WithReporter. A function that answered is not.
func TestFunctionOutlivingItsServerIsReported(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	rep := &recordingReporter{}
	env := serve(t, callbacks.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		callbacks.WithReporter(rep))
	guard := testCtx(t)

	entered, release := make(chan struct{}), make(chan struct{})
	stuck := mustRegister(t, env.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		close(entered)
		<-release // the context is ignored
		return nil, nil
	}), callbacks.Name("stuck"))
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	prompt := mustRegister(t, env.srv, callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, nil
	}), callbacks.Name("prompt"))

	_, err := env.invoke(guard, prompt.GetToken(), hookRequest(t))
	require.NoError(t, err)

	callCtx, cancel := context.WithCancel(guard)
	errc := make(chan error, 1)
	go func() {
		_, err := env.invoke(callCtx, stuck.GetToken(), hookRequest(t))
		errc <- err
	}()
	select {
	case <-entered:
	case <-guard.Done():
		t.Fatal("gave up waiting: the function to start")
	}
	cancel() // the engine goes away
	select {
	case err = <-errc:
	case <-guard.Done():
		t.Fatal("the call never ended")
	}
	require.Equal(t, codes.Canceled, status.Code(err), "%v", err)

	require.NoError(t, env.srv.Shutdown(guard))
	require.NoError(t, env.srv.Close()) // stopping again reports nothing again
	got := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, got, 1, "%q", got)
	for _, want := range []string{"level=WARN", `resource hook \"stuck\"`, hookURN, "still running after its server stopped",
		"kind=\"resource hook\"", "name=stuck", "urn=" + hookURN} {
		assert.Contains(t, got[0], want)
	}
	assert.NotContains(t, got[0], "prompt")
	rep.mu.Lock()
	defer rep.mu.Unlock()
	require.Len(t, rep.got, 1, "%q", rep.got)
	assert.True(t, strings.HasPrefix(rep.got[0], "warning "+hookURN+` callbacks: resource hook "stuck" for `+hookURN+" is still running"), rep.got[0])
}
