package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
)

// TestARunVerifiesEveryResponse runs the driver briefly against the
// targets that need only Go, and checks that every call was made, answered
// and verified, and that every target exited when released. It makes no
// claim about speed.
func TestARunVerifiesEveryResponse(t *testing.T) {
	cfg := config{
		targets:      []string{"proto", "ours", "gosdk"},
		sizes:        []string{"small"},
		concs:        []int{4},
		window:       250 * time.Millisecond,
		rounds:       2,
		warmup:       100 * time.Millisecond,
		callTimeout:  time.Minute,
		startTimeout: 2 * time.Minute,
	}
	r, err := run(context.Background(), cfg, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	r.write(&table)
	t.Log("\n" + table.String())
	for _, name := range cfg.targets {
		c := r.cells[key{name, "small", 4}]
		switch {
		case c == nil || c.calls == 0:
			t.Errorf("%s: no calls measured", name)
		case c.verified != c.calls || c.failed != 0:
			t.Errorf("%s: %d calls, %d verified, %d failed: %v", name, c.calls, c.verified, c.failed, c.failures)
		}
	}
	if r.failed() != 0 {
		t.Errorf("%d calls failed, warm-ups included", r.failed())
	}
	for _, p := range r.problems {
		t.Error(p)
	}
}

// TestVerifyRejectsWhatIsNotTheRequest holds verify to rejecting every
// response that does not give back the request's properties and options,
// and to accepting the ones that do.
func TestVerifyRejectsWhatIsNotTheRequest(t *testing.T) {
	req := benchdata.TransformRequest("medium")
	respond := func(change func(*pulumirpc.TransformResponse)) []byte {
		resp := &pulumirpc.TransformResponse{
			Properties: proto.Clone(req.GetProperties()).(*structpb.Struct),
			Options:    proto.Clone(req.GetOptions()).(*pulumirpc.TransformResourceOptions),
		}
		change(resp)
		return benchdata.Marshal(resp)
	}
	for _, tc := range []struct {
		name string
		resp []byte
		ok   bool
	}{
		{"the same", respond(func(*pulumirpc.TransformResponse) {}), true},
		{"options set to their defaults", respond(func(r *pulumirpc.TransformResponse) {
			r.Options.Protect, r.Options.RetainOnDelete = proto.Bool(false), proto.Bool(false)
		}), true},
		{"not protobuf", []byte{0xff, 0xff, 0xff}, false},
		{"the request itself", benchdata.Marshal(req), false},
		{"empty", nil, false},
		{"a property missing", respond(func(r *pulumirpc.TransformResponse) { delete(r.Properties.Fields, "ami") }), false},
		{"a property added", respond(func(r *pulumirpc.TransformResponse) {
			r.Properties.Fields["added"] = structpb.NewBoolValue(true)
		}), false},
		{"a property changed", respond(func(r *pulumirpc.TransformResponse) {
			r.Properties.Fields["instanceType"] = structpb.NewStringValue("t3.small")
		}), false},
		{"the secret unwrapped", respond(func(r *pulumirpc.TransformResponse) {
			r.Properties.Fields["adminPassword"] = structpb.NewStringValue("correct-horse-battery-staple-42")
		}), false},
		{"no options", respond(func(r *pulumirpc.TransformResponse) { r.Options = nil }), false},
		{"an option dropped", respond(func(r *pulumirpc.TransformResponse) { r.Options.IgnoreChanges = nil }), false},
		{"protected", respond(func(r *pulumirpc.TransformResponse) { r.Options.Protect = proto.Bool(true) }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := verify(tc.resp, req)
			if tc.ok && err != nil {
				t.Errorf("rejected: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestWindowCountsWrongAnswers sends calls to a server that drops a
// property from every answer, and checks that each of them is counted as
// failed, none as verified.
func TestWindowCountsWrongAnswers(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pulumirpc.RegisterCallbacksServer(srv, dropsAProperty{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	target := &target{name: "wrong", client: pulumirpc.NewCallbacksClient(conn), token: "t"}
	var c cell
	target.window(context.Background(), newPayload("small"), 2, 100*time.Millisecond, time.Minute, &c)
	if c.calls == 0 || c.failed != c.calls || c.verified != 0 {
		t.Errorf("%d calls, %d failed, %d verified; want every call failed", c.calls, c.failed, c.verified)
	}
	t.Log(c.failures)
}

// dropsAProperty answers a TransformRequest with its options and its
// properties but one.
type dropsAProperty struct {
	pulumirpc.UnimplementedCallbacksServer
}

func (dropsAProperty) Invoke(_ context.Context, req *pulumirpc.CallbackInvokeRequest) (*pulumirpc.CallbackInvokeResponse, error) {
	var in pulumirpc.TransformRequest
	if err := proto.Unmarshal(req.GetRequest(), &in); err != nil {
		return nil, err
	}
	for k := range in.GetProperties().GetFields() {
		delete(in.Properties.Fields, k)
		break
	}
	out := &pulumirpc.TransformResponse{Properties: in.GetProperties(), Options: in.GetOptions()}
	return &pulumirpc.CallbackInvokeResponse{Response: benchdata.Marshal(out)}, nil
}

// logWriter writes the driver's progress to the test's log.
type logWriter struct{ tb testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
