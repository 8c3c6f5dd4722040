// Package callsite names the line of a user's code that called into this
// module, for messages and spans that say where a registration was made.
package callsite

import (
	"fmt"
	"runtime"
	"strings"
)

// Site names the line outside this module's non-test code that called
// into it, as "file:line": the user's line that registered a callback or
// attached a binding.
func Site() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
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
	for _, p := range []string{"/monitor.", "/hooks.", "/transforms.", "/invoketransforms.", "/migrations.", "/program.", "/internal/"} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}
