package enginetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A failed step's registration and every later one are left unanswered;
// the deployment waits only for the steps already running, then reports
// "update failed". It never answers the unanswered ones: they end only when
// the program goes away.
func TestFailedStepRegistrationAndLaterOnesUnanswered(t *testing.T) {
	t.Parallel()
	slowStarted := make(chan struct{})
	releaseSlow := make(chan struct{})
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

	register := func(name string) *call {
		req := p.request(res{typ: thingType, name: name, custom: true})
		return p.background(func(ctx context.Context) error {
			resp, err := p.mon.RegisterResource(ctx, req)
			if err == nil && resp.GetId() != name+"-id" {
				return fmt.Errorf("answered %v", resp)
			}
			return err
		})
	}
	slow := register("slow")
	<-slowStarted
	bad := register("bad")
	// The failure is recorded before the deployment can end; wait for it.
	until(t, func() bool { return hasDiag(e, "quota exceeded") })
	later := register("later")
	until(t, func() bool { return hasStepNotRun(e, e.URN("", thingType, "later")) })
	if deploymentOver(e) {
		t.Fatal("the deployment ended while a step was still running")
	}
	close(releaseSlow)

	if err := <-slow.done; err != nil {
		t.Fatalf("slow: %v, want its step's answer", err)
	}
	res := wait(t, e)
	wantFailed(t, res, e.URN("", thingType, "bad"), "quota exceeded")
	wantEqualStrings(t, "state", res.State.URNs(), []string{
		e.URN("", "pulumi:providers:test", "default"), e.URN("", thingType, "slow"),
	})
	for _, d := range res.Diagnostics {
		if d.Severity == severityError && d.URN == e.URN("", thingType, "later") {
			t.Fatalf("a step that never ran reported %v", d)
		}
	}
	for name, c := range map[string]*call{"bad": bad, "later": later} {
		c.stop()
		wantEndedByProgram(t, e, kindRegisterResource, byURN(e.URN("", thingType, name)))
	}
}

// until polls cond until it holds. It asserts nothing about time: the test's
// own deadline bounds it.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatal("condition never held")
		case <-time.After(time.Millisecond):
		}
	}
}

func hasDiag(e *Engine, msg string) bool {
	for _, d := range e.Diagnostics() {
		if d.Message == msg {
			return true
		}
	}
	return false
}

func hasStepNotRun(e *Engine, urn string) bool {
	for _, ev := range e.Events(KindStep) {
		if ev.URN == urn && ev.Op == "" {
			return true
		}
	}
	return false
}

// What the program says after its deployment failed never reaches the
// user: the engine stops it. The engine still serves it, as the engine's
// servers run until the CLI exits.
func TestProgramMessagesAfterFailedDeploymentNotShown(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithProvider(&FakeProvider{
		OnCreate: func(context.Context, *CreateRequest) (*CreateResponse, error) {
			return nil, errors.New("no")
		},
	}))
	p := newProgram(t, e)
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true})
	_, err := p.eng.Log(p.ctx(), &pulumirpc.LogRequest{
		Severity: pulumirpc.LogSeverity_ERROR,
		Message:  "an unhandled error occurred: program failed: waiting for RPCs: no",
	})
	if err != nil {
		t.Fatalf("Log after the deployment failed: %v", err)
	}
	for _, d := range append(res.Diagnostics, e.Diagnostics()...) {
		if d.FromProgram {
			t.Fatalf("program message shown: %v", d)
		}
	}
	logs := e.Events(KindLog)
	if len(logs) != 1 || !strings.HasPrefix(logs[0].Detail, "not shown") {
		t.Fatalf("log events %v, want one marked not shown", logs)
	}
	wantFailed(t, res, e.URN("", thingType, "r"), "no")
}

// The program's own failure reaches Result the way a language host reports
// it: its message as an error with no URN (unless the program already
// reported it), and nothing after it: no "update failed", since the
// engine returns before it reports a failed deployment. No delete runs,
// and no later registration is answered.
func TestProgramFailureReachesResult(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	p1.custom("kept", nil)
	prior := p1.finish().State

	tests := []struct {
		name     string
		err      error
		preview  bool
		wantDiag string // "" when no diagnostic for the program's error is expected
	}{
		{
			name:     "exit-code",
			err:      errors.New("an unhandled error occurred: program exited with non-zero exit code: 1"),
			wantDiag: "an unhandled error occurred: program exited with non-zero exit code: 1",
		},
		{
			name:     "preview",
			err:      errors.New("an unhandled error occurred: program exited with non-zero exit code: 2"),
			preview:  true,
			wantDiag: "an unhandled error occurred: program exited with non-zero exit code: 2",
		},
		{
			name: "already-reported",
			err:  fmt.Errorf("exit status 32: %w", ErrProgramReported),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := startEngine(t, WithState(prior), DryRun(tt.preview))
			p := newProgram(t, e)
			p.custom("made", nil)
			later := res{typ: thingType, name: "after", custom: true}
			e.ProgramFailed(tt.err)
			res := wait(t, e)
			if !res.Failed || !errors.Is(res.ProgramErr, tt.err) || !errors.Is(res.Err, tt.err) {
				t.Fatalf("Failed=%t ProgramErr=%v Err=%v, want a failure with the program's error", res.Failed, res.ProgramErr, res.Err)
			}
			var msgs []string
			for _, d := range res.Diagnostics {
				if d.Severity == severityError {
					msgs = append(msgs, d.URN+"|"+d.Message)
				}
			}
			var want []string
			if tt.wantDiag != "" {
				want = []string{"|" + tt.wantDiag}
			}
			wantEqualStrings(t, "error diagnostics", msgs, want)
			if n := len(e.Events(kindProviderDelete)); n != 0 || res.State.Get(e.URN("", thingType, "kept")) == nil {
				t.Fatalf("a failed program's deployment deleted %v (%d provider deletes)", res.State.URNs(), n)
			}
			p.registerAfterEnd(later).stop()
		})
	}
}

func TestProgramFailedAfterTheEndChangesNothing(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	p.custom("r", nil)
	res := p.finish()
	e.ProgramFailed(errors.New("late"))
	again := wait(t, e)
	if res.Failed || again.Failed || again.ProgramErr != nil {
		t.Fatalf("failed=%t/%t program error %v, want a successful deployment", res.Failed, again.Failed, again.ProgramErr)
	}
}

func TestProgramFailedNilIsASuccessfulExit(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	p1.custom("gone", nil)
	prior := p1.finish().State

	e := startEngine(t, WithState(prior))
	e.ProgramFailed(nil)
	res := wait(t, e)
	if res.Failed || res.Err != nil || res.State.Get(e.URN("", thingType, "gone")) != nil {
		t.Fatalf("failed=%t err=%v state=%v, want a successful deployment that deleted gone", res.Failed, res.Err, res.State.URNs())
	}
}

// With --continue-on-error, a program that cannot read a registration's
// result gets the engine's Internal error for a failed or skipped step;
// one that can gets FAIL or SKIP.
func TestContinueOnErrorWithoutResultReporting(t *testing.T) {
	t.Parallel()
	e := startEngine(t, ContinueOnError(true), WithProvider(&FakeProvider{
		OnCreate: func(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
			if req.Name == "bad" {
				return nil, errors.New("no")
			}
			return (&FakeProvider{}).create(ctx, req)
		},
	}))
	p := newProgram(t, e)
	_, badErr := p.register(res{typ: thingType, name: "bad", custom: true})
	_, depErr := p.register(res{typ: thingType, name: "dependent", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
		r.Dependencies = []string{e.URN("", thingType, "bad")}
	}})
	other := p.custom("other", nil)
	for name, err := range map[string]error{"bad": badErr, "dependent": depErr} {
		if status.Code(err) != codes.Internal || errMessage(err) != "resource registration failed" {
			t.Errorf("%s: got %v, want Internal: resource registration failed", name, err)
		}
	}
	res := p.finishFailed()
	wantFailed(t, res, e.URN("", thingType, "bad"), "no")
	if res.State.Get(other.GetUrn()) == nil {
		t.Fatal("the deployment did not go on past the failure")
	}
}

// A remote component whose Construct fails: the engine reports the
// provider's error as the component's problem, with no URN, tells the
// program the monitor shut down, and fails the deployment, without "update
// failed": the abort ends its event loop before that.
func TestConstructFailureAbortsTheDeployment(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithProvider(&FakeProvider{
		OnConstruct: func(context.Context, *ConstructRequest) (*ConstructResponse, error) {
			return nil, status.Error(codes.Unknown, "cannot build")
		},
	}))
	p := newProgram(t, e)
	_, err := p.register(res{typ: compType, name: "c", mod: func(r *pulumirpc.RegisterResourceRequest) { r.Remote = true }})
	if status.Code(err) != codes.Unknown || errMessage(err) != "resource monitor shut down" {
		t.Fatalf("got %v, want Unknown: resource monitor shut down", err)
	}
	res := wait(t, e)
	// The engine's event loop returns on the abort: no "update failed".
	wantEndedEarly(t, res, "", "")
	wantDiag(t, res.Diagnostics, severityError, "", "test:index:Comp resource 'c' has a problem: cannot build")
}

// A remote component whose child fails: the child's failure is the
// deployment's; the component's registration is left unanswered like the
// child's.
func TestConstructChildFailure(t *testing.T) {
	t.Parallel()
	e := startEngine(t, WithProvider(&FakeProvider{
		OnCreate: func(context.Context, *CreateRequest) (*CreateResponse, error) {
			return nil, errors.New("child broke")
		},
		OnConstruct: func(ctx context.Context, req *ConstructRequest) (*ConstructResponse, error) {
			comp, err := req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{Type: req.Type, Name: req.Name})
			if err != nil {
				return nil, err
			}
			_, err = req.Monitor.RegisterResource(ctx, &pulumirpc.RegisterResourceRequest{
				Type: thingType, Name: "child", Custom: true, Parent: comp.GetUrn(),
			})
			return nil, err
		},
	}))
	p := newProgram(t, e)
	res := p.registerUnanswered(res{typ: compType, name: "c", mod: func(r *pulumirpc.RegisterResourceRequest) { r.Remote = true }})
	wantFailed(t, res, e.URN(e.URN("", compType, "c"), thingType, "child"), "child broke")
	for _, d := range res.Diagnostics {
		if strings.Contains(d.Message, "has a problem") {
			t.Fatalf("the component's failure was reported too: %v", d)
		}
	}
}

// The engine's TestResourceHookBeforeUpdateError: the update's
// registration is never answered, and the state keeps the default provider
// first and the resource as it was.
func TestBeforeUpdateErrorKeepsState(t *testing.T) {
	t.Parallel()
	e1 := startEngine(t)
	p1 := newProgram(t, e1)
	r := p1.custom("resA", map[string]any{"foo": "bar"})
	prior := p1.finish().State

	e2 := startEngine(t, WithState(prior))
	cbs := newCallbackServer(t)
	p2 := newProgram(t, e2)
	p2.resourceHook("hook", cbs.hook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		return &pulumirpc.ResourceHookResponse{Error: "this hook returns an error"}, nil
	}), false, false)
	res := p2.registerUnanswered(res{typ: thingType, name: "resA", custom: true, props: map[string]any{"foo": "updated"},
		mod: withHooks(&binding{BeforeUpdate: []string{"hook"}})})
	wantFailed(t, res, r.GetUrn(), `before hook "hook" failed: this hook returns an error`)
	wantEqualStrings(t, "state", res.State.URNs(), []string{e2.URN("", "pulumi:providers:test", "default"), r.GetUrn()})
	if v := field(res.State.Get(r.GetUrn()).Outputs, "foo").GetStringValue(); v != "bar" {
		t.Fatalf("outputs foo=%q, want the resource not updated", v)
	}
}
