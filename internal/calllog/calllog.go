// Package calllog sends a record of each callback call, as OpenTelemetry
// log records over OTLP/gRPC, to the receiver the Pulumi CLI runs for its
// automatic log and names in PULUMI_LOG_OTLP_ENDPOINT. Each call gives two
// records, one when the user's function starts and one when the call ends,
// paired by a call id.
//
// An [Exporter] never holds up a call: records go into a bounded queue, one
// goroutine sends them in batches, each send bounded by a short deadline
// and never retried, and a record that finds the queue full, or whose send
// fails, is dropped and counted. [Exporter.Close] sends what is queued,
// bounded in time, and releases the connection and the goroutine.
//
// The package speaks the wire itself (the OTLP protos and gRPC): it sets no
// global OpenTelemetry provider, logger or error handler, and the
// OpenTelemetry log SDK is not linked.
package calllog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The environment: where the CLI's receiver listens, and the switch that
// turns the records off.
const (
	EndpointEnv = "PULUMI_LOG_OTLP_ENDPOINT"
	SwitchEnv   = "CALLBACKS_PULUMI_LOG"
)

// What marks a record as this module's: its body, and the attributes
// naming the module and the version of the records' shape. A reader finds
// the records by the module attribute and reads them by the schema; a
// change to an attribute's name or meaning raises Schema.
const (
	Module       = "github.com/langhost/callbacks"
	Schema       = 1
	StartedBody  = "callbacks: call started"
	FinishedBody = "callbacks: call finished"
)

// The attributes of the records. The call's own ones have the names of
// the module's spans (see the root package's trace.go).
const (
	AttrModule     = "callbacks.module"
	AttrSchema     = "callbacks.schema"
	AttrCallID     = "callbacks.call_id"
	AttrOutcome    = "callbacks.outcome" // finished: "ok" or "error"
	AttrDurationMS = "callbacks.duration_ms"
	AttrError      = "callbacks.error"
	AttrKind       = "pulumi.callback.kind"
	AttrName       = "pulumi.callback.name"
	AttrSite       = "pulumi.callback.site"
	AttrToken      = "pulumi.callback.token"
	AttrAttempt    = "pulumi.callback.attempt"
	AttrFailedOpen = "pulumi.callback.failed_open"
	AttrURN        = "pulumi.resource.urn"
	AttrType       = "pulumi.resource.type"
	AttrResName    = "pulumi.resource.name"
	AttrDryRun     = "pulumi.dry_run"
	AttrErrorType  = "error.type"
	AttrCode       = "rpc.response.status_code"
)

// maxError bounds the error message a record carries.
const maxError = 4 << 10

// exportMethod is the OTLP logs service's one method. Its request,
// ExportLogsServiceRequest, is field for field LogsData (repeated
// ResourceLogs resource_logs = 1), so LogsData is sent as it; the answer
// is read as Empty, keeping its fields unread: a partial success is
// counted as sent.
const exportMethod = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"

// Endpoint returns the receiver's address from the environment getenv
// reads, or "" when there is none or SwitchEnv turns the records off
// ("off", "0" or "false", in any case).
func Endpoint(getenv func(string) string) string {
	switch strings.ToLower(strings.TrimSpace(getenv(SwitchEnv))) {
	case "off", "0", "false":
		return ""
	}
	return strings.TrimSpace(getenv(EndpointEnv))
}

// Limits bound an exporter.
type Limits struct {
	Queue         int           // records waiting to be sent; more are dropped
	Batch         int           // records in one send at most
	ExportTimeout time.Duration // one send's deadline
	FlushTimeout  time.Duration // Close's bound on sending what is queued
}

// DefaultLimits are the limits of a server's exporter. The receiver is on
// the same machine, so a send that takes longer than a second is a
// receiver that is stuck or gone.
var DefaultLimits = Limits{Queue: 4096, Batch: 512, ExportTimeout: time.Second, FlushTimeout: 2 * time.Second}

// Call is what the records of one call say about it. Start sets ID.
type Call struct {
	ID           string
	Kind         string // "resource_hook", …; "" for an unknown token
	Name         string // the registration's name: a hook's name
	Site         string // the user's line that registered it
	Token        string
	URN          string
	Type         string
	ResourceName string
	DryRun       bool
	Attempt      int
	TraceID      [16]byte // the call's span, if any
	SpanID       [8]byte
}

// End is how a call ended.
type End struct {
	Code       codes.Code // what the engine got
	Failed     bool       // the call failed, or a hook answered with its error
	ErrorType  string
	Error      string // the error's message
	FailedOpen bool
	Elapsed    time.Duration
}

// Stats counts an exporter's records.
type Stats struct {
	Sent    uint64 // accepted by the receiver
	Dropped uint64 // never sent: the queue was full, or the exporter closed
	Failed  uint64 // sent, and the send failed or passed its deadline
}

// event is a record waiting in the queue.
type event struct {
	call     Call
	end      End
	finished bool
	at       time.Time
}

// Exporter sends records of calls to one receiver. It is safe for
// concurrent use.
type Exporter struct {
	conn   *grpc.ClientConn
	limits Limits
	prefix string // of call ids: this exporter's, random
	seq    atomic.Uint64

	mu     sync.RWMutex // held to read closed and queue; Close holds it to set closed
	closed bool
	queue  chan event

	stop     chan struct{} // closed by Close: send what is queued and end
	done     chan struct{} // closed when the goroutine ends
	base     context.Context
	abort    context.CancelFunc // ends every send at once
	closeOne sync.Once

	sent, dropped, failed atomic.Uint64
	resource              *resourcepb.Resource
}

// New returns an exporter to the receiver at endpoint ("host:port",
// plaintext), bounded by l. It dials lazily: nothing connects until the
// first record is sent.
func New(endpoint string, l Limits) (*Exporter, error) {
	if endpoint == "" {
		return nil, errors.New("calllog: no endpoint")
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	base, abort := context.WithCancel(context.Background())
	e := &Exporter{
		conn: conn, limits: l, prefix: hex.EncodeToString(id[:]) + "-",
		queue: make(chan event, max(l.Queue, 1)), stop: make(chan struct{}), done: make(chan struct{}),
		base: base, abort: abort,
		resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			str("service.name", Module), intAttr("process.pid", int64(os.Getpid())),
		}},
	}
	go e.loop()
	return e, nil
}

// Start records that c's function starts, and gives c its id.
func (e *Exporter) Start(c *Call) {
	c.ID = e.prefix + strconv.FormatUint(e.seq.Add(1), 10)
	e.put(event{call: *c, at: time.Now()})
}

// Finish records how c, started with Start, ended.
func (e *Exporter) Finish(c *Call, end End) {
	e.put(event{call: *c, end: end, finished: true, at: time.Now()})
}

// put queues ev, or drops it if the queue is full or the exporter closed.
func (e *Exporter) put(ev event) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		e.dropped.Add(1)
		return
	}
	select {
	case e.queue <- ev:
	default:
		e.dropped.Add(1)
	}
}

// Stats returns the counts so far.
func (e *Exporter) Stats() Stats {
	return Stats{Sent: e.sent.Load(), Dropped: e.dropped.Load(), Failed: e.failed.Load()}
}

// Close sends what is queued, for at most the FlushTimeout or until ctx
// ends, then closes the connection and ends the goroutine. Records still
// queued then are dropped. Later records are dropped too. It returns once
// the goroutine has ended; it is idempotent.
func (e *Exporter) Close(ctx context.Context) {
	e.closeOne.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		close(e.stop)
		timer := time.NewTimer(e.limits.FlushTimeout)
		defer timer.Stop()
		select {
		case <-e.done:
		case <-timer.C:
		case <-ctx.Done():
		}
		e.abort()
		<-e.done
		_ = e.conn.Close()
	})
	<-e.done
}

// loop sends the queued records in batches until Close, then sends what is
// left, unless Close aborts the sends.
func (e *Exporter) loop() {
	defer close(e.done)
	batch := make([]event, 0, max(e.limits.Batch, 1))
	for {
		select {
		case ev := <-e.queue:
			e.send(e.fill(append(batch[:0], ev)))
		case <-e.stop:
			for {
				batch = e.fill(batch[:0])
				if len(batch) == 0 {
					return
				}
				if e.base.Err() != nil {
					e.dropped.Add(uint64(len(batch)))
					continue
				}
				e.send(batch)
			}
		}
	}
}

// fill adds what is queued to batch, up to the batch size.
func (e *Exporter) fill(batch []event) []event {
	for len(batch) < cap(batch) {
		select {
		case ev := <-e.queue:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

func (e *Exporter) send(batch []event) {
	recs := make([]*logspb.LogRecord, len(batch))
	for i := range batch {
		recs[i] = batch[i].record()
	}
	req := &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{
		Resource: e.resource,
		ScopeLogs: []*logspb.ScopeLogs{{
			Scope:      &commonpb.InstrumentationScope{Name: Module},
			LogRecords: recs,
		}},
	}}}
	ctx, cancel := context.WithTimeout(e.base, e.limits.ExportTimeout)
	defer cancel()
	if err := e.conn.Invoke(ctx, exportMethod, req, &emptypb.Empty{}); err != nil {
		e.failed.Add(uint64(len(batch)))
		return
	}
	e.sent.Add(uint64(len(batch)))
}

// record is ev as an OTLP log record.
func (ev *event) record() *logspb.LogRecord {
	c := &ev.call
	at := uint64(ev.at.UnixNano())
	r := &logspb.LogRecord{
		TimeUnixNano: at, ObservedTimeUnixNano: at,
		SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO, SeverityText: "INFO",
		Body: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: StartedBody}},
	}
	a := make([]*commonpb.KeyValue, 0, 20)
	a = append(a, str(AttrModule, Module), intAttr(AttrSchema, Schema), str(AttrCallID, c.ID))
	kind := c.Kind
	if kind == "" {
		kind = "unknown"
	}
	a = append(a, str(AttrKind, kind))
	a = appendStr(a, AttrName, c.Name)
	a = appendStr(a, AttrSite, c.Site)
	a = appendStr(a, AttrToken, c.Token)
	a = appendStr(a, AttrURN, c.URN)
	a = appendStr(a, AttrType, c.Type)
	a = appendStr(a, AttrResName, c.ResourceName)
	if c.Kind != "" {
		a = append(a, &commonpb.KeyValue{Key: AttrDryRun, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: c.DryRun}}})
	}
	if c.Attempt > 0 {
		a = append(a, intAttr(AttrAttempt, int64(c.Attempt)))
	}
	if ev.finished {
		r.Body.Value = &commonpb.AnyValue_StringValue{StringValue: FinishedBody}
		outcome := "ok"
		if ev.end.Failed {
			outcome = "error"
			r.SeverityNumber, r.SeverityText = logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "WARN"
		}
		a = append(a, str(AttrOutcome, outcome), str(AttrCode, CodeName(ev.end.Code)),
			&commonpb.KeyValue{Key: AttrDurationMS, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{
				DoubleValue: float64(ev.end.Elapsed) / float64(time.Millisecond)}}})
		a = appendStr(a, AttrErrorType, ev.end.ErrorType)
		a = appendStr(a, AttrError, clip(ev.end.Error, maxError))
		if ev.end.FailedOpen {
			a = append(a, &commonpb.KeyValue{Key: AttrFailedOpen, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})
		}
	}
	r.Attributes = a
	if c.TraceID != ([16]byte{}) && c.SpanID != ([8]byte{}) {
		r.TraceId, r.SpanId = append([]byte(nil), c.TraceID[:]...), append([]byte(nil), c.SpanID[:]...)
	}
	return r
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func appendStr(a []*commonpb.KeyValue, k, v string) []*commonpb.KeyValue {
	if v == "" {
		return a
	}
	return append(a, str(k, v))
}

func intAttr(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// CodeName is a gRPC code as OpenTelemetry's conventions spell it:
// "DEADLINE_EXCEEDED".
func CodeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return strings.ToUpper(c.String()) // CANCELED, UNKNOWN, ABORTED, INTERNAL, UNAVAILABLE
}
