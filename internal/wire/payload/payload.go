// Package payload tells the typed packages how far they may trust the bytes
// of the request they serve: whether the bytes belong to the call alone and
// are never written again, so that decoded strings may share them instead
// of copying them.
//
// A request that came through the gRPC server is such bytes: the codec
// made them for this call and nothing writes to them, except a transform
// that answers in them (wireprops.Layout.Answer), which rewrites two tag
// bytes that no decoded string covers, after the function has returned. A payload handed to
// Registry.Invoke belongs to its caller, who may reuse it once the call
// returns, so it is copied before anything keeps a part of it.
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
