// Package wiretest helps tests play the engine's side of the callback
// protocol: a callback server with a client connected to it, calls over the
// wire, comparisons of the messages that come back, and property values in
// the form the engine sends them.
package wiretest

import (
	"encoding/base64"
	"sync"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// StartServer starts a real callback server on loopback and a client
// connected to it; both are closed when tb's test ends.
func StartServer(tb testing.TB) (*callbacks.Server, pulumirpc.CallbacksClient) {
	tb.Helper()
	srv, err := callbacks.Listen()
	if err != nil {
		tb.Fatalf("starting the callback server: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	conn, err := grpc.NewClient(srv.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatalf("connecting to the callback server: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return srv, pulumirpc.NewCallbacksClient(conn)
}

// Listen starts a real callback server on loopback, closed when tb's test
// ends, for tests that reach it the way the engine does, through the target
// of each callback (see [Call]).
func Listen(tb testing.TB) *callbacks.Server {
	tb.Helper()
	srv, err := callbacks.Listen()
	if err != nil {
		tb.Fatalf("starting the callback server: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

// Call plays the engine over a connection of its own to cb's target, as the
// engine dials each callback's target: it sends req and, when the call
// succeeds, decodes the answer into resp. It returns the call's error.
func Call(tb testing.TB, cb *pulumirpc.Callback, req, resp proto.Message) error {
	tb.Helper()
	conn, err := grpc.NewClient(cb.GetTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatalf("connecting to %q: %v", cb.GetTarget(), err)
	}
	defer conn.Close()
	return Invoke(tb, pulumirpc.NewCallbacksClient(conn), cb, req, resp)
}

// Invoke plays the engine: it sends req to the callback cb through client
// and, when the call succeeds, decodes the answer into resp. It returns the
// call's error.
func Invoke(tb testing.TB, client pulumirpc.CallbacksClient, cb *pulumirpc.Callback, req, resp proto.Message) error {
	tb.Helper()
	payload, err := proto.Marshal(req)
	if err != nil {
		tb.Fatalf("marshalling the request: %v", err)
	}
	res, err := client.Invoke(tb.Context(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: payload})
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(res.GetResponse(), resp); err != nil {
		tb.Fatalf("unmarshalling the response: %v", err)
	}
	return nil
}

// Transform sends req to the resource transform cb through client and
// returns its answer.
func Transform(tb testing.TB, client pulumirpc.CallbacksClient, cb *pulumirpc.Callback, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
	tb.Helper()
	return call[pulumirpc.TransformResponse](tb, client, cb, req)
}

// InvokeTransform sends req to the invoke transform cb through client and
// returns its answer.
func InvokeTransform(tb testing.TB, client pulumirpc.CallbacksClient, cb *pulumirpc.Callback, req *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
	tb.Helper()
	return call[pulumirpc.TransformInvokeResponse](tb, client, cb, req)
}

// call is [Invoke] for a response of type R, which it returns.
func call[R any, PR interface {
	*R
	proto.Message
}](tb testing.TB, client pulumirpc.CallbacksClient, cb *pulumirpc.Callback, req proto.Message) (PR, error) {
	tb.Helper()
	resp := PR(new(R))
	if err := Invoke(tb, client, cb, req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// RequireProtoEqual fails the test, showing both messages in text form,
// unless want and got are equal.
func RequireProtoEqual(tb testing.TB, want, got proto.Message) {
	tb.Helper()
	if !proto.Equal(want, got) {
		tb.Fatalf("messages differ\n--- want\n%s\n--- got\n%s",
			prototext.Format(want), prototext.Format(got))
	}
}

// Str is a string value.
func Str(s string) *structpb.Value { return structpb.NewStringValue(s) }

// List is a list value of vs.
func List(vs ...*structpb.Value) *structpb.Value {
	return structpb.NewListValue(&structpb.ListValue{Values: vs})
}

// Object is an object value of alternating keys (strings) and values
// (*structpb.Value).
func Object(kv ...any) *structpb.Value { return structpb.NewStructValue(Struct(kv...)) }

// Struct is [Object] as a struct.
func Struct(kv ...any) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := 0; i < len(kv); i += 2 {
		s.Fields[kv[i].(string)] = kv[i+1].(*structpb.Value)
	}
	return s
}

// Sig is a special value: an object of fields marked with signature sig.
func Sig(sig string, fields map[string]*structpb.Value) *structpb.Value {
	m := map[string]*structpb.Value{resource.SigKey: structpb.NewStringValue(sig)}
	for k, v := range fields {
		m[k] = v
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: m})
}

// ByteString is b as the engine sends a byte string to a callback that
// accepts them: an envelope holding b in base64.
func ByteString(b []byte) *structpb.Value {
	return Sig(resource.ByteStringSig, map[string]*structpb.Value{"value": Str(base64.StdEncoding.EncodeToString(b))})
}

// Output is an output value; a nil value makes it unknown.
func Output(value *structpb.Value, secret bool, deps ...string) *structpb.Value {
	f := map[string]*structpb.Value{}
	if value != nil {
		f["value"] = value
	}
	if secret {
		f["secret"] = structpb.NewBoolValue(true)
	}
	if len(deps) > 0 {
		l := make([]*structpb.Value, len(deps))
		for i, d := range deps {
			l[i] = structpb.NewStringValue(d)
		}
		f["dependencies"] = structpb.NewListValue(&structpb.ListValue{Values: l})
	}
	return Sig(resource.OutputValueSig, f)
}

var bound sync.Map // boundKey → *monitor.Monitor

type boundKey struct {
	mon *monitor.Monitor
	srv *callbacks.Server
}

// Bind returns a monitor that talks to mon's engine but hands out callbacks
// from srv, for tests that serve callbacks on a server of their own. The
// same pair always gives the same monitor, so hook names stay checked.
func Bind(tb testing.TB, mon *monitor.Monitor, srv *callbacks.Server) *monitor.Monitor {
	tb.Helper()
	if mon == nil || srv == nil {
		return nil
	}
	if mon.Server() == srv {
		return mon
	}
	k := boundKey{mon, srv}
	if m, ok := bound.Load(k); ok {
		return m.(*monitor.Monitor)
	}
	m, err := monitor.New(mon.Client(), srv)
	if err != nil {
		tb.Fatalf("wiretest: %v", err)
	}
	got, _ := bound.LoadOrStore(k, m)
	tb.Cleanup(func() { bound.Delete(k) })
	return got.(*monitor.Monitor)
}

// Decode runs a typed package's payload decoder on the encoding of req, as
// a registered callback runs it on the engine's payload; the encoding
// belongs to the call alone (shared).
func Decode[A any](req proto.Message, decode func(payload []byte, shared bool) (A, error)) (A, error) {
	b, err := proto.Marshal(req)
	if err != nil {
		var zero A
		return zero, err
	}
	return decode(b, true)
}

// Encode runs a typed package's payload encoder and decodes what it wrote
// into a new message of type M.
func Encode[M any, PM interface {
	*M
	proto.Message
}](encode func() ([]byte, error)) (PM, error) {
	b, err := encode()
	if err != nil {
		return nil, err
	}
	out := PM(new(M))
	return out, proto.Unmarshal(b, out)
}
