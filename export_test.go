package callbacks

import "time"

// SetDryRun lets the external tests mark a registry's deployment as a
// preview, which the typed packages do through internal/access.
func SetDryRun(r *Registry, dry bool) { r.dryRun.Store(dry) }

// SetReportTimeout shortens the bound on s's reports to the engine, so that
// a test of the bound does not wait ReportTimeout.
func SetReportTimeout(s *Server, d time.Duration) {
	if s.reporter != nil {
		s.reporter.timeout = d
	}
}
