package hooks

import "github.com/langhost/callbacks/monitor"

// NameHeldBy returns what holds name in mon's deployment's hook name space:
// the *Hook or *ErrorHook registered under it.
func NameHeldBy(mon *monitor.Monitor, name string) (any, bool) {
	return namesOf(mon).get(name)
}
