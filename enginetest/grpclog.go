package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// debugGRPCVar names the file the engine appends its gRPC log to, as the
// CLI reads it.
const debugGRPCVar = "PULUMI_DEBUG_GRPC"

// The metadata the CLI gives the entries of its callback clients and of its
// resource monitor's server.
var (
	callbacksClientMetadata = map[string]string{"kind": "callbacks", "mode": "client"}
	monitorServerMetadata   = map[string]string{"mode": "server"}
)

// grpcLogEntry is one line of the engine's gRPC log, with the CLI's fields
// (sdk/go/pulumi-internal/rpcdebug of sdk v3.274.1).
type grpcLogEntry struct {
	Method    string            `json:"method"`
	Request   json.RawMessage   `json:"request,omitempty"`
	Response  json.RawMessage   `json:"response,omitempty"`
	Errors    []string          `json:"errors,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	Progress  string            `json:"progress,omitempty"`
	Timestamp time.Time         `json:"timestamp"`
	Duration  time.Duration     `json:"duration,omitempty"`
}

// grpcLogLocks holds one lock per log file, for every engine of the
// process: the engines that share a file write it one whole line at a time.
var grpcLogLocks sync.Map // string -> *sync.Mutex

// grpcLog appends the engine's gRPC log to a file, as the CLI does when
// PULUMI_DEBUG_GRPC names one. The zero path logs nothing.
type grpcLog struct {
	path string
	mu   *sync.Mutex
}

// newGRPCLog returns the log named by PULUMI_DEBUG_GRPC, if any.
func newGRPCLog() *grpcLog {
	path := os.Getenv(debugGRPCVar)
	if path == "" {
		return nil
	}
	mu, _ := grpcLogLocks.LoadOrStore(path, &sync.Mutex{})
	return &grpcLog{path: path, mu: mu.(*sync.Mutex)}
}

// record appends one entry as one line, in one write, to a file opened for
// appending (mode 0600 when it creates it), so that the lines of several
// engines, in this process or others, never interleave.
func (l *grpcLog) record(e *grpcLogEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding a gRPC log entry: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("appending to the gRPC log %s: %w", l.path, err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to the gRPC log %s: %w", l.path, err)
	}
	return nil
}

// body is a message as the CLI logs it: protojson with default options
// (null for no message), or the error of encoding it.
func body(m any) (json.RawMessage, error) {
	if m == nil {
		return json.RawMessage("null"), nil
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return json.RawMessage("null"), fmt.Errorf("failed to decode, expecting protoreflect.ProtoMessage, got %T", m)
	}
	return protojson.Marshal(pm)
}

// started fills in the request of an entry and marks it started.
func (e *grpcLogEntry) started(req any) {
	j, err := body(req)
	if err != nil {
		e.Errors = append(e.Errors, err.Error())
		return
	}
	e.Request, e.Progress = j, "request_started"
}

// completed marks an entry completed now: its timestamp becomes the end and
// its duration the time since its timestamp (since year 1, saturated, for
// the server's entries, which start with no timestamp, as the CLI's do).
func (e *grpcLogEntry) completed() {
	now := time.Now()
	e.Progress, e.Duration, e.Timestamp = "response_completed", now.Sub(e.Timestamp), now
}

// serverOptions logs every call the engine serves on the ResourceMonitor
// service, as the CLI logs its resource monitor: a request_started entry
// with no timestamp, and a response_completed entry that repeats the
// request and adds the response; the handler's error is not logged.
func (l *grpcLog) serverOptions() []grpc.ServerOption {
	if l == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(func(
		ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler,
	) (any, error) {
		if !strings.HasPrefix(info.FullMethod, "/pulumirpc.ResourceMonitor/") {
			return handler(ctx, req)
		}
		e := grpcLogEntry{Method: info.FullMethod, Metadata: monitorServerMetadata}
		e.started(req)
		if err := l.record(&e); err != nil {
			return nil, err
		}
		resp, err := handler(ctx, req)
		if j, jerr := body(resp); jerr != nil {
			e.Errors = append(e.Errors, jerr.Error())
		} else {
			e.Response = j
		}
		e.completed()
		if lerr := l.record(&e); lerr != nil {
			return resp, lerr
		}
		return resp, err
	})}
}

// dialOptions logs every call to a callback server, as the CLI logs its
// callback clients: a request_started entry at the start, and a
// response_completed entry that repeats the request and adds the response
// or the error.
func (l *grpcLog) dialOptions() []grpc.DialOption {
	if l == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(
		ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
	) error {
		e := grpcLogEntry{Method: method, Metadata: callbacksClientMetadata, Timestamp: time.Now()}
		e.started(req)
		if err := l.record(&e); err != nil {
			return err
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err != nil {
			e.Errors = append(e.Errors, err.Error())
		} else if j, jerr := body(reply); jerr != nil {
			e.Errors = append(e.Errors, jerr.Error())
		} else {
			e.Response = j
		}
		e.completed()
		if lerr := l.record(&e); lerr != nil {
			return lerr
		}
		return err
	})}
}
