package enginetest

import (
	"net"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func TestScenario19_StackTransformEmptyTarget(t *testing.T) {
	t.Parallel()
	e := startEngine(t)
	p := newProgram(t, e)
	tests := []struct {
		name     string
		register func(*pulumirpc.Callback) error
	}{
		{"resource", func(cb *pulumirpc.Callback) error {
			_, err := p.mon.RegisterStackTransform(p.ctx(), cb)
			return err
		}},
		{"invoke", func(cb *pulumirpc.Callback) error {
			_, err := p.mon.RegisterStackInvokeTransform(p.ctx(), cb)
			return err
		}},
	}
	for _, tt := range tests {
		err := tt.register(&pulumirpc.Callback{Token: "t"})
		if errMessage(err) != "target must be specified" {
			t.Errorf("%s: got %v, want \"target must be specified\"", tt.name, err)
		}
	}
}

// deadTarget returns a loopback address nothing listens on.
func deadTarget(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if err := lis.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func TestScenario20_UnreachableTarget(t *testing.T) {
	t.Parallel()
	t.Run("transform", func(t *testing.T) {
		t.Parallel()
		e := startEngine(t)
		p := newProgram(t, e)
		p.stackTransform(&pulumirpc.Callback{Target: deadTarget(t), Token: "t"})
		_, err := p.register(res{typ: thingType, name: "r", custom: true})
		if got := errMessage(err); !strings.HasPrefix(got, "invoke transform: rpc error: code = Unavailable") {
			t.Fatalf("got %q, want an Unavailable transform failure", got)
		}
		p.finish()
	})
	t.Run("hook", func(t *testing.T) {
		t.Parallel()
		e := startEngine(t)
		p := newProgram(t, e)
		p.resourceHook("h", &pulumirpc.Callback{Target: deadTarget(t), Token: "t"}, false, false)
		res := p.registerUnanswered(res{typ: thingType, name: "r", custom: true, mod: func(r *pulumirpc.RegisterResourceRequest) {
			r.Hooks = &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"h"}}
		}})
		wantFailed(t, res, "", "")
		wantErrContains(t, res.Err, `before hook "h" failed: rpc error: code = Unavailable`)
	})
	t.Run("dial-at-registration", func(t *testing.T) {
		t.Parallel()
		e := startEngine(t)
		p := newProgram(t, e)
		target := deadTarget(t)
		p.stackTransform(&pulumirpc.Callback{Target: target, Token: "a"})
		p.resourceHook("h", &pulumirpc.Callback{Target: target, Token: "b"}, false, false)
		p.finish()
		dials := e.Events(KindDial)
		if len(dials) != 1 || dials[0].Target != target {
			t.Fatalf("dials %v, want one for %s", dials, target)
		}
		// The client was created by the registration, before any call.
		if first := e.Events()[0]; first.Kind != KindDial {
			t.Fatalf("first event %v, want the dial", first)
		}
	})
}
