package callbacks_test

import (
	"log/slog"
	"testing"

	"github.com/langhost/callbacks"
)

// newTestRegistry returns a registry made with opts, failing tb if the
// options are refused.
func newTestRegistry(tb testing.TB, opts ...callbacks.RegistryOption) *callbacks.Registry {
	tb.Helper()
	reg, err := callbacks.NewRegistry(opts...)
	if err != nil {
		tb.Fatalf("NewRegistry: %v", err)
	}
	return reg
}

// discardLogger is a logger that drops everything, for tests that provoke
// failures on purpose.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
