// Package hooks is a typed Go API for Pulumi resource hooks and error hooks:
// functions the engine calls at set points of a resource's life (before and
// after create, update and delete) and when a provider operation fails.
//
// # Registering and binding
//
// [Register] registers a [Func] under a name and [RegisterErrorHook] an
// [ErrorFunc]. The engine knows hooks only by name, and resource hooks and
// error hooks share one name space per deployment: a name can be registered
// once, and registering it again is an error that says where it was first
// registered. Code that runs once per component instance (a library's
// NewX, a provider's Construct) registers with [Shared]: every instance
// gets the hook the first one registered. To use one hook on many
// resources, bind the returned [*Hook] wherever it is needed.
//
// A [transforms.HooksBinding] lists the hooks for each point, each a
// [transforms.HookRef]: a [*Hook], an [*ErrorHook], or a
// [transforms.HookName] for a hook registered elsewhere. It binds in one of
// two ways:
//
//   - in the registration of the resource itself: program.Hooks for a
//     resource the Go SDK registers. It is the SDK's own
//     pulumi.ResourceHooks option, carrying this module's hooks, and costs
//     no transform. Do not build a pulumi.ResourceHook from a hook's name
//     by hand: the SDK's option fails on a nil pointer for any hook the
//     SDK did not register itself.
//   - [Attach], for resources other code creates: the descendants of a
//     component (program.Descendants), or every resource a selector picks
//     (transforms.Matching). It costs one transform call per resource
//     registered after the deployment's first Attach, however many
//     bindings there are.
//
// # What hooks receive
//
// A hook gets [Args]: the resource's URN, ID, name and type, its old and new
// inputs and outputs as far as the point has them, and its old and new
// options as [transforms.ResourceOptions], the type a transform changes.
// Properties are resource.PropertyMap values decoded without loss: a secret is a resource.Secret, not a JSON envelope;
// unknowns, resource references, output values with their dependencies and
// binary strings all keep their kind. Error hooks get [ErrorArgs], which
// adds the failed operation and every error so far, newest first.
//
// Functions take the call's context first. A returned error is what the user
// sees: the engine receives it as the hook's error message, not as a
// transport failure.
//
// # Previews, errors and retries
//
// In a preview the engine skips resource hooks unless they are registered
// with [OnDryRun]. A failing before-hook stops the step; a failing after-hook
// fails the deployment after the step; with [IgnoreErrors] a failure is only
// a warning. An error hook returns whether the engine should retry the
// failed operation; the engine tries an operation at most 100 times.
//
// # Delete hooks
//
// This is the one account of delete hooks in this module; other docs link
// here.
//
// Delete hooks of a resource that left the program run after the program
// has ended (after pulumi.Run's SignalAndWaitForShutdown, or after an
// Automation API inline program has returned), in that same run, and the
// engine finds them by the name saved in the resource's state, not by the
// hook that was registered when the binding was made. A program must
// therefore register, in every run, each hook that resources in its state
// are bound to, under the same name (the function may change), and keep
// its callback server serving until the engine has ended the deployment,
// as the server that program.Monitor starts does by itself. A
// before-delete hook that is not registered fails the delete; an
// after-delete hook that is not registered fails the deployment after the
// delete. `pulumi destroy` runs delete hooks only with --run-program, and
// refuses to delete resources bound to them without it.
package hooks
