package program

import (
	"reflect"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/transforms"
)

// Hooks binds hooks registered with this module's hooks package to a
// resource the Go SDK registers: it is the SDK's own pulumi.ResourceHooks
// option, carrying the hooks' names. The engine calls the hooks at the
// binding's points of that resource's life, and no transform is involved,
// so binding hooks to every resource a component creates costs the engine
// nothing per other resource.
//
//	ctx.RegisterResource(typ, name, args, &res, program.Hooks(&transforms.HooksBinding{
//		BeforeCreate: []transforms.HookRef{audit},
//		OnError:      []transforms.HookRef{retry},
//	}))
//
// Use it rather than a pulumi.ResourceHook built by hand from a hook's
// name: the SDK's option takes only hooks the SDK registered itself (any
// other *pulumi.ResourceHook makes it fail on a nil pointer). Hooks gives
// it hooks marked as registered, which they are: hooks.Register returns
// once the engine has accepted the hook. For resources some other code
// creates, bind with hooks.Attach instead (see [Descendants]). A [transforms.HookName] hook registered
// elsewhere is passed on as it is, and the engine resolves it when the step
// runs.
//
// Hooks panics, with a message that says so, if the Go SDK linked in keeps
// a hook's registration state in a way this module does not know (see
// sdkstate.go for the versions it knows).
func Hooks(b *transforms.HooksBinding) pulumi.ResourceOption {
	if b == nil {
		return pulumi.ResourceHooks(nil)
	}
	res := func(refs []transforms.HookRef) []*pulumi.ResourceHook {
		return sdkHooks(refs, func(name string) *pulumi.ResourceHook { return &pulumi.ResourceHook{Name: name} })
	}
	return pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
		BeforeCreate: res(b.BeforeCreate), AfterCreate: res(b.AfterCreate),
		BeforeUpdate: res(b.BeforeUpdate), AfterUpdate: res(b.AfterUpdate),
		BeforeDelete: res(b.BeforeDelete), AfterDelete: res(b.AfterDelete),
		OnError: sdkHooks(b.OnError, func(name string) *pulumi.ErrorHook { return &pulumi.ErrorHook{Name: name} }),
	})
}

// sdkHooks makes the SDK's hooks (made by mk) of refs, marked registered.
func sdkHooks[H any](refs []transforms.HookRef, mk func(name string) *H) []*H {
	var out []*H
	for _, r := range refs {
		if r == nil {
			continue
		}
		h := mk(registration.RefName(r.Name()))
		if err := markRegistered(reflect.ValueOf(h).Elem()); err != nil {
			panic("program.Hooks: " + err.Error())
		}
		out = append(out, h)
	}
	return out
}
