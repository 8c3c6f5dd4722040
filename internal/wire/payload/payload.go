// Package payload says whether a call's payload belongs to the call: the
// server marks it (Received), the typed packages ask (Owned) before they let
// decoded values share its bytes or answer in them. It is apart from package
// wire so that the core, which only marks payloads, does not import the
// codecs.
package payload

import (
	"context"
	"runtime/debug"
)

type ownedKey struct{}

// Large is the payload size from which Received returns the memory that
// is free to the operating system before the call runs.
const Large = 32 << 20

// Received marks ctx as the context of a call whose payload p belongs to
// the call and is never written again. For a payload of at least Large
// bytes it also collects garbage and returns the free memory to the
// operating system first: gRPC's receive buffers, which held p before it
// was joined into one slice, are garbage by then and as large as p, and
// the response, as large again, would otherwise come on top of them. That
// costs a few milliseconds, against the hundreds a call of that size takes.
func Received(ctx context.Context, p []byte) context.Context {
	if len(p) >= Large {
		debug.FreeOSMemory()
	}
	return context.WithValue(ctx, ownedKey{}, true)
}

// Owned reports whether the payload of ctx's call is the call's own and
// never written again (see Received).
func Owned(ctx context.Context) bool {
	v, _ := ctx.Value(ownedKey{}).(bool)
	return v
}
