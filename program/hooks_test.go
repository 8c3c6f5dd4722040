package program_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/langhost/callbacks/transforms"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
)

// Hooks puts this module's hooks into the SDK's own ResourceHooks option,
// where any hook the SDK did not register makes it fail on a nil pointer.
// The SDK marks a hook registered in an unexported field; this test pins
// that: it fails when an SDK upgrade changes it. The engine gets the names
// in the resource's registration and calls the hooks, with no transform.
func TestHooksMarkTheSDKsHooksRegistered(t *testing.T) {
	var audits atomic.Int32
	eng := enginetest.New(t, enginetest.WithProvider(&enginetest.FakeProvider{
		OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
			if req.Attempt == 1 {
				return nil, errors.New("throttled")
			}
			return &enginetest.CreateResponse{ID: "id", Outputs: req.Inputs}, nil
		},
	}))
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			mon, err := program.Monitor(ctx)
			if err != nil {
				return err
			}
			audit, err := hooks.Register(ctx.Context(), mon, "audit", func(context.Context, *hooks.Args) error {
				audits.Add(1)
				return nil
			})
			if err != nil {
				return err
			}
			retry, err := hooks.RegisterErrorHook(ctx.Context(), mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
				return a.Attempt() < 2, nil
			})
			if err != nil {
				return err
			}
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", nil, &r, program.Hooks(&transforms.HooksBinding{
				BeforeCreate: []transforms.HookRef{audit},
				AfterCreate:  []transforms.HookRef{transforms.HookName("audit")},
				OnError:      []transforms.HookRef{retry},
			}))
		})
	})
	require.NoError(t, res.ProgramErr)
	require.NoError(t, res.Err, eng.Trace())

	thing := eng.URN(eng.StackURN(), "test:index:Thing", "thing")
	var binding *pulumirpc.RegisterResourceRequest_ResourceHooksBinding
	for _, ev := range eng.Events("RegisterResource") {
		if ev.URN == thing {
			binding = ev.Request.(*pulumirpc.RegisterResourceRequest).GetHooks()
		}
	}
	require.NotNil(t, binding, "the registration carried no hooks:\n%s", eng.Trace())
	assert.Equal(t, []string{"audit"}, binding.GetBeforeCreate())
	assert.Equal(t, []string{"audit"}, binding.GetAfterCreate())
	assert.Equal(t, []string{"retry"}, binding.GetOnError())
	assert.Equal(t, int32(2), audits.Load(), "before and after create")
	assert.Len(t, eng.Events(enginetest.KindErrorHook), 1, "the error hook was not called")
	assert.Empty(t, eng.Events(enginetest.KindCallback), "a transform was involved")
}

// A nil *hooks.Hook in a binding, most often from a Register call whose
// error went unchecked, reaches the engine under a name that says so, and
// the engine's "not registered" quotes it.
func TestHooksNameANilHook(t *testing.T) {
	eng := enginetest.New(t)
	res := eng.Run(t, func() error {
		return pulumi.RunErr(func(ctx *pulumi.Context) error {
			var audit *hooks.Hook // as left by a failed hooks.Register
			var r pulumi.CustomResourceState
			return ctx.RegisterResource("test:index:Thing", "thing", nil, &r, program.Hooks(&transforms.HooksBinding{
				BeforeCreate: []transforms.HookRef{audit},
			}))
		})
	})
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), `hook "(nil hook: did the Register call that made it fail?)" was not registered`)
}
