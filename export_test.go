package callbacks

import (
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
