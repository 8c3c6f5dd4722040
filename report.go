package callbacks

import (
	"context"
	"log/slog"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Severity is the level of a message a callback reports to the user.
type Severity int

// Severities, matching the engine's log severities.
const (
	SeverityDebug Severity = iota + 1
	SeverityInfo
	SeverityWarning
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityDebug:
		return "debug"
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return "unknown"
}

// Reporter delivers messages that callbacks report with [Warn], [Info] and
// [Report] to the user. urn attaches the message to a resource; it may be
// empty. A Reporter must be safe for concurrent use.
type Reporter interface {
	Report(ctx context.Context, sev Severity, urn, msg string) error
}

// Warn reports a warning about the current call's resource without failing
// the call. With an engine address (see [EngineAddress]) it shows under that
// resource in `pulumi up`; otherwise it goes to the server's logger.
func Warn(ctx context.Context, msg string) { Report(ctx, SeverityWarning, msg) }

// Info reports an informational message; see [Warn].
func Info(ctx context.Context, msg string) { Report(ctx, SeverityInfo, msg) }

// Report reports a message at sev about the current call's resource. Outside
// a callback's context it logs to slog.Default(). A message that cannot be
// delivered is logged instead, never lost silently.
func Report(ctx context.Context, sev Severity, msg string) {
	cs := stateFrom(ctx)
	if cs == nil {
		slog.Default().Log(ctx, sev.level(), msg)
		return
	}
	cs.reg.report(ctx, sev, cs.snapshot().URN, msg)
}

// ReportFor reports a message at sev about the resource urn, for callbacks
// that know their resource better than their request tells this package: a
// [Raw] callback, whose payload the package does not read. Outside a
// callback's context it logs to slog.Default().
func ReportFor(ctx context.Context, sev Severity, urn, msg string) {
	cs := stateFrom(ctx)
	if cs == nil {
		slog.Default().Log(ctx, sev.level(), msg, slog.String("urn", urn))
		return
	}
	cs.reg.report(ctx, sev, urn, msg)
}

func (s Severity) level() slog.Level {
	switch s {
	case SeverityDebug:
		return slog.LevelDebug
	case SeverityWarning:
		return slog.LevelWarn
	case SeverityError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// loggerReporter writes reports to a logger: the default when no engine
// address is known.
type loggerReporter struct{ logger *slog.Logger }

func (l loggerReporter) Report(ctx context.Context, sev Severity, urn, msg string) error {
	if urn != "" {
		l.logger.Log(ctx, sev.level(), msg, slog.String("urn", urn))
	} else {
		l.logger.Log(ctx, sev.level(), msg)
	}
	return nil
}

// engineReporter sends reports to the engine's Engine.Log service, the way
// `pulumi up` shows diagnostics under a resource.
type engineReporter struct {
	conn    *grpc.ClientConn
	client  pulumirpc.EngineClient
	timeout time.Duration
}

func dialEngine(addr string, opts ...grpc.DialOption) (*engineReporter, error) {
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		return nil, err
	}
	return &engineReporter{conn: conn, client: pulumirpc.NewEngineClient(conn), timeout: reportTimeout}, nil
}

// reportTimeout bounds each report sent to the engine's Engine.Log, so that a
// stalled engine log cannot hold up a callback's answer (a fail-open call
// reports before it answers) by more than this. A report that does not get
// through in time is written to the logger instead.
const reportTimeout = 5 * time.Second

func (e *engineReporter) Report(ctx context.Context, sev Severity, urn, msg string) error {
	// The call's own context may already be cancelled (a fail-open deadline
	// reports after it fired); the message must still go out, within bounds.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.timeout)
	defer cancel()
	_, err := e.client.Log(ctx, &pulumirpc.LogRequest{
		Severity: sev.engine(), Message: msg, Urn: urn,
	})
	return err
}

func (s Severity) engine() pulumirpc.LogSeverity {
	switch s {
	case SeverityDebug:
		return pulumirpc.LogSeverity_DEBUG
	case SeverityWarning:
		return pulumirpc.LogSeverity_WARNING
	case SeverityError:
		return pulumirpc.LogSeverity_ERROR
	}
	return pulumirpc.LogSeverity_INFO
}
