package enginetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// This file holds the test-local program side: a minimal callbacks server
// keyed by token, and a "program" speaking to the monitor through a raw
// ResourceMonitorClient. It deliberately shares no code with the module's
// own callbacks server.

type rawHandler func(ctx context.Context, req []byte) ([]byte, error)

// callbackServer is a pulumirpc.CallbacksServer serving registered handlers
// by token.
type callbackServer struct {
	pulumirpc.UnimplementedCallbacksServer
	target string

	mu       sync.RWMutex
	handlers map[string]rawHandler
	next     int
}

func newCallbackServer(t *testing.T) *callbackServer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &callbackServer{target: lis.Addr().String(), handlers: map[string]rawHandler{}}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(400 << 20))
	pulumirpc.RegisterCallbacksServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return s
}

func (s *callbackServer) Invoke(ctx context.Context, req *pulumirpc.CallbackInvokeRequest) (*pulumirpc.CallbackInvokeResponse, error) {
	s.mu.RLock()
	h := s.handlers[req.GetToken()]
	s.mu.RUnlock()
	if h == nil {
		return nil, errors.New("callback function not found")
	}
	resp, err := h(ctx, req.GetRequest())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CallbackInvokeResponse{Response: resp}, nil
}

// add registers a raw handler and returns its Callback.
func (s *callbackServer) add(h rawHandler) *pulumirpc.Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	tok := fmt.Sprintf("tok-%d", s.next)
	s.handlers[tok] = h
	return &pulumirpc.Callback{Target: s.target, Token: tok}
}

// typed adapts a typed function to a raw handler. A nil response encodes
// as empty bytes.
func typed[Req any, PReq interface {
	*Req
	proto.Message
}, Resp proto.Message](fn func(context.Context, PReq) (Resp, error)) rawHandler {
	return func(ctx context.Context, b []byte) ([]byte, error) {
		req := PReq(new(Req))
		if err := proto.Unmarshal(b, req); err != nil {
			return nil, err
		}
		resp, err := fn(ctx, req)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(resp)
	}
}

type transformFunc = func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error)

func (s *callbackServer) transform(fn transformFunc) *pulumirpc.Callback {
	return s.add(typed(fn))
}

func (s *callbackServer) invokeTransform(
	fn func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error),
) *pulumirpc.Callback {
	return s.add(typed(fn))
}

type hookFunc = func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error)

func (s *callbackServer) hook(fn hookFunc) *pulumirpc.Callback {
	return s.add(typed(fn))
}

func (s *callbackServer) errorHook(
	fn func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error),
) *pulumirpc.Callback {
	return s.add(typed(fn))
}

// hookCalls records the requests a hook received.
type hookCalls struct {
	mu   sync.Mutex
	reqs []*pulumirpc.ResourceHookRequest
}

func (h *hookCalls) fn(resp *pulumirpc.ResourceHookResponse, err error) hookFunc {
	return func(_ context.Context, req *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
		h.mu.Lock()
		h.reqs = append(h.reqs, req)
		h.mu.Unlock()
		return resp, err
	}
}

func (h *hookCalls) all() []*pulumirpc.ResourceHookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*pulumirpc.ResourceHookRequest(nil), h.reqs...)
}

// startEngine starts an engine closed at the end of the test.
func startEngine(t *testing.T, opts ...Option) *Engine {
	t.Helper()
	e, err := Start(opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// program plays a language host's program with a raw monitor client.
type program struct {
	t   *testing.T
	e   *Engine
	mon pulumirpc.ResourceMonitorClient
	eng pulumirpc.EngineClient
}

func newProgram(t *testing.T, e *Engine) *program {
	t.Helper()
	conn, err := grpc.NewClient(e.MonitorAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial monitor: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &program{
		t: t, e: e,
		mon: pulumirpc.NewResourceMonitorClient(conn),
		eng: pulumirpc.NewEngineClient(conn),
	}
}

func (p *program) ctx() context.Context { return p.t.Context() }

// res describes a registration.
type res struct {
	typ, name string
	custom    bool
	props     map[string]any
	mod       func(*pulumirpc.RegisterResourceRequest)
}

func (p *program) request(r res) *pulumirpc.RegisterResourceRequest {
	p.t.Helper()
	req := &pulumirpc.RegisterResourceRequest{
		Type:            r.typ,
		Name:            r.name,
		Custom:          r.custom,
		Object:          mustStruct(p.t, r.props),
		AcceptSecrets:   true,
		AcceptResources: true,
	}
	if r.mod != nil {
		r.mod(req)
	}
	return req
}

func (p *program) register(r res) (*pulumirpc.RegisterResourceResponse, error) {
	p.t.Helper()
	return p.mon.RegisterResource(p.ctx(), p.request(r))
}

func (p *program) mustRegister(r res) *pulumirpc.RegisterResourceResponse {
	p.t.Helper()
	resp, err := p.register(r)
	if err != nil {
		p.t.Fatalf("RegisterResource %s: %v\ntrace:\n%s", r.name, err, p.e.Trace())
	}
	return resp
}

// custom registers a custom resource of type test:index:Thing.
func (p *program) custom(name string, props map[string]any, mod ...func(*pulumirpc.RegisterResourceRequest)) *pulumirpc.RegisterResourceResponse {
	p.t.Helper()
	return p.mustRegister(res{typ: thingType, name: name, custom: true, props: props, mod: chain(mod)})
}

func chain(mods []func(*pulumirpc.RegisterResourceRequest)) func(*pulumirpc.RegisterResourceRequest) {
	return func(r *pulumirpc.RegisterResourceRequest) {
		for _, m := range mods {
			m(r)
		}
	}
}

func (p *program) stackTransform(cb *pulumirpc.Callback) {
	p.t.Helper()
	if _, err := p.mon.RegisterStackTransform(p.ctx(), cb); err != nil {
		p.t.Fatalf("RegisterStackTransform: %v", err)
	}
}

func (p *program) resourceHook(name string, cb *pulumirpc.Callback, onDryRun, ignoreErrors bool) {
	p.t.Helper()
	_, err := p.mon.RegisterResourceHook(p.ctx(), &pulumirpc.RegisterResourceHookRequest{
		Name: name, Callback: cb, OnDryRun: onDryRun, IgnoreErrors: ignoreErrors,
	})
	if err != nil {
		p.t.Fatalf("RegisterResourceHook %q: %v", name, err)
	}
}

func (p *program) errorHook(name string, cb *pulumirpc.Callback) {
	p.t.Helper()
	_, err := p.mon.RegisterErrorHook(p.ctx(), &pulumirpc.RegisterErrorHookRequest{Name: name, Callback: cb})
	if err != nil {
		p.t.Fatalf("RegisterErrorHook %q: %v", name, err)
	}
}

func (p *program) signal() error {
	_, err := p.mon.SignalAndWaitForShutdown(p.ctx(), &emptypb.Empty{})
	return err
}

// finish signals the end of the program and returns the result.
func (p *program) finish() *Result {
	p.t.Helper()
	if err := p.signal(); err != nil {
		p.t.Fatalf("SignalAndWaitForShutdown: %v", err)
	}
	return wait(p.t, p.e)
}

// finishFailed signals the end of a program whose deployment fails after
// the signal: 3.260 never answers the signal, and the program is stopped
// instead; 3.274 answers it when it shuts the monitor down.
func (p *program) finishFailed() *Result {
	p.t.Helper()
	c := p.background(func(ctx context.Context) error {
		_, err := p.mon.SignalAndWaitForShutdown(ctx, &emptypb.Empty{})
		return err
	})
	res := c.waitUnanswered(p.e)
	wantFailed(p.t, res, "", "")
	if shutsDown(p.e) {
		if err := <-c.done; err != nil {
			p.t.Fatalf("SignalAndWaitForShutdown ended with %v, want released by the monitor's shutdown", err)
		}
		return res
	}
	c.stop()
	return res
}

func wait(t *testing.T, e *Engine) *Result {
	t.Helper()
	r, err := e.Wait(t.Context())
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return r
}

const thingType = "test:index:Thing"

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	if m == nil {
		return &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	fields := map[string]*structpb.Value{}
	for k, v := range m {
		if pv, ok := v.(*structpb.Value); ok {
			fields[k] = pv
			continue
		}
		pv, err := structpb.NewValue(v)
		if err != nil {
			t.Fatalf("struct value %q: %v", k, err)
		}
		fields[k] = pv
	}
	return &structpb.Struct{Fields: fields}
}

func errMessage(err error) string {
	if err == nil {
		return ""
	}
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

func wantErrContains(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("got error %q, want one containing %q", err.Error(), want)
	}
}

func wantDiag(t *testing.T, diags []Diagnostic, sev string, urn, msg string) {
	t.Helper()
	for _, d := range diags {
		if d.Severity == sev && d.URN == urn && d.Message == msg {
			return
		}
	}
	t.Fatalf("no %s diagnostic %q on %s; got %v", sev, msg, urn, diags)
}

func wantEqualStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

func wantProto(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func boolPtr(b bool) *bool { return &b }

// field returns a top-level field of s.
func field(s *structpb.Struct, k string) *structpb.Value { return s.GetFields()[k] }

// call is an RPC the program made in the background.
type call struct {
	t      *testing.T
	e      *Engine
	cancel context.CancelFunc
	done   chan error
}

// shutsDown reports whether e, once a deployment has failed, shuts its
// monitor down and so ends the RPCs it left unanswered (3.274), rather than
// leaving them until the program goes away (3.260).
func shutsDown(e *Engine) bool { return e.Version() != engine3_260 }

// monitorShutDown is how 3.274 ends the RPCs a failed deployment left
// unanswered.
const monitorShutDown = "code = Unavailable desc = resource monitor shut down while"

// background makes the RPC rpc in the background, with a context that
// stop ends as the death of the program ends its calls.
func (p *program) background(rpc func(ctx context.Context) error) *call {
	ctx, cancel := context.WithCancel(p.ctx())
	c := &call{t: p.t, e: p.e, cancel: cancel, done: make(chan error, 1)}
	go func() { c.done <- rpc(ctx) }()
	p.t.Cleanup(cancel)
	return c
}

// wantPending fails the test if the call has been answered.
func (c *call) wantPending() {
	c.t.Helper()
	select {
	case err := <-c.done:
		c.t.Fatalf("the engine answered the call (%v), and it never does after a failure", err)
	default:
	}
}

// stop checks that the call is still unanswered, then ends it from the
// program's side, as the engine's killing the program does: the call ends
// with the program's cancellation, not with an answer. On an engine that
// shuts its monitor down after a failure, the call of a deployment that is
// over must have ended with that shutdown instead.
func (c *call) stop() {
	c.t.Helper()
	if shutsDown(c.e) {
		if err := <-c.done; !strings.Contains(errText(err), monitorShutDown) {
			c.t.Fatalf("the call ended with %v, want the monitor's shutdown", err)
		}
		return
	}
	c.wantPending()
	c.cancel()
	if err := <-c.done; status.Code(err) != codes.Canceled {
		c.t.Fatalf("the call ended with %v, want the program's own cancellation", err)
	}
}

// wantEndedByProgram waits until the engine has recorded the end of the RPC
// of the given kind that match selects, and checks that only the program's
// cancellation ended it: the engine was still holding it unanswered.
// On an engine that shuts its monitor down after a failure, that shutdown
// must have ended it.
func wantEndedByProgram(t *testing.T, e *Engine, kind EventKind, match func(Event) bool) {
	t.Helper()
	if shutsDown(e) {
		wantEndedWith(t, e, kind, match, monitorShutDown)
		return
	}
	wantEndedWith(t, e, kind, match, "code = Canceled")
}

// wantEndedWith waits until the engine has recorded the end of the RPC of
// the given kind that match selects, and checks that its error contains
// want.
func wantEndedWith(t *testing.T, e *Engine, kind EventKind, match func(Event) bool, want string) {
	t.Helper()
	var got Event
	until(t, func() bool {
		for _, ev := range e.Events(kind) {
			if match(ev) {
				got = ev
				return true
			}
		}
		return false
	})
	if !strings.Contains(got.Err, want) {
		t.Fatalf("the engine ended %s with %q, want %q\ntrace:\n%s", got, got.Err, want, e.Trace())
	}
}

// byURN selects the events about urn.
func byURN(urn string) func(Event) bool {
	return func(ev Event) bool { return ev.URN == urn }
}

// byRequest selects the events of the RPC made with req.
func byRequest(req proto.Message) func(Event) bool {
	return func(ev Event) bool { return proto.Equal(ev.Request, req) }
}

// registerUnanswered registers r, whose step must fail or be cancelled and
// which must end the deployment. As in the engine, the RPC is never
// answered: the deployment ends without waiting for the program, and the
// registration waits until the program goes away. It returns the
// deployment's result.
func (p *program) registerUnanswered(r res) *Result {
	p.t.Helper()
	req := p.request(r)
	c := p.background(func(ctx context.Context) error {
		_, err := p.mon.RegisterResource(ctx, req)
		return err
	})
	res := c.waitUnanswered(p.e)
	c.stop()
	wantEndedByProgram(p.t, p.e, kindRegisterResource, byRequest(req))
	return res
}

// waitUnanswered waits for the end of the deployment, failing the test at
// once if the call is answered first. An engine that shuts its monitor down
// after a failure answers the call just before the end; stop checks how.
func (c *call) waitUnanswered(e *Engine) *Result {
	c.t.Helper()
	if shutsDown(e) {
		return wait(c.t, e)
	}
	over := make(chan *Result, 1)
	go func() {
		res, err := e.Wait(c.t.Context())
		if err == nil {
			over <- res
		}
		close(over)
	}()
	select {
	case err := <-c.done:
		c.t.Fatalf("the call was answered (%v) before the deployment ended\ntrace:\n%s", err, e.Trace())
		return nil
	case res, ok := <-over:
		if !ok {
			c.t.Fatal("the deployment never ended")
		}
		return res
	}
}

// registerAfterEnd registers r once a failed deployment is over: the engine
// reads no more of the program's events and never answers. The call ends
// when the test does.
func (p *program) registerAfterEnd(r res) *call {
	p.t.Helper()
	req := p.request(r)
	return p.background(func(ctx context.Context) error {
		_, err := p.mon.RegisterResource(ctx, req)
		return err
	})
}

// deploymentOver reports whether a deployment that failed in its steps is
// over: the engine's last word, "update failed" or "preview failed", has
// been said.
func deploymentOver(e *Engine) bool {
	for _, d := range e.Diagnostics() {
		if d.URN == "" && (d.Message == "update failed" || d.Message == "preview failed") {
			return true
		}
	}
	return false
}

// wantEndedEarly checks that a deployment failed as the engine reports an
// error in generating the steps (or a failure of the program): the error on
// the resource, if one is given, and no "update failed" or "preview
// failed", which the engine's event loop returns before saying.
func wantEndedEarly(t *testing.T, res *Result, urn, msg string) {
	t.Helper()
	if !res.Failed || res.Err == nil {
		t.Fatalf("result: failed=%t err=%v, want a failed deployment", res.Failed, res.Err)
	}
	if urn != "" || msg != "" {
		wantDiag(t, res.Diagnostics, severityError, urn, msg)
		wantErrContains(t, res.Err, msg)
	}
	for _, d := range res.Diagnostics {
		if d.URN == "" && (d.Message == "update failed" || d.Message == "preview failed") {
			t.Fatalf("the deployment ended with %v, which the engine does not say here", d)
		}
	}
}

// wantFailed checks that a deployment failed in its steps as the engine
// reports it: the step's error on the resource, then "update failed" (or
// "preview failed") with no URN.
func wantFailed(t *testing.T, res *Result, urn, msg string) {
	t.Helper()
	if !res.Failed || res.Err == nil {
		t.Fatalf("result: failed=%t err=%v, want a failed deployment", res.Failed, res.Err)
	}
	if urn != "" || msg != "" {
		wantDiag(t, res.Diagnostics, severityError, urn, msg)
		wantErrContains(t, res.Err, msg)
	}
	last := res.Diagnostics[len(res.Diagnostics)-1]
	if last.Severity != severityError || last.URN != "" ||
		(last.Message != "update failed" && last.Message != "preview failed") {
		t.Fatalf("last diagnostic %v, want the stack-level update failed / preview failed", last)
	}
}
