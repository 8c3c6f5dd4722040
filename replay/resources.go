package replay

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// logRun is one run of the program in a log: what the engine told it, the
// log line of its LanguageRuntime/Run (0 if the log has none), the
// resources it registered or read, and, for Run, the callback calls the
// log made in it.
type logRun struct {
	info      runInfo
	line      int
	resources []resEntry
	calls     []*Call
}

// name names the run in messages: the preview or the update, and the log
// line of its LanguageRuntime/Run.
func (r *logRun) name() string {
	if r.line == 0 {
		return "the run"
	}
	what := "update"
	if r.info.DryRun {
		what = "preview"
	}
	return fmt.Sprintf("the %s (LanguageRuntime/Run, log line %d)", what, r.line)
}

// resEntry is a resource's registration as the log records it: an entry
// of the monitor's RegisterResource or ReadResource.
type resEntry struct {
	urn    resource.URN // the response's, or the one the engine computes
	parent resource.URN
	remote bool // a component a provider constructs
}

// recordedResources returns the resources the run registered or read in
// the recording, in the order the log first names them, leaving out those
// that a remote component's provider registered under it (the replay
// constructs no component).
func (r *logRun) recordedResources() []resource.URN {
	var order []resource.URN
	parentOf := map[resource.URN]resource.URN{}
	remote := map[resource.URN]bool{}
	for _, e := range r.resources {
		if e.urn == "" {
			continue
		}
		if _, seen := parentOf[e.urn]; !seen {
			order = append(order, e.urn)
		}
		parentOf[e.urn] = e.parent
		remote[e.urn] = remote[e.urn] || e.remote
	}
	out := order[:0]
	for _, u := range order {
		if !underRemote(u, parentOf, remote) {
			out = append(out, u)
		}
	}
	return out
}

// underRemote reports whether a remote component is among u's ancestors.
func underRemote(u resource.URN, parentOf map[resource.URN]resource.URN, remote map[resource.URN]bool) bool {
	p := parentOf[u]
	for range len(parentOf) { // a loop in a corrupt log ends
		if p == "" {
			return false
		}
		if remote[p] {
			return true
		}
		p = parentOf[p]
	}
	return false
}

// resourceChanges compares the resources a run recorded with those the
// program registers now: those registered now that the recording lacks,
// and those recorded that the program no longer registers, each in order
// and once.
func resourceChanges(recorded, now []resource.URN) (added, gone []resource.URN) {
	was := make(map[resource.URN]bool, len(recorded))
	for _, u := range recorded {
		was[u] = true
	}
	is := make(map[resource.URN]bool, len(now))
	for _, u := range now {
		if !was[u] && !is[u] {
			added = append(added, u)
		}
		is[u] = true
	}
	for _, u := range recorded {
		if !is[u] {
			gone = append(gone, u)
		}
	}
	return added, gone
}

// maxListed bounds the URNs a report of resource changes lists each way.
const maxListed = 20

// resourceReport says how the resources differ, or "" if they do not.
func resourceReport(added, gone []resource.URN) string {
	if len(added) == 0 && len(gone) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the program registers %d resource(s) the recording lacks and no longer registers %d it recorded "+
		"(a rename without an alias, a resource added or removed)", len(added), len(gone))
	list := func(what string, urns []resource.URN) {
		for i, u := range urns {
			if i == maxListed {
				fmt.Fprintf(&b, "\n\t%s and %d more", what, len(urns)-maxListed)
				break
			}
			fmt.Fprintf(&b, "\n\t%s %s", what, u)
		}
	}
	list("new: ", added)
	list("gone:", gone)
	return b.String()
}

// runInfo is what the engine told the program in the recording: the
// LanguageRuntime/Run request, and the features its monitor had.
type runInfo struct {
	Project, Stack, Organization, RootDirectory string
	Config                                      map[string]string
	ConfigSecretKeys                            []string
	DryRun                                      bool
	Parallel                                    int32
	Features                                    []pulumirpc.ResourceMonitorFeature // nil: every feature
}
