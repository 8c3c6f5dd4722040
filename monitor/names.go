package monitor

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// ErrNameTaken is wrapped by the error [Monitor.ReserveName] returns for a
// name that is already registered.
var ErrNameTaken = errors.New("monitor: hook name already registered")

type reservation struct {
	value any
	site  string // where the first registration was made, for the error
}

// ReserveName claims name in the deployment's hook name space, which resource
// hooks and error hooks share (as in the engine), and remembers v under it.
// An empty or taken name is an error; a taken name's error says where the
// first registration was made, which the engine's later rejection would not.
func (m *Monitor) ReserveName(name string, v any) error {
	if name == "" {
		return errors.New("monitor: a hook name cannot be empty")
	}
	site := callerOutsideModule()
	m.namesMu.Lock()
	defer m.namesMu.Unlock()
	if first, taken := m.names[name]; taken {
		return fmt.Errorf("%w: %q was first registered at %s", ErrNameTaken, name, first.site)
	}
	m.names[name] = reservation{value: v, site: site}
	return nil
}

// ReleaseName frees name, for a registration that failed after reserving it.
func (m *Monitor) ReleaseName(name string) {
	m.namesMu.Lock()
	defer m.namesMu.Unlock()
	delete(m.names, name)
}

// Named returns the value reserved under name.
func (m *Monitor) Named(name string) (any, bool) {
	m.namesMu.Lock()
	defer m.namesMu.Unlock()
	r, ok := m.names[name]
	return r.value, ok
}

// callerOutsideModule names the first stack frame outside this module's
// non-test code: the user's line that registered the hook.
func callerOutsideModule() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	first := ""
	for {
		f, more := frames.Next()
		site := fmt.Sprintf("%s:%d", f.File, f.Line)
		if first == "" {
			first = site
		}
		if !isLibraryFrame(f) {
			return site
		}
		if !more {
			return first
		}
	}
}

// libraryPackages are the packages whose frames are skipped when naming the
// registration site.
var libraryPackages = []string{"callbacks", "monitor", "hooks", "transforms", "invoketransforms", "migrations"}

func isLibraryFrame(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	for _, p := range libraryPackages {
		prefix := "github.com/langhost/callbacks/" + p + "."
		if p == "callbacks" {
			prefix = "github.com/langhost/callbacks."
		}
		if strings.HasPrefix(f.Function, prefix) {
			return true
		}
	}
	return false
}
