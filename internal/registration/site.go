package registration

import "github.com/langhost/callbacks/internal/callsite"

// Site names the line outside this module's non-test code that called
// into it, as "file:line": the user's line that registered a hook or
// attached a binding, for messages that say where that happened. The file
// is named as a build with -trimpath names it (see callsite.Site).
func Site() string { return callsite.Site() }
