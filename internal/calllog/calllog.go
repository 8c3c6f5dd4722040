// Package calllog sends a record of each callback call, as OpenTelemetry
// log records over OTLP/gRPC, to the receiver the Pulumi CLI runs for its
// automatic log and names in PULUMI_LOG_OTLP_ENDPOINT. Each call gives two
// records, one when the user's function starts and one when the call ends,
// paired by a call id. The finished record of a resource transform, an
// invoke transform or a state migration says what the call changed, by
// property path, every secret hidden (changes.go); with payloads asked
// for, the finished record of every call of a known kind holds its request
// and, if it answered, its answer, every secret hidden (payloads.go).
//
// An [Exporter] never holds up a call: records go into a bounded queue, one
// goroutine sends them in batches, each send bounded by a short deadline
// and never retried, and a record that finds the queue full, or whose send
// fails, is dropped and counted. A call only queues its records, with the
// bytes of its payloads when the records need them, within a bound on the
// bytes held; the payloads are decoded and compared on the goroutine that
// sends. [Exporter.Close] sends what is queued,
// bounded in time, and releases the connection and the goroutine.
//
// The package speaks the wire itself (the OTLP protos and gRPC): it sets no
// global OpenTelemetry provider, logger or error handler, and the
// OpenTelemetry log SDK is not linked.
package calllog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/langhost/callbacks/internal/changes"
)

// The environment: where the CLI's receiver listens, and the switch that
// turns the records off, or asks for the payloads in them.
const (
	EndpointEnv = "PULUMI_LOG_OTLP_ENDPOINT"
	SwitchEnv   = "CALLBACKS_PULUMI_LOG"
	PayloadsOn  = "payloads" // SwitchEnv's value that asks for payloads
)

// What marks a record as this module's: its body, and the attributes
// naming the module and the version of the records' shape. A reader finds
// the records by the module attribute and reads them by the schema; a
// change to an attribute's name or meaning raises Schema.
const (
	Module       = "github.com/langhost/callbacks"
	Schema       = 2
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

// The attributes of a finished record that say what the call changed (a
// transform's or a migration's), and that hold its payloads (with
// payloads asked for):
//   - AttrChanges: a JSON array of {"path", "old", "new"}, old or new left
//     out where the value was absent; AttrChangesLeftOut, how many more
//     changes the bounds left out; AttrChangesNote, why there are none,
//     or none recorded;
//   - AttrRequest and AttrAnswer: the request and the answer as JSON
//     text (see PayloadJSON); AttrPayloadNote, why either is not there.
const (
	AttrChanges        = "callbacks.changes"
	AttrChangesLeftOut = "callbacks.changes_left_out"
	AttrChangesNote    = "callbacks.changes_note"
	AttrRequest        = "callbacks.request"
	AttrAnswer         = "callbacks.answer"
	AttrPayloadNote    = "callbacks.payload_note"
)

// maxError bounds the error message a record carries.
const maxError = 4 << 10

// maxExport bounds the bytes of the records in one send: the receiver, a
// gRPC server, takes messages of up to 4 MiB.
const maxExport = 1 << 20

// The notes of a finished record whose changes it does not list.
const (
	NoteEmptyAnswer = "no change: the answer was empty"
	NoteTooLarge    = "changes not recorded: payload too large"
	noteNoDecode    = "changes not recorded: "
)

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

// Payloads reports whether the environment getenv reads asks for the
// payloads in the records (SwitchEnv is "payloads", in any case).
func Payloads(getenv func(string) string) bool {
	return strings.EqualFold(strings.TrimSpace(getenv(SwitchEnv)), PayloadsOn)
}

// Limits bound an exporter.
type Limits struct {
	Queue         int           // records waiting to be sent; more are dropped
	Batch         int           // records in one send at most
	ExportTimeout time.Duration // one send's deadline
	FlushTimeout  time.Duration // Close's bound on sending what is queued
	// Held bounds the bytes of payloads the queued records hold: a call
	// whose payloads would pass it records NoteTooLarge.
	Held int64
	// Changes bound what a record says a call changed.
	Changes ChangeBounds
	// PayloadText bounds the JSON text of a request or an answer in a
	// record; a longer one is left out, and the record says so.
	PayloadText int
}

// DefaultLimits are the limits of a server's exporter. The receiver is on
// the same machine, so a send that takes longer than a second is a
// receiver that is stuck or gone.
var DefaultLimits = Limits{
	Queue: 4096, Batch: 512, ExportTimeout: time.Second, FlushTimeout: 2 * time.Second,
	Held:        16 << 20,
	Changes:     ChangeBounds{Changes: 32, Text: 4 << 10, Value: 200},
	PayloadText: 64 << 10,
}

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

	kept *kept // set by Start, taken by Finish
}

// kept is what a call's records hold of its payloads while queued.
type kept struct {
	request, answer []byte
	size            int64 // the bytes reserved for them
	tooLarge        bool  // they did not fit the bound: none is held
}

// End is how a call ended.
type End struct {
	Code       codes.Code // what the engine got
	Failed     bool       // the call failed, or a hook answered with its error
	ErrorType  string
	Error      string // the error's message
	FailedOpen bool
	Elapsed    time.Duration
	// Answer is what the engine was sent; AnswerFixed says nothing writes
	// to its bytes after the call (a server's answer, handed to gRPC), so
	// that it is kept as it is, not copied.
	Answer      []byte
	AnswerFixed bool
}

// Stats counts an exporter's records.
type Stats struct {
	Sent    uint64 // accepted by the receiver
	Dropped uint64 // never sent: the queue was full, or the exporter closed
	Failed  uint64 // sent, and the send failed or passed its deadline
	Held    int64  // bytes of payloads the records still queued hold
}

// event is a record waiting in the queue.
type event struct {
	call        Call
	end         End
	finished    bool
	answerEmpty bool // the call answered with no bytes
	at          time.Time
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

	payloads bool         // the records hold the calls' payloads
	held     atomic.Int64 // the bytes of payloads the queued records hold
}

// New returns an exporter to the receiver at endpoint ("host:port",
// plaintext), bounded by l; with payloads, its records hold each call's
// request and answer. It dials lazily: nothing connects until the first
// record is sent.
func New(endpoint string, l Limits, payloads bool) (*Exporter, error) {
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
		base: base, abort: abort, payloads: payloads,
		resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
			str("service.name", Module), intAttr("process.pid", int64(os.Getpid())),
		}},
	}
	go e.loop()
	return e, nil
}

// Start records that c's function starts, and gives c its id. request is
// the call's payload: when c's finished record will need it (c is a
// transform or a migration, or the records hold payloads), Start keeps a
// copy for it, the call's encoder being free to answer in the request's
// own bytes, unless the bytes held would pass the bound.
func (e *Exporter) Start(c *Call, request []byte) {
	c.ID = e.prefix + strconv.FormatUint(e.seq.Add(1), 10)
	c.kept = nil
	if changesOf(c.Kind) || e.payloads && c.Kind != "" {
		c.kept = &kept{tooLarge: true}
		if e.reserve(len(request)) {
			c.kept = &kept{request: bytes.Clone(request), size: int64(len(request))}
		}
	}
	ev := event{call: *c, at: time.Now()}
	ev.call.kept = nil
	e.put(ev)
}

// Finish records how c, started with Start, ended.
func (e *Exporter) Finish(c *Call, end End) {
	ev := event{call: *c, end: end, finished: true, answerEmpty: len(end.Answer) == 0, at: time.Now()}
	ev.end.Answer, c.kept = nil, nil
	if k := ev.call.kept; k != nil && !k.tooLarge {
		switch {
		case end.Failed && !e.payloads:
			e.release(k)
			ev.call.kept = nil
		case end.Failed && len(end.Answer) == 0: // no answer: the request alone
		case e.reserve(len(end.Answer)):
			k.size += int64(len(end.Answer))
			k.answer = end.Answer
			if !end.AnswerFixed {
				k.answer = bytes.Clone(end.Answer)
			}
		default:
			e.release(k)
			ev.call.kept = &kept{tooLarge: true}
		}
	}
	e.put(ev)
}

// changesOf reports whether the finished records of a kind say what the
// call changed.
func changesOf(kind string) bool {
	switch kind {
	case "resource_transform", "invoke_transform", "state_migration":
		return true
	}
	return false
}

// reserve takes n bytes of the bound on the bytes held, if they fit.
func (e *Exporter) reserve(n int) bool {
	if e.held.Add(int64(n)) > e.limits.Held {
		e.held.Add(-int64(n))
		return false
	}
	return true
}

// release gives back what a call's records held.
func (e *Exporter) release(k *kept) {
	if k != nil && k.size > 0 {
		e.held.Add(-k.size)
		k.size, k.request, k.answer = 0, nil, nil
	}
}

// put queues ev, or drops it if the queue is full or the exporter closed.
func (e *Exporter) put(ev event) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		e.drop(&ev)
		return
	}
	select {
	case e.queue <- ev:
	default:
		e.drop(&ev)
	}
}

// drop counts ev as dropped and releases what it held.
func (e *Exporter) drop(ev *event) {
	e.dropped.Add(1)
	e.release(ev.call.kept)
}

// Stats returns the counts so far.
func (e *Exporter) Stats() Stats {
	return Stats{Sent: e.sent.Load(), Dropped: e.dropped.Load(), Failed: e.failed.Load(), Held: e.held.Load()}
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
					for i := range batch {
						e.drop(&batch[i])
					}
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

// send makes the batch's records and sends them, in as many sends as keep
// each within maxExport bytes.
func (e *Exporter) send(batch []event) {
	var recs []*logspb.LogRecord
	size := 0
	for i := range batch {
		r := e.record(&batch[i])
		n := proto.Size(r)
		if len(recs) > 0 && size+n > maxExport {
			e.export(recs)
			recs, size = nil, 0
		}
		recs, size = append(recs, r), size+n
	}
	if len(recs) > 0 {
		e.export(recs)
	}
}

func (e *Exporter) export(recs []*logspb.LogRecord) {
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
		e.failed.Add(uint64(len(recs)))
		return
	}
	e.sent.Add(uint64(len(recs)))
}

// record is ev as an OTLP log record. It releases what ev held.
func (e *Exporter) record(ev *event) *logspb.LogRecord {
	defer e.release(ev.call.kept)
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
		a = appendStr(a, AttrError, changes.Clip(ev.end.Error, maxError))
		if ev.end.FailedOpen {
			a = append(a, &commonpb.KeyValue{Key: AttrFailedOpen, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}})
		}
		a = e.appendChanges(a, ev)
		a = e.appendPayloads(a, ev)
	}
	r.Attributes = a
	if c.TraceID != ([16]byte{}) && c.SpanID != ([8]byte{}) {
		r.TraceId, r.SpanId = append([]byte(nil), c.TraceID[:]...), append([]byte(nil), c.SpanID[:]...)
	}
	return r
}

// appendChanges adds what a transform or migration that did not fail
// changed.
func (e *Exporter) appendChanges(a []*commonpb.KeyValue, ev *event) []*commonpb.KeyValue {
	k := ev.call.kept
	if !changesOf(ev.call.Kind) || ev.end.Failed {
		return a
	}
	switch {
	case ev.answerEmpty:
		return append(a, str(AttrChanges, "[]"), str(AttrChangesNote, NoteEmptyAnswer))
	case k == nil || k.tooLarge:
		return append(a, str(AttrChangesNote, NoteTooLarge))
	}
	list, leftOut, err := DiffCall(ev.call.Kind, k.request, k.answer, e.limits.Changes)
	if err != nil {
		return append(a, str(AttrChangesNote, noteNoDecode+err.Error()))
	}
	if list == nil {
		list = []Change{}
	}
	text, err := json.Marshal(list)
	if err != nil {
		return append(a, str(AttrChangesNote, noteNoDecode+err.Error()))
	}
	a = append(a, str(AttrChanges, string(text)))
	if leftOut > 0 {
		a = append(a, intAttr(AttrChangesLeftOut, int64(leftOut)))
	}
	return a
}

// appendPayloads adds the call's request and answer, with payloads asked
// for.
func (e *Exporter) appendPayloads(a []*commonpb.KeyValue, ev *event) []*commonpb.KeyValue {
	k := ev.call.kept
	if !e.payloads || k == nil {
		return a
	}
	if k.tooLarge {
		return append(a, str(AttrPayloadNote, "payloads not recorded: too large"))
	}
	var notes []string
	add := func(attr, what string, request bool, b []byte) {
		text, err := PayloadJSON(ev.call.Kind, request, b)
		switch {
		case err != nil:
			notes = append(notes, what+" not recorded: "+err.Error())
		case len(text) > e.limits.PayloadText:
			notes = append(notes, fmt.Sprintf("%s not recorded: %d bytes of JSON, more than the %d a record holds", what, len(text), e.limits.PayloadText))
		default:
			a = append(a, str(attr, text))
		}
	}
	add(AttrRequest, "request", true, k.request)
	if !ev.end.Failed || len(k.answer) > 0 { // a hook that refused answered
		add(AttrAnswer, "answer", false, k.answer)
	}
	if len(notes) > 0 {
		a = append(a, str(AttrPayloadNote, strings.Join(notes, "; ")))
	}
	return a
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
