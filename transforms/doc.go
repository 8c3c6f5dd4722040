// Package transforms is a typed, lossless Go API for Pulumi resource
// transforms: functions the engine calls before it registers a resource, to
// change the resource's input properties and options.
//
// A transform is a [Func]. It receives [Args] (type, name, parent, computed
// URN, properties and every option) and returns a [Result], or nil for "no
// change". Register it for one resource and its children with [Callback], or
// for every later resource of the stack with [RegisterStack]. A test calls
// a Func directly, with Args it builds (see [Args.SetProperties]).
//
// # Attaching to a scope
//
// [Attach] applies a Func to the resources of a [Scope]: the descendants of
// a component ([Descendants], [DescendantsOf], program.Descendants), or the
// resources a [Selector] picks ([Matching]). It is how a component library
// changes resources it does not create, such as the children a program
// gives its component; hooks.Attach binds hooks the same way. Every binding
// of a deployment shares one stack transform, so the engine calls into the
// program once per resource, however many bindings and instances there
// are. Attach applies a name, a timeout and failing open to the one binding,
// run as callbacks.Runner runs it; AcceptsByteStrings(false) concerns the
// shared transform, and Attach refuses it.
//
// [HooksBinding] is the one hook binding type of the module: the Hooks
// field of [ResourceOptions], and what hooks.Attach and program.Hooks bind.
// [ResourceOptions] are the one type of a resource's options: what a
// transform changes and what a hook is told.
//
// # Options are replaced, not merged
//
// When a transform returns options, the engine throws away all of the
// resource's options and uses the returned ones. Args.Options is therefore a
// complete copy of them: change the fields you mean to change and return it,
// as [Args.WithOptions] does. Every field of the wire message is represented,
// including those other SDKs drop (hide_diff, replace_with,
// replacement_trigger, plugin_checksums, hooks, import), unset booleans stay
// distinct from false, and fields added by newer engines are sent back
// untouched, so returning Args.Options unchanged gives the engine back exactly
// what it sent.
//
// # Values
//
// [Args.Properties] decodes the resource's inputs the first time it is
// called. A transform that never calls it (one that only sets options, or
// returns nil) pays for a check of the bytes but not for a decode, and
// [Args.Result] then sends the properties back exactly as the engine encoded
// them. The check refuses everything a decode would refuse, so a request
// whose properties do not decode fails with InvalidArgument either way.
//
// Properties are resource.PropertyMap values converted without loss: secrets
// and unknowns (which the engine sends to transforms as output values),
// output values with their dependencies, resource references, assets,
// archives and byte strings all survive the round trip. Strings that are not
// valid UTF-8 can be returned only if the callback accepts byte strings,
// which it does unless registered with callbacks.AcceptsByteStrings(false).
package transforms
