package hooks

import "github.com/langhost/callbacks/transforms"

// Binding says which hooks run at which points of a resource's life. It is
// the one binding type of this module, defined in the transforms package
// (where it is also the Hooks field of a transform's options); see
// [transforms.HooksBinding]. Bind a Binding to a resource the Go SDK
// registers with program.Hooks, and to resources that other code creates
// with [Attach].
type Binding = transforms.HooksBinding

// Ref names a hook in a [Binding]: a registered [*Hook] or [*ErrorHook], or
// a [Name] for a hook registered elsewhere (another package, or a later
// registration in this run: the engine resolves names only when a step
// runs).
type Ref = transforms.HookRef

// Name refers to a hook by its name alone.
type Name = transforms.HookName
