package program

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/pulumi/pulumi/sdk/v3/go/common/promise"
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
// a hook's registration state in a way this module does not know (it knows
// that of github.com/pulumi/pulumi/sdk/v3 v3.263.0; TestHooksMarkTheSDKsHooksRegistered
// pins it).
func Hooks(b *transforms.HooksBinding) pulumi.ResourceOption {
	if b == nil {
		return pulumi.ResourceHooks(nil)
	}
	return pulumi.ResourceHooks(&pulumi.ResourceHookBinding{
		BeforeCreate: resourceHooks(b.BeforeCreate),
		AfterCreate:  resourceHooks(b.AfterCreate),
		BeforeUpdate: resourceHooks(b.BeforeUpdate),
		AfterUpdate:  resourceHooks(b.AfterUpdate),
		BeforeDelete: resourceHooks(b.BeforeDelete),
		AfterDelete:  resourceHooks(b.AfterDelete),
		OnError:      errorHooks(b.OnError),
	})
}

func resourceHooks(refs []transforms.HookRef) []*pulumi.ResourceHook {
	var out []*pulumi.ResourceHook
	for _, r := range refs {
		if r == nil {
			continue
		}
		h := &pulumi.ResourceHook{Name: registration.RefName(r.Name())}
		markRegistered(reflect.ValueOf(h).Elem())
		out = append(out, h)
	}
	return out
}

func errorHooks(refs []transforms.HookRef) []*pulumi.ErrorHook {
	var out []*pulumi.ErrorHook
	for _, r := range refs {
		if r == nil {
			continue
		}
		h := &pulumi.ErrorHook{Name: registration.RefName(r.Name())}
		markRegistered(reflect.ValueOf(h).Elem())
		out = append(out, h)
	}
	return out
}

// registered is the SDK's record of a hook registration that has completed.
var registered = func() *promise.Promise[struct{}] {
	var c promise.CompletionSource[struct{}]
	c.Fulfill(struct{}{})
	return c.Promise()
}()

// markRegistered sets the unexported field in which the SDK's
// pulumi.ResourceHook and pulumi.ErrorHook record their registration.
func markRegistered(hook reflect.Value) {
	f := hook.FieldByName("registered")
	if !f.IsValid() || f.Type() != reflect.TypeOf(registered) {
		panic(fmt.Sprintf("program.Hooks: this version of the Go SDK records a %s's registration in a way "+
			"github.com/langhost/callbacks does not know; it supports github.com/pulumi/pulumi/sdk/v3 v3.263.0",
			hook.Type()))
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(registered))
}
