package migrations

import "github.com/langhost/callbacks"

// Adapt is the callbacks.Func Callback registers for fn.
func Adapt(fn Func) callbacks.Func { return newFunc(fn, false) }
