package enginetest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// maxMessageSize is the engine's gRPC message limit, 400 MiB.
const maxMessageSize = 400 * 1024 * 1024

// errClosed is returned once the engine is closed.
var errClosed = errors.New("enginetest: engine closed")

// dialer keeps one callbacks client per exact target string, as the engine
// does. It is safe for concurrent use.
type dialer struct {
	opts   []grpc.DialOption // tracing, if any
	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
}

// client returns the client for target, creating it on first use. created
// reports whether this call created it.
func (d *dialer) client(target string) (client pulumirpc.CallbacksClient, created bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, false, errClosed
	}
	if conn, ok := d.conns[target]; ok {
		return pulumirpc.NewCallbacksClient(conn), false, nil
	}
	conn, err := grpc.NewClient(target, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(maxMessageSize),
			grpc.MaxCallSendMsgSize(maxMessageSize),
		),
	}, d.opts...)...)
	if err != nil {
		return nil, false, err
	}
	if d.conns == nil {
		d.conns = map[string]*grpc.ClientConn{}
	}
	d.conns[target] = conn
	return pulumirpc.NewCallbacksClient(conn), true, nil
}

// close closes every client. Later calls to client fail.
func (d *dialer) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for _, c := range d.conns {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	d.conns = nil
	return errors.Join(errs...)
}

// register prepares a callback at registration time: it creates (or reuses)
// the client for its target.
func (e *Engine) register(cb *pulumirpc.Callback) error {
	if cb == nil {
		return errors.New("callback must be specified")
	}
	_, created, err := e.dialer.client(cb.GetTarget())
	if err != nil {
		return fmt.Errorf("creating callbacks client for %q: %w", cb.GetTarget(), err)
	}
	if created {
		e.rec.add(Event{Kind: KindDial, Target: cb.GetTarget()})
	}
	return nil
}

// invokeCallback sends req to cb and returns the raw response bytes.
func (e *Engine) invokeCallback(ctx context.Context, cb *pulumirpc.Callback, req proto.Message) ([]byte, error) {
	client, created, err := e.dialer.client(cb.GetTarget())
	if err != nil {
		return nil, err
	}
	if created {
		e.rec.add(Event{Kind: KindDial, Target: cb.GetTarget()})
	}
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("marshaling request: %w", err)
	}
	// The call ends with the RPC that caused it or with the deployment,
	// whichever ends first.
	ctx, cancel := context.WithCancel(e.callbackContext(ctx))
	defer cancel()
	defer context.AfterFunc(e.base, cancel)()
	resp, err := client.Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: payload})
	if err != nil {
		return nil, err
	}
	return resp.GetResponse(), nil
}
