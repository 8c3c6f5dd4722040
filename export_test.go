package callbacks

import (
	"github.com/langhost/callbacks/internal/calllog"
	"log/slog"
	"time"
)

// SetReportTimeout shortens the bound on s's reports to the engine, so that
// a test of the bound does not wait reportTimeout.
func SetReportTimeout(s *Server, d time.Duration) {
	if s.reporter != nil {
		s.reporter.timeout = d
	}
}

// DefaultLogger is the logger a registry has when none is given.
func DefaultLogger() *slog.Logger { c := defaultConfig(); c.finish(); return c.logger }

// KindOf is f's kind; zero for the zero Func.
func KindOf(f Func) Kind { return f.kind }

// SetPulumiLogLimits bounds the exporters of servers made from now on by l,
// until the returned function puts the default back.
func SetPulumiLogLimits(l calllog.Limits) (restore func()) {
	old := pulumiLogLimits
	pulumiLogLimits = l
	return func() { pulumiLogLimits = old }
}

// PulumiLogStats counts the records s has sent to Pulumi's log, and is
// false when s records nothing.
func PulumiLogStats(s *Server) (calllog.Stats, bool) {
	if s.calls == nil {
		return calllog.Stats{}, false
	}
	return s.calls.Stats(), true
}
