package hooks

import (
	"errors"
	"fmt"
	"sync"

	"github.com/langhost/callbacks/internal/callsite"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// ErrNameTaken is wrapped by the error [Register] and [RegisterErrorHook]
// return for a hook name already registered in the deployment.
var ErrNameTaken = errors.New("hook name already registered")

// Lookup returns the hook registered under name in mon's deployment through
// this package, in this process: a [*Hook] or an [*ErrorHook] (resource
// hooks and error hooks share one name space), or false if there is none.
// A hook whose registration is under way counts, as it does for [Register];
// one whose registration failed does not. Hooks registered by other means
// (another process, the Go SDK's own Context.RegisterResourceHook) are not known
// here, although the engine knows them. It does not call the engine and is
// safe for concurrent use.
func Lookup(mon *monitor.Monitor, name string) (transforms.HookRef, bool) {
	if mon == nil {
		return nil, false
	}
	h, ok := namesOf(mon).get(name)
	if !ok {
		return nil, false
	}
	return h.(transforms.HookRef), true
}

// names is a deployment's hook name space, which resource hooks and error
// hooks share, as in the engine. Each name holds the *Hook or *ErrorHook
// registered under it. It is safe for concurrent use.
type names struct {
	mu sync.Mutex
	m  map[string]*reservation
}

type reservation struct {
	hook any           // *Hook or *ErrorHook
	site string        // where the first registration was made, for the error
	done chan struct{} // closed once the engine has answered the registration
	err  error         // the registration's error, set before done is closed
}

// namesKey is the key of the name space among a deployment's values.
type namesKey struct{}

// namesOf returns the name space of mon's deployment: every Monitor of one
// deployment shares it, and it ends with the deployment (see
// monitor.Monitor.Value).
func namesOf(mon *monitor.Monitor) *names {
	return mon.Value(namesKey{}, func() any { return &names{m: make(map[string]*reservation)} }).(*names)
}

// reserve claims name for h unless it is taken, and returns the
// reservation of name: h's own, or the earlier one and an error, wrapping
// ErrNameTaken, that says where the earlier hook was registered.
func (n *names) reserve(name string, h any) (*reservation, error) {
	site := callsite.Site()
	n.mu.Lock()
	defer n.mu.Unlock()
	if first, taken := n.m[name]; taken {
		return first, fmt.Errorf("%w: %q was first registered at %s", ErrNameTaken, name, first.site)
	}
	n.m[name] = &reservation{hook: h, site: site, done: make(chan struct{})}
	return n.m[name], nil
}

// registered records err, the engine's answer to name's registration, and frees a refused name.
func (n *names) registered(name string, err error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.m[name]
	if err != nil {
		r.err = fmt.Errorf("the engine refused it: %w", err)
		delete(n.m, name)
	}
	close(r.done)
	return r.err
}

// get returns the hook registered under name.
func (n *names) get(name string) (any, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.m[name]
	if !ok {
		return nil, false
	}
	return r.hook, true
}
