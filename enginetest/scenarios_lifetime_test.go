package enginetest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/langhost/callbacks/enginetest"
)

func TestScenario35_SignalTwice(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	cbs1 := newCallbackServer(t)
	p1.resourceHook("slow", cbs1.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return nil, nil
	}), false, false)
	p1.custom("r", nil, withHooks(&binding{BeforeDelete: []string{"slow"}, AfterDelete: []string{"slow"}}))
	res1 := p1.finish()

	e := startEngine(t, enginetest.WithState(res1.State))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	started := make(chan struct{})
	release := make(chan struct{})
	var hookCallsDone atomic.Int32
	p.resourceHook("slow", cbs.hook(func(ctx context.Context, req *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		if hookCallsDone.Load() == 0 {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		hookCallsDone.Add(1)
		return nil, nil
	}), false, false)

	first := make(chan error, 1)
	var returnedEarly atomic.Bool
	go func() {
		err := p.signal()
		if hookCallsDone.Load() < 2 {
			returnedEarly.Store(true)
		}
		first <- err
	}()
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("SignalAndWaitForShutdown returned (%v) without running the delete hook", err)
	}
	err := p.signal()
	if errMessage(err) != "Already waiting for shutdown" {
		t.Fatalf("second call: got %v", err)
	}
	select {
	case err := <-first:
		t.Fatalf("first call returned (%v) while a delete hook was running", err)
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first call: %v", err)
	}
	if returnedEarly.Load() {
		t.Fatal("SignalAndWaitForShutdown returned before the delete hooks finished")
	}
	res := wait(t, e)
	if res.Err != nil || res.State.Get(e.URN("", thingType, "r")) != nil {
		t.Fatalf("err=%v state=%v", res.Err, res.State.URNs())
	}
}

func TestRegistrationAfterShutdownRefused(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	p.finish()
	_, err := p.register(res{typ: thingType, name: "late", custom: true})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("got %v, want FailedPrecondition", err)
	}
}

func TestCloseReleasesWaitingProgram(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	p1.custom("r", nil, withHooks(&binding{BeforeDelete: []string{"blocker"}}))
	cbs1 := newCallbackServer(t)
	p1.resourceHook("blocker", cbs1.hook(nil), false, false)
	res1 := p1.finish()

	e, err := enginetest.Start(enginetest.WithState(res1.State))
	if err != nil {
		t.Fatal(err)
	}
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	started := make(chan struct{})
	p.resourceHook("blocker", cbs.hook(func(ctx context.Context, _ *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}), false, false)
	done := make(chan error, 1)
	go func() { done <- p.signal() }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("SignalAndWaitForShutdown returned (%v) without running the delete hook", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; err == nil {
		t.Fatal("SignalAndWaitForShutdown succeeded on a closed engine")
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Wait does not block on a closed engine; the interrupted delete failed.
	if res, err := e.Wait(t.Context()); err == nil && (res.Err == nil || !strings.Contains(res.Err.Error(), "canceled")) {
		t.Fatalf("Wait after Close: result error %v", res.Err)
	}
}
