package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// errorHookCalls records the requests an error hook received.
type errorHookCalls struct {
	mu   sync.Mutex
	reqs []*pulumirpc.ErrorHookRequest
}

func (h *errorHookCalls) fn(resp *pulumirpc.ErrorHookResponse, err error) func(
	context.Context, *pulumirpc.ErrorHookRequest,
) (*pulumirpc.ErrorHookResponse, error) {
	return func(_ context.Context, req *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
		h.mu.Lock()
		h.reqs = append(h.reqs, req)
		h.mu.Unlock()
		return resp, err
	}
}

func (h *errorHookCalls) all() []*pulumirpc.ErrorHookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*pulumirpc.ErrorHookRequest(nil), h.reqs...)
}

// failingCreate fails the first n attempts with "boom <attempt>".
func failingCreate(n int, creates *atomic.Int32) *FakeProvider {
	return &FakeProvider{
		OnCreate: func(ctx context.Context, req *CreateRequest) (*CreateResponse, error) {
			creates.Add(1)
			if req.Attempt <= n {
				return nil, fmt.Errorf("boom %d", req.Attempt)
			}
			return (&FakeProvider{}).create(ctx, req)
		},
	}
}

func TestScenario32_ErrorHookRetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		failures   int
		wantErrors [][]string
	}{
		{name: "fails-once", failures: 1, wantErrors: [][]string{{"boom 1"}}},
		{name: "fails-twice", failures: 2, wantErrors: [][]string{{"boom 1"}, {"boom 2", "boom 1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var creates atomic.Int32
			e := startEngine(t, WithProvider(failingCreate(tt.failures, &creates)))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var calls errorHookCalls
			p.errorHook("retry", cbs.errorHook(calls.fn(&pulumirpc.ErrorHookResponse{Retry: true}, nil)))
			r := p.custom("r", map[string]any{"v": 1.0}, withHooks(&binding{OnError: []string{"retry"}}))
			res := p.finish()
			if res.Err != nil {
				t.Fatalf("deployment failed: %v", res.Err)
			}
			if int(creates.Load()) != tt.failures+1 {
				t.Fatalf("Create called %d times, want %d", creates.Load(), tt.failures+1)
			}
			got := calls.all()
			if len(got) != tt.failures {
				t.Fatalf("hook called %d times, want %d", len(got), tt.failures)
			}
			for i, req := range got {
				if req.GetFailedOperation() != "create" || req.GetUrn() != r.GetUrn() {
					t.Errorf("call %d: op %q urn %q", i, req.GetFailedOperation(), req.GetUrn())
				}
				wantEqualStrings(t, fmt.Sprintf("call %d errors", i), req.GetErrors(), tt.wantErrors[i])
				if req.GetNewInputs() == nil || req.OldInputs != nil || req.OldOutputs != nil {
					t.Errorf("call %d fields: %v", i, req)
				}
			}
			wantDiag(t, res.Diagnostics, severityWarning, r.GetUrn(), "retrying create due to on-error hook request (1/100)")
			if res.State.Get(r.GetUrn()).ID != "r-id" {
				t.Fatal("resource not created")
			}
		})
	}
}

func TestScenario32_ErrorHookNoRetry(t *testing.T) {
	t.Parallel()
	var creates atomic.Int32
	e := startEngine(t, WithProvider(failingCreate(1, &creates)))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var a, b errorHookCalls
	p.errorHook("a", cbs.errorHook(a.fn(&pulumirpc.ErrorHookResponse{Retry: false}, nil)))
	p.errorHook("b", cbs.errorHook(b.fn(&pulumirpc.ErrorHookResponse{Retry: false}, nil)))
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, mod: withHooks(&binding{OnError: []string{"a", "b"}})})
	wantFailed(t, res, e.URN("", thingType, "r"), "boom 1")
	if creates.Load() != 1 || len(a.all()) != 1 || len(b.all()) != 1 {
		t.Fatalf("creates=%d a=%d b=%d, want 1 each", creates.Load(), len(a.all()), len(b.all()))
	}
}

func TestScenario33_ErrorHookRetryLimit(t *testing.T) {
	t.Parallel()
	var creates atomic.Int32
	e := startEngine(t, WithProvider(failingCreate(1000, &creates)))
	cbs := newCallbackServer(t)
	p := newProgram(t, e)
	var calls errorHookCalls
	p.errorHook("always", cbs.errorHook(calls.fn(&pulumirpc.ErrorHookResponse{Retry: true}, nil)))
	urn := e.URN("", thingType, "r")
	res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, mod: withHooks(&binding{OnError: []string{"always"}})})
	wantFailed(t, res, urn, "maximum number of error hook retries reached")
	if creates.Load() != 100 || len(calls.all()) != 99 {
		t.Fatalf("creates=%d hook calls=%d, want 100 and 99", creates.Load(), len(calls.all()))
	}
	wantDiag(t, res.Diagnostics, severityWarning, urn, "maximum number of error hook retries (100) reached")
	wantDiag(t, res.Diagnostics, severityWarning, urn, "retrying create due to on-error hook request (99/100)")
	if last := calls.all()[98]; len(last.GetErrors()) != 99 || last.GetErrors()[0] != "boom 99" {
		t.Fatalf("last hook call errors %d, first %q", len(last.GetErrors()), last.GetErrors()[0])
	}
}

func TestScenario34_ErrorHookFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		resp *pulumirpc.ErrorHookResponse
		err  error
		want string
	}{
		{
			"response-error", &pulumirpc.ErrorHookResponse{Error: "hook broke", Retry: true}, nil,
			`error hooks execution failed: error hook "h" failed: hook broke`,
		},
		{
			"grpc-error", nil, errors.New("hook broke"),
			`error hooks execution failed: error hook "h" failed: rpc error: code = Unknown desc = hook broke`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var creates atomic.Int32
			e := startEngine(t, WithProvider(failingCreate(1, &creates)))
			cbs := newCallbackServer(t)
			p := newProgram(t, e)
			var calls errorHookCalls
			p.errorHook("h", cbs.errorHook(calls.fn(tt.resp, tt.err)))
			res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, mod: withHooks(&binding{OnError: []string{"h"}})})
			wantFailed(t, res, e.URN("", thingType, "r"), tt.want)
			if creates.Load() != 1 {
				t.Fatalf("Create retried: %d calls", creates.Load())
			}
		})
	}
}

func TestErrorHooksUpdateAndDelete(t *testing.T) {
	t.Parallel()
	// First deployment creates r with an on_error binding.
	e1 := startEngine(t)
	cbs1 := newCallbackServer(t)
	p1 := newProgram(t, e1)
	p1.errorHook("h", cbs1.errorHook(func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
		return &pulumirpc.ErrorHookResponse{}, nil
	}))
	p1.custom("u", map[string]any{"v": 1.0}, withHooks(&binding{OnError: []string{"h"}}))
	p1.custom("d", map[string]any{"v": 1.0}, withHooks(&binding{OnError: []string{"h"}}))
	res1 := p1.finish()

	var updates, deletes atomic.Int32
	e2 := startEngine(t, WithState(res1.State), ContinueOnError(true),
		WithProvider(&FakeProvider{
			OnUpdate: func(ctx context.Context, req *UpdateRequest) (*UpdateResponse, error) {
				if updates.Add(1) == 1 {
					return nil, errors.New("update failed")
				}
				return (&FakeProvider{}).update(ctx, req)
			},
			OnDelete: func(context.Context, *DeleteRequest) error {
				if deletes.Add(1) == 1 {
					return errors.New("delete failed")
				}
				return nil
			},
		}))
	cbs2 := newCallbackServer(t)
	p2 := newProgram(t, e2)
	var calls errorHookCalls
	p2.errorHook("h", cbs2.errorHook(calls.fn(&pulumirpc.ErrorHookResponse{Retry: true}, nil)))
	p2.custom("u", map[string]any{"v": 2.0}, withHooks(&binding{OnError: []string{"h"}}))
	res2 := p2.finish()
	if res2.Err != nil {
		t.Fatalf("deployment failed: %v\n%s", res2.Err, e2.Trace())
	}
	got := calls.all()
	if len(got) != 2 {
		t.Fatalf("hook calls %d, want 2", len(got))
	}
	upd, del := got[0], got[1]
	if upd.GetFailedOperation() != "update" || upd.GetNewInputs() == nil || upd.GetOldInputs() == nil ||
		upd.GetOldOutputs() == nil || upd.GetOldOptions() == nil || upd.GetNewOptions() == nil {
		t.Errorf("update request %v", upd)
	}
	if del.GetFailedOperation() != "delete" || del.NewInputs != nil || del.GetOldInputs() == nil ||
		del.GetOldOutputs() == nil || del.GetOldOptions() == nil || del.NewOptions != nil {
		t.Errorf("delete request %v", del)
	}
	if res2.State.Get(e2.URN("", thingType, "d")) != nil {
		t.Fatal("d not deleted")
	}
}
