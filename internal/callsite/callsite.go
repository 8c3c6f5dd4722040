// Package callsite names the line of a user's code that called into this
// module, for messages and spans that say where a registration was made.
package callsite

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// Site names the line outside this module's non-test code that called
// into it, as "file:line": the user's line that registered a hook or
// attached a binding, for messages that say where that happened. The file
// is named as a build with -trimpath names it, by its package's import
// path, whether or not the program was built that way, so that messages
// do not show the build machine's directories.
func Site() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	first := ""
	for {
		f, more := frames.Next()
		site := fmt.Sprintf("%s:%d", fileOf(f), f.Line)
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

// fileOf names f's file by its package's import path and its base name, as
// -trimpath does, or by its base name alone in package main, whose import
// path the binary does not record. A path that is not absolute has been
// trimmed already and is kept.
func fileOf(f runtime.Frame) string {
	if !filepath.IsAbs(f.File) {
		return f.File
	}
	base := filepath.Base(f.File)
	// f.Function is "import/path.Func", "import/path.(*T).Method", or
	// "main.func1"; the package path ends at the first dot after the last
	// slash.
	fn := f.Function
	slash := strings.LastIndex(fn, "/")
	dot := strings.Index(fn[slash+1:], ".")
	if dot < 0 {
		return base
	}
	pkg := strings.TrimSuffix(fn[:slash+1+dot], "_test")
	if pkg == "main" {
		return base
	}
	return pkg + "/" + base
}
