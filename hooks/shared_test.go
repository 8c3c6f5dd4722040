package hooks_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
)

// heldEngine is an engine's monitor, in process, whose RegisterResourceHook
// answers refuse only once the test closes release. It is a client rather
// than a monitortest.Fake served over gRPC so that synctest can tell when
// every registration is blocked: a goroutine waiting on the network is never
// durably blocked.
type heldEngine struct {
	pulumirpc.ResourceMonitorClient // nil: no other method is called
	release                         chan struct{}
	refuse                          error
	calls                           atomic.Int32
}

func (e *heldEngine) GetDeploymentInfo(ctx context.Context, _ *emptypb.Empty, _ ...grpc.CallOption) (*pulumirpc.DeploymentInfo, error) {
	return monitortest.CurrentEngine(allFeatures...)(ctx)
}

func (e *heldEngine) RegisterResourceHook(context.Context, *pulumirpc.RegisterResourceHookRequest, ...grpc.CallOption) (*emptypb.Empty, error) {
	e.calls.Add(1)
	<-e.release
	return &emptypb.Empty{}, e.refuse
}

type registered struct {
	hook *hooks.Hook
	err  error
}

// A second instance's Shared registration of a name gets the hook only once
// the engine has answered the first instance's registration of it: the
// engine fails the step of a resource bound to a hook it does not know yet.
// If the engine refused the hook, the second registration fails the same
// way, and the name is free again.
func TestSharedWaitsForTheEnginesAnswer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		refuse error
	}{
		{"accepted", nil},
		{"refused", status.Error(codes.AlreadyExists, "hook audit already registered")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := wiretest.Listen(t) // outside the bubble: it waits on the network
			synctest.Test(t, func(t *testing.T) {
				eng := &heldEngine{release: make(chan struct{}), refuse: tt.refuse}
				mon, err := monitor.New(eng, srv)
				require.NoError(t, err)
				register := func(ctx context.Context, out chan<- registered) {
					h, err := hooks.Register(ctx, mon, "audit", noop, hooks.Shared())
					out <- registered{h, err}
				}

				first, second := make(chan registered, 1), make(chan registered, 1)
				go register(t.Context(), first)
				synctest.Wait() // the first is in its RegisterResourceHook call
				require.Equal(t, int32(1), eng.calls.Load())
				go register(t.Context(), second)
				synctest.Wait() // the second has returned, or waits
				select {
				case got := <-second:
					t.Errorf("the second Shared registration returned (%v, %v) before the engine answered the first's", got.hook, got.err)
					second <- got
				default:
				}
				close(eng.release)

				r1, r2 := <-first, <-second
				assert.Equal(t, int32(1), eng.calls.Load(), "the engine is asked once")
				if tt.refuse == nil {
					require.NoError(t, r1.err)
					require.NoError(t, r2.err)
					assert.Same(t, r1.hook, r2.hook)
					return
				}
				require.Error(t, r1.err)
				assert.Equal(t, codes.AlreadyExists, status.Code(r1.err))
				assert.EqualError(t, r2.err, r1.err.Error(), "the second fails as the first did")
				assert.Equal(t, codes.AlreadyExists, status.Code(r2.err))
				_, taken := hooks.Lookup(mon, "audit")
				assert.False(t, taken, "a refused name is free again")
			})
		})
	}
}

// A registration waiting for the engine's answer to another one gives up
// when its context ends, with the context's code; the first is unaffected.
func TestSharedWaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	srv := wiretest.Listen(t)
	synctest.Test(t, func(t *testing.T) {
		eng := &heldEngine{release: make(chan struct{})}
		mon, err := monitor.New(eng, srv)
		require.NoError(t, err)
		first := make(chan error, 1)
		go func() {
			_, err := hooks.Register(t.Context(), mon, "audit", noop, hooks.Shared())
			first <- err
		}()
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		second := make(chan error, 1)
		go func() {
			_, err := hooks.Register(ctx, mon, "audit", noop, hooks.Shared())
			second <- err
		}()
		synctest.Wait()
		cancel()
		err = <-second
		assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)

		close(eng.release)
		require.NoError(t, <-first)
		assert.Equal(t, int32(1), eng.calls.Load())
	})
}
