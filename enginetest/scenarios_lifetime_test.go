package enginetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

	e := startEngine(t, WithState(res1.State))
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

	e, err := Start(WithState(res1.State))
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

// A program that signalled its end and then fails: the engine reads its
// exit only in the cleanup after a deployment that succeeded, once it has
// released the program, and reports the failure then, with no "update
// failed". The deployment ran to its end (the delete ran), and the result
// is a failure. RunFunc's engine waits for the program's exit to say so.
func TestProgramFailureAfterItsSignal(t *testing.T) {
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	p1.custom("gone", nil)
	prior := p1.finish().State

	tests := []struct {
		name     string
		err      error
		wantDiag string
	}{
		{"error", errors.New("boom after the signal"), "boom after the signal"},
		// The language host's bail for a program that exited with status
		// 32 reaches the engine's cleanup, which prints it as it is.
		{"reported", fmt.Errorf("exit status 32: %w", ErrProgramReported), "BAIL: run bailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEngine(t, WithState(prior))
			p := newProgram(t, e)
			res, err := e.RunFunc(t.Context(), func() error {
				p.custom("kept", nil)
				if err := p.signal(); err != nil {
					return fmt.Errorf("signal: %w", err)
				}
				return tt.err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Failed || !errors.Is(res.ProgramErr, tt.err) || !errors.Is(res.Err, tt.err) {
				t.Fatalf("Failed=%t ProgramErr=%v Err=%v, want a failure with the program's error", res.Failed, res.ProgramErr, res.Err)
			}
			var errs []string
			for _, d := range res.Diagnostics {
				if d.Severity == severityError {
					errs = append(errs, d.URN+"|"+d.Message)
				}
			}
			wantEqualStrings(t, "error diagnostics", errs, []string{"|" + tt.wantDiag})
			if res.State.Get(e.URN("", thingType, "gone")) != nil || res.State.Get(e.URN("", thingType, "kept")) == nil {
				t.Fatalf("state %v, want the deployment run to its end", res.State.URNs())
			}
			// Wait gives the same result: the engine took the failure in.
			if again := wait(t, e); !again.Failed || !errors.Is(again.ProgramErr, tt.err) {
				t.Fatalf("Wait: Failed=%t ProgramErr=%v", again.Failed, again.ProgramErr)
			}
		})
	}
}

// A program that fails after a step failure stopped the deployment: the
// engine no longer reads the program's outcome, so its failure is not
// reported and the deployment ends as a failed deployment, with "update
// failed". RunFunc's result still carries the program's error.
func TestProgramFailureAfterAStepFailureIsNotRead(t *testing.T) {
	releaseSlow := make(chan struct{})
	slowStarted := make(chan struct{})
	e := startEngine(t, WithProvider(&FakeProvider{
		OnCreate: func(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
			switch req.Name {
			case "slow":
				close(slowStarted)
				<-releaseSlow
			case "bad":
				return nil, errors.New("quota exceeded")
			}
			return (&FakeProvider{}).create(ctx, req)
		},
	}))
	p := newProgram(t, e)
	boom := errors.New("the program's own failure")
	res, err := e.RunFunc(t.Context(), func() error {
		slow := p.background(func(ctx context.Context) error {
			_, err := p.mon.RegisterResource(ctx, p.request(res{typ: thingType, name: "slow", custom: true}))
			return err
		})
		<-slowStarted
		bad := p.background(func(ctx context.Context) error {
			_, err := p.mon.RegisterResource(ctx, p.request(res{typ: thingType, name: "bad", custom: true}))
			return err
		})
		// A registration that is not run shows that the failure has
		// stopped the deployment.
		until(t, func() bool { return hasDiag(e, "quota exceeded") })
		later := p.registerAfterEnd(res{typ: thingType, name: "later", custom: true})
		until(t, func() bool { return hasStepNotRun(e, e.URN("", thingType, "later")) })
		// The program fails while the slow step still runs.
		e.ProgramFailed(boom)
		close(releaseSlow)
		if err := <-slow.done; err != nil {
			return err
		}
		bad.cancel()
		later.cancel()
		return boom
	})
	if err != nil {
		t.Fatal(err)
	}
	wantFailed(t, res, e.URN("", thingType, "bad"), "quota exceeded")
	if !errors.Is(res.ProgramErr, boom) || !errors.Is(res.Err, boom) {
		t.Fatalf("ProgramErr=%v Err=%v, want RunFunc to report the program's error", res.ProgramErr, res.Err)
	}
	for _, d := range res.Diagnostics {
		if strings.Contains(d.Message, boom.Error()) {
			t.Fatalf("the engine reported the program's failure after its own: %v", d)
		}
	}
	if again := wait(t, e); again.ProgramErr != nil {
		t.Fatalf("the engine took in the program's failure: %v", again.ProgramErr)
	}
}
