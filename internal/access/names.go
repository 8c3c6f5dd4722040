package access

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// ErrNameTaken is wrapped by the error Reserve returns for a taken name.
var ErrNameTaken = errors.New("hook name already registered")

// Names is a deployment's hook name space, which resource hooks and error
// hooks share, as in the engine. It is safe for concurrent use.
type Names struct {
	mu    sync.Mutex
	names map[string]reservation
}

type reservation struct {
	value any
	site  string // where the first registration was made, for the error
}

// NewNames returns an empty name space.
func NewNames() *Names { return &Names{names: make(map[string]reservation)} }

// Reserve claims name and remembers v under it. An empty or taken name is an
// error; a taken name's error says where the first registration was made.
func (n *Names) Reserve(name string, v any) error {
	if name == "" {
		return errors.New("a hook name cannot be empty")
	}
	site := callerOutsideModule()
	n.mu.Lock()
	defer n.mu.Unlock()
	if first, taken := n.names[name]; taken {
		return fmt.Errorf("%w: %q was first registered at %s", ErrNameTaken, name, first.site)
	}
	n.names[name] = reservation{value: v, site: site}
	return nil
}

// ReserveOrGet claims name for v unless it is taken, and returns the value
// registered under it: v itself, or the earlier value.
func (n *Names) ReserveOrGet(name string, v any) (got any, existed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if first, taken := n.names[name]; taken {
		return first.value, true
	}
	n.names[name] = reservation{value: v, site: callerOutsideModule()}
	return v, false
}

// Replace sets the value of a reserved name.
func (n *Names) Replace(name string, v any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if r, ok := n.names[name]; ok {
		r.value = v
		n.names[name] = r
	}
}

// Release frees name, for a registration that failed after reserving it.
func (n *Names) Release(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.names, name)
}

// Get returns the value reserved under name.
func (n *Names) Get(name string) (any, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.names[name]
	return r.value, ok
}

// CallerSite names the line outside this module's non-test code that
// called into it, as "file:line", for messages about a registration.
func CallerSite() string { return callerOutsideModule() }

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

func isLibraryFrame(f runtime.Frame) bool {
	if strings.HasSuffix(f.File, "_test.go") {
		return false
	}
	const module = "github.com/langhost/callbacks"
	fn := f.Function
	if !strings.HasPrefix(fn, module) {
		return false
	}
	rest := fn[len(module):]
	if strings.HasPrefix(rest, ".") {
		return true
	}
	for _, p := range []string{"/monitor.", "/hooks.", "/transforms.", "/invoketransforms.", "/migrations.", "/internal/"} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}
