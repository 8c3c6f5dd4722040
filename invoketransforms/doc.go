// Package invoketransforms is a typed, lossless Go API for Pulumi invoke
// transforms: stack-wide functions the engine calls before every provider
// function invocation (ResourceMonitor.Invoke), to change its arguments and
// options.
//
// An invoke transform is a [Func]. It receives [Args] (the function token,
// its arguments and every invoke option) and returns a [Result], or nil for
// "no change". Register it with [RegisterStack]. A test calls a Func
// directly, with Args it builds (see [Args.SetProperties]).
//
// When a transform returns options, the engine replaces all of the invoke's
// options with them, so Args.Options is a complete copy: change what you mean
// to change and return it, as [Args.WithOptions] does. Fields added by newer
// engines are sent back untouched.
//
// Arguments are resource.PropertyMap values converted without loss. Unlike
// resource transforms, invoke transforms see secrets as secret values
// (resource.Secret) and unknowns as computed values (resource.Computed),
// because that is how the engine sends them here.
//
// The engine runs invoke transforms while holding a lock that serialises all
// invokes: a transform must not itself call Invoke, or the deployment
// deadlocks.
package invoketransforms
