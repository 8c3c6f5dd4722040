package callbacks

// SetDryRun lets the external tests mark a registry's deployment as a
// preview, which the typed packages do through internal/access.
func SetDryRun(r *Registry, dry bool) { r.dryRun.Store(dry) }
