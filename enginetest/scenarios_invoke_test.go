package enginetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestScenario17_InvokeTransforms(t *testing.T) {
	t.Parallel()
	t.Run("order", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var providerArgs *structpb.Struct
		e := startEngine(t, WithProvider(&FakeProvider{
			OnInvoke: func(_ context.Context, req *InvokeRequest) (*InvokeResponse, error) {
				mu.Lock()
				providerArgs = req.Args
				mu.Unlock()
				return &InvokeResponse{Return: req.Args}, nil
			},
		}))
		cbs := newCallbackServer(t)
		p := newProgram(t, e)
		var seen []string
		add := func(tag string) *pulumirpc.Callback {
			return cbs.invokeTransform(func(_ context.Context, req *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				args := proto.Clone(req.GetArgs()).(*structpb.Struct)
				v := field(args, "v").GetStringValue()
				mu.Lock()
				seen = append(seen, tag+"<"+v)
				mu.Unlock()
				args.Fields["v"] = structpb.NewStringValue(v + tag)
				return &pulumirpc.TransformInvokeResponse{Args: args}, nil
			})
		}
		for _, tag := range []string{"A", "B"} {
			if _, err := p.mon.RegisterStackInvokeTransform(p.ctx(), add(tag)); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := p.mon.Invoke(p.ctx(), &pulumirpc.ResourceInvokeRequest{
			Tok: "test:index:fn", Args: mustStruct(t, map[string]any{"v": "x"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		p.finish()
		mu.Lock()
		defer mu.Unlock()
		wantEqualStrings(t, "invoke transform calls", seen, []string{"A<x", "B<xA"})
		if field(providerArgs, "v").GetStringValue() != "xAB" || field(resp.GetReturn(), "v").GetStringValue() != "xAB" {
			t.Fatalf("provider got %v, caller got %v", providerArgs, resp.GetReturn())
		}
	})
	t.Run("secret-args", func(t *testing.T) {
		t.Parallel()
		e := startEngine(t)
		cbs := newCallbackServer(t)
		p := newProgram(t, e)
		var mu sync.Mutex
		var got *structpb.Struct
		if _, err := p.mon.RegisterStackInvokeTransform(p.ctx(), cbs.invokeTransform(
			func(_ context.Context, req *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				mu.Lock()
				got = req.GetArgs()
				mu.Unlock()
				return nil, nil
			})); err != nil {
			t.Fatal(err)
		}
		_, err := p.mon.Invoke(p.ctx(), &pulumirpc.ResourceInvokeRequest{Tok: "test:index:fn", Args: mustStruct(t, map[string]any{
			"s": outputValue{Value: structpb.NewStringValue("shh"), Known: true, Secret: true}.Encode(),
			"u": outputValue{}.Encode(),
		})})
		if err != nil {
			t.Fatal(err)
		}
		p.finish()
		mu.Lock()
		defer mu.Unlock()
		if !isSecret(field(got, "s")) || field(got, "u").GetStringValue() != unknownSentinel {
			t.Fatalf("invoke transform args %v, want a secret envelope and the unknown sentinel", got)
		}
	})
	t.Run("error-unwrapped", func(t *testing.T) {
		t.Parallel()
		e := startEngine(t)
		cbs := newCallbackServer(t)
		p := newProgram(t, e)
		if _, err := p.mon.RegisterStackInvokeTransform(p.ctx(), cbs.invokeTransform(
			func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				return nil, status.Error(codes.PermissionDenied, "nope")
			})); err != nil {
			t.Fatal(err)
		}
		_, err := p.mon.Invoke(p.ctx(), &pulumirpc.ResourceInvokeRequest{Tok: "test:index:fn"})
		if status.Code(err) != codes.PermissionDenied || errMessage(err) != "nope" {
			t.Fatalf("got %v, want the callback's PermissionDenied \"nope\"", err)
		}
		if n := len(e.Events(kindProviderInvoke)); n != 0 {
			t.Fatalf("provider invoked %d times", n)
		}
		p.finish()
	})
	t.Run("serialised", func(t *testing.T) {
		t.Parallel()
		e := startEngine(t)
		cbs := newCallbackServer(t)
		p := newProgram(t, e)
		var inFlight, maxInFlight, calls atomic.Int32
		if _, err := p.mon.RegisterStackInvokeTransform(p.ctx(), cbs.invokeTransform(
			func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				calls.Add(1)
				enterTracked(&inFlight, &maxInFlight)
				// Widen the window in which an overlap would show.
				time.Sleep(5 * time.Millisecond)
				inFlight.Add(-1)
				return nil, nil
			})); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				_, err := p.mon.Invoke(p.ctx(), &pulumirpc.ResourceInvokeRequest{Tok: "test:index:fn"})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		p.finish()
		if calls.Load() != 8 || maxInFlight.Load() != 1 {
			t.Fatalf("calls=%d max in flight=%d, want 8 and 1", calls.Load(), maxInFlight.Load())
		}
	})
}
