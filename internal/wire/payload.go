package wire

import (
	"context"
	"runtime/debug"
)

type ownedKey struct{}

// LargePayload is the payload size from which Received returns the memory that
// is free to the operating system before the call runs.
const LargePayload = 32 << 20

// Received marks ctx as the context of a call whose payload p belongs to
// the call and is never written again. For a payload of at least LargePayload
// bytes it also collects garbage and returns the free memory to the
// operating system first: gRPC's receive buffers, which held p before it
// was joined into one slice, are garbage by then and as large as p, and
// the response, as large again, would otherwise come on top of them. That
// costs a few milliseconds, against the hundreds a call of that size takes.
func Received(ctx context.Context, p []byte) context.Context {
	if len(p) >= LargePayload {
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
