package callbacks

import "time"

// SetReportTimeout shortens the bound on s's reports to the engine, so that
// a test of the bound does not wait ReportTimeout.
func SetReportTimeout(s *Server, d time.Duration) {
	if s.reporter != nil {
		s.reporter.timeout = d
	}
}
