package callbacks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/langhost/callbacks/internal/calllog"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Server serves a [Registry] as the pulumirpc.Callbacks gRPC service, plus the
// standard gRPC health service. Its lifecycle follows net/http's Server:
// [Server.Serve] blocks until [Server.Shutdown] or [Server.Close], after
// which it returns [ErrServerClosed]; a closed server cannot be reused.
//
// A Server is safe for concurrent use.
type Server struct {
	pulumirpc.UnimplementedCallbacksServer

	reg      *Registry
	cfg      config
	grpc     *grpc.Server
	health   *health.Server
	reporter *engineReporter   // owned connection to Engine.Log, if any
	calls    *calllog.Exporter // owned records of calls for Pulumi's log, if any
	flight   inflight
	running  runningFuncs // user functions whose goroutines have not returned

	mu      sync.Mutex
	target  string
	closed  bool
	serves  sync.WaitGroup // Listen's own Serve goroutine
	serving chan struct{}  // closed once the target is known
	done    chan struct{}  // closed by Shutdown and Close
	once    sync.Once      // closes serving
	doneOne sync.Once      // closes done

	stopOnce   sync.Once
	stopped    chan struct{} // closed once the grpc server has fully stopped
	watchStop  chan struct{} // closed to end health watches before the final stop
	watchClose sync.Once
}

var _ pulumirpc.CallbacksServer = (*Server)(nil)

// NewServer returns a server that is not yet serving; call [Server.Serve]
// with a listener, as with net/http:
//
//	srv, err := callbacks.NewServer()
//	...
//	go srv.Serve(lis)
//	cb, err := srv.Register(ctx, f) // waits, bounded by ctx, until Serve has begun
//
// [Listen] does both and is what most programs want. With [WithListener] or
// [Target] the server knows its target at once, and registrations do not
// wait for Serve. An option with an invalid value is an error wrapping
// [ErrInvalidOption].
func NewServer(opts ...ServerOption) (*Server, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, health: health.NewServer(), stopped: make(chan struct{}), watchStop: make(chan struct{}),
		serving: make(chan struct{}), done: make(chan struct{})}
	switch {
	case cfg.target != "":
		s.setTarget(cfg.target)
	case cfg.listener != nil:
		s.setTarget(targetOf(cfg.listener.Addr()))
	}
	if cfg.registry != nil {
		s.reg = cfg.registry
	} else {
		s.reg = newRegistry(cfg)
	}
	if cfg.engineAddr != "" && cfg.reporter == nil {
		var dialOpts []grpc.DialOption
		if s.reg.cfg.tracing() {
			dialOpts = append(dialOpts, grpc.WithStatsHandler(s.reg.cfg.clientStatsHandler()))
		}
		rep, err := dialEngine(cfg.engineAddr, dialOpts...)
		if err != nil {
			return nil, fmt.Errorf("%w: engine address %q: %w", ErrInvalidOption, cfg.engineAddr, err)
		}
		s.reporter = rep
	}
	if s.reporter != nil {
		s.reg.engine.CompareAndSwap(nil, s.reporter)
	}
	s.startPulumiLog()
	gopts := append([]grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.maxMsgSize),
		grpc.MaxSendMsgSize(cfg.maxMsgSize),
		grpc.ForceServerCodecV2(wireCodec{}), // payloads copied once, responses not at all (codec.go)
		// Calls run on goroutines that live on, whose stacks have grown
		// already, instead of a new goroutine per call that grows its stack
		// through the handler each time. When they are all busy, gRPC
		// starts a goroutine for the call as it would without them.
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
	}, cfg.grpcOptions...)
	if s.reg.cfg.tracing() {
		// A span per Invoke, under the engine's (trace.go).
		gopts = append([]grpc.ServerOption{grpc.StatsHandler(s.reg.cfg.serverStatsHandler())}, gopts...)
	}
	s.grpc = grpc.NewServer(gopts...)
	pulumirpc.RegisterCallbacksServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, &healthService{Server: s.health, stop: s.watchStop})
	return s, nil
}

// Listen starts a server that serves in the background and returns once it
// is listening, so the engine's first call can never race the listener. By
// default it listens on 127.0.0.1 on a free port; see [Address] and
// [WithListener]. Stop it with [Server.Shutdown] or [Server.Close].
func Listen(opts ...ServerOption) (*Server, error) {
	s, err := NewServer(opts...)
	if err != nil {
		return nil, err
	}
	lis := s.cfg.listener
	if lis == nil {
		if lis, err = listenAddress(s.cfg.address); err != nil {
			s.release()
			return nil, err
		}
	}
	if err := s.startServing(lis); err != nil {
		_ = lis.Close()
		s.release()
		return nil, err
	}
	s.serves.Add(1)
	go func() {
		defer s.serves.Done()
		_ = s.grpc.Serve(lis)
	}()
	return s, nil
}

func listenAddress(addr string) (net.Listener, error) {
	switch {
	case addr == "":
		return net.Listen("tcp", "127.0.0.1:0")
	case strings.HasPrefix(addr, "unix://"):
		return ListenUnix(strings.TrimPrefix(addr, "unix://"))
	}
	return net.Listen("tcp", addr)
}

// ListenUnix listens on a unix socket at path that only the current user can
// connect to (mode 0600). An existing socket file at path is replaced.
func ListenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = lis.Close()
		return nil, err
	}
	return lis, nil
}

// Serve accepts connections on lis and serves them until Shutdown or Close,
// then returns [ErrServerClosed]. Other errors come from the listener.
func (s *Server) Serve(lis net.Listener) error {
	if err := s.startServing(lis); err != nil {
		return err
	}
	err := s.grpc.Serve(lis)
	if s.isClosed() {
		return ErrServerClosed
	}
	return err
}

func (s *Server) startServing(lis net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrServerClosed
	}
	if s.target == "" {
		s.setTarget(targetOf(lis.Addr()))
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(pulumirpc.Callbacks_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return nil
}

func targetOf(a net.Addr) string {
	if a.Network() == "unix" {
		// The engine runs in another directory: hand it an absolute path.
		path := a.String()
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return "unix://" + path
	}
	return a.String()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Registry returns the registry the server serves.
func (s *Server) Registry() *Registry { return s.reg }

func (s *Server) setTarget(t string) {
	s.target = t
	s.once.Do(func() { close(s.serving) })
}

// Target returns the address the engine dials, such as "127.0.0.1:PORT" or
// "unix:///path", or "" before the server serves.
func (s *Server) Target() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.target
}

// Register stores f in the registry and returns the Callback to hand to the
// engine. A server made by [NewServer] without a listener or target learns
// its target when [Server.Serve] begins; until then Register waits, bounded
// by ctx, and fails with an error wrapping [ErrNotServing] and ctx's error if
// ctx ends first. It fails with [ErrServerClosed] after Shutdown or Close.
// Every error is an [*Error].
func (s *Server) Register(ctx context.Context, f Func, opts ...RegisterOption) (*pulumirpc.Callback, error) {
	e, err := newEntry(f, opts)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.serving:
	case <-s.done:
	case <-ctx.Done():
		return nil, &Error{Code: codes.Unavailable, Kind: f.kind, Err: fmt.Errorf("%w: %w", ErrNotServing, context.Cause(ctx)),
			Msg: fmt.Sprintf("callbacks: registering %s: the server did not begin serving before the context ended: %v", f.kind, context.Cause(ctx))}
	}
	s.mu.Lock()
	closed, target := s.closed, s.target
	s.mu.Unlock()
	if closed {
		return nil, &Error{Code: codes.Unavailable, Kind: f.kind, Err: ErrServerClosed,
			Msg: ErrServerClosed.Error()}
	}
	token := s.reg.store(e)
	return &pulumirpc.Callback{Target: target, Token: token, AcceptsByteString: !e.rejectBytes}, nil
}

// Invoke implements pulumirpc.CallbacksServer. Once Shutdown has begun, it
// refuses calls with Unavailable and an [*Error] wrapping [ErrServerClosed].
func (s *Server) Invoke(ctx context.Context, req *pulumirpc.CallbackInvokeRequest) (*pulumirpc.CallbackInvokeResponse, error) {
	if !s.flight.enter() {
		return nil, &Error{Code: codes.Unavailable, Token: req.GetToken(), Err: ErrServerClosed, Msg: "callbacks: server is shutting down"}
	}
	defer s.flight.exit()
	p := req.GetRequest()
	if len(p) >= largePayload {
		debug.FreeOSMemory()
	}
	// The codec's own bytes: decoded strings may share them. The call's
	// span is the RPC's, if it is traced.
	out, err := s.reg.invoke(ctx, req.GetToken(), p, invocation{span: trace.SpanFromContext(ctx), served: true, owned: true, running: &s.running})
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CallbackInvokeResponse{Response: out}, nil
}

// Shutdown stops the server gracefully: the health service turns NOT_SERVING,
// new invocations are refused with Unavailable, calls in flight run to
// completion, and then the server stops. If ctx ends first, the server is
// stopped at once (cancelling the calls still running) and ctx's error is
// returned. Shutdown is idempotent and safe to call concurrently with Close.
//
// A function still running once the server has stopped — its call ended
// (the engine went away, or a deadline passed) but it ignored its context —
// is named once, with its kind, name and resource, at warning level in the
// server's logger and to a Reporter set with [WithReporter]: nothing will
// read its result, and whatever it holds stays held until it returns.
//
// A server that records its calls in Pulumi's log (see the package
// documentation) sends the records still queued once it has stopped,
// for at most two seconds, whatever ctx says.
func (s *Server) Shutdown(ctx context.Context) error {
	s.markClosed()
	drained := s.flight.close()
	select {
	case <-drained:
	case <-ctx.Done():
		s.stop(false)
		return ctx.Err()
	}
	graceful := make(chan struct{})
	go func() {
		s.stop(true)
		close(graceful)
	}()
	select {
	case <-graceful:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-graceful
		return ctx.Err()
	}
}

// Close stops the server at once: listeners and connections are closed and
// calls in flight are cancelled. It is idempotent. Functions still running
// afterwards are named as with [Server.Shutdown], and the records of calls
// still queued for Pulumi's log are sent as Shutdown sends them.
func (s *Server) Close() error {
	s.markClosed()
	s.flight.close()
	s.endWatches()
	s.grpc.Stop() // at once, even while a Shutdown is stopping gracefully
	s.stop(false)
	return nil
}

func (s *Server) markClosed() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.doneOne.Do(func() { close(s.done) })
	s.health.Shutdown()
}

func (s *Server) endWatches() { s.watchClose.Do(func() { close(s.watchStop) }) }

// stop stops the grpc server once, waits for Listen's serving goroutine,
// sends the records of calls still queued for Pulumi's log (bounded in
// time) and releases the engine connection. Later calls wait for the first to finish.
func (s *Server) stop(graceful bool) {
	s.stopOnce.Do(func() {
		s.endWatches()
		if graceful {
			s.grpc.GracefulStop()
		} else {
			s.grpc.Stop()
		}
		s.serves.Wait()
		s.reg.reportOutliving(context.Background(), &s.running)
		s.release()
		close(s.stopped)
	})
	<-s.stopped
}

// release closes what the server owns beside its gRPC server: the
// records of calls for Pulumi's log, sent first, then the engine
// connection.
func (s *Server) release() {
	s.closePulumiLog()
	if s.reporter != nil {
		_ = s.reporter.conn.Close()
	}
}

// inflight counts running invocations and, once closed, refuses new ones and
// signals when the last running one ends.
type inflight struct {
	n       atomic.Int64
	once    sync.Once
	drained chan struct{}
	init    sync.Once
}

const closingBit = int64(1) << 62

func (f *inflight) ch() chan struct{} {
	f.init.Do(func() { f.drained = make(chan struct{}) })
	return f.drained
}

func (f *inflight) enter() bool {
	if f.n.Add(1)&closingBit != 0 {
		f.exit()
		return false
	}
	return true
}

func (f *inflight) exit() {
	if f.n.Add(-1) == closingBit {
		f.once.Do(func() { close(f.ch()) })
	}
}

// close stops admitting calls and returns a channel closed when none runs.
func (f *inflight) close() <-chan struct{} {
	ch := f.ch()
	if f.n.Or(closingBit) == 0 {
		f.once.Do(func() { close(ch) })
	}
	return ch
}

// healthService is the standard health service, except that watches end when
// the server stops, so that a watching client cannot hold up Shutdown.
type healthService struct {
	*health.Server
	stop <-chan struct{}
}

func (h *healthService) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := h.Server.Watch(req, watchStream{stream, ctx})
	if errors.Is(ctx.Err(), context.Canceled) && stream.Context().Err() == nil {
		return status.Error(codes.Unavailable, "callbacks: server is shutting down")
	}
	return err
}

type watchStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (w watchStream) Context() context.Context { return w.ctx }

// largePayload is the payload size from which Invoke returns the memory
// that is free to the operating system before the call runs: gRPC's receive
// buffers, which held the payload before it was joined into one slice, are
// garbage by then and as large as it, and the response, as large again,
// would otherwise come on top of them.
const largePayload = 32 << 20
