package callbacks

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/langhost/callbacks/internal/calllog"
	"go.opentelemetry.io/otel/trace"
)

// The records of calls in Pulumi's automatic log (internal/calllog does the
// sending). A server whose process was given PULUMI_LOG_OTLP_ENDPOINT, as
// the Pulumi CLI gives every plugin and program it starts, sends a record
// when a call's function starts and one when the call ends; see the package
// documentation, "Pulumi's log".

// pulumiLogLimits bound a server's exporter (tests shorten them).
var pulumiLogLimits = calllog.DefaultLimits

// WithoutPulumiLog makes a server send no record of its calls to Pulumi's
// automatic log, whatever the environment says. Default: a server records
// each call there when its process has PULUMI_LOG_OTLP_ENDPOINT (the Pulumi
// CLI sets it for the programs it starts) and CALLBACKS_PULUMI_LOG is not
// "off"; see the package documentation, "Pulumi's log".
func WithoutPulumiLog() ServerOption {
	return serverOption(func(c *config) error { c.noPulumiLog = true; return nil })
}

// startPulumiLog gives the server its exporter of records, if the
// environment names a receiver and nothing turns the records off. The
// exporter connects lazily, on its first record. A registry that another
// server already records for keeps that server's exporter.
func (s *Server) startPulumiLog() {
	if s.cfg.noPulumiLog {
		return
	}
	endpoint := calllog.Endpoint(os.Getenv)
	if endpoint == "" {
		return
	}
	exp, err := calllog.New(endpoint, pulumiLogLimits, calllog.Payloads(os.Getenv))
	if err != nil {
		s.reg.cfg.logger.Debug("callbacks: not recording calls in Pulumi's log",
			slog.String("endpoint", endpoint), slog.String("error", err.Error()))
		return
	}
	if !s.reg.calls.CompareAndSwap(nil, exp) {
		exp.Close(context.Background())
		return
	}
	s.calls = exp
}

// closePulumiLog sends the records still queued, bounded in time (see
// calllog.DefaultLimits), and releases the exporter's connection and
// goroutine.
func (s *Server) closePulumiLog() {
	if s.calls == nil {
		return
	}
	s.reg.calls.CompareAndSwap(s.calls, nil)
	s.calls.Close(context.Background())
	if st := s.calls.Stats(); st.Dropped+st.Failed > 0 {
		s.reg.cfg.logger.Debug("callbacks: some records of calls did not reach Pulumi's log",
			slog.Uint64("sent", st.Sent), slog.Uint64("dropped", st.Dropped), slog.Uint64("failed", st.Failed))
	}
}

// logCall is what the records of a call say of it.
func logCall(info *CallInfo, site string, span trace.Span) *calllog.Call {
	c := &calllog.Call{
		Name: info.Name, Site: site, Token: info.Token, URN: info.URN, Type: info.Type,
		ResourceName: info.ResourceName, DryRun: info.DryRun, Attempt: info.Attempt,
	}
	if info.Kind.valid() {
		c.Kind = kindAttrs[info.Kind].Value.AsString()
	}
	if sc := span.SpanContext(); sc.IsValid() {
		c.TraceID, c.SpanID = sc.TraceID(), sc.SpanID()
	}
	return c
}

// logEnd is how a call ended, as its record says: ce is the error the
// engine got, failedOpen the one a fail-open registration forgave; cs, if
// any, holds the error a hook answered with.
func logEnd(cs *callState, ce, failedOpen *Error, elapsed time.Duration) calllog.End {
	end := calllog.End{Elapsed: elapsed}
	switch {
	case ce != nil:
		end.Code, end.Failed, end.ErrorType, end.Error = ce.Code, true, errorType(ce), ce.Msg
	case failedOpen != nil:
		end.Failed, end.FailedOpen, end.ErrorType, end.Error = true, true, errorType(failedOpen), failedOpen.Msg
	case cs != nil:
		cs.mu.Lock()
		failure := cs.failure
		cs.mu.Unlock()
		if failure != "" {
			end.Failed, end.ErrorType, end.Error = true, "response_error", failure
		}
	}
	return end
}
