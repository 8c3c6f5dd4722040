package callbacks

import (
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
)

// DefaultMaxMessageSize is the default receive and send limit, in bytes: the
// 400 MiB the Pulumi engine allows on its side.
const DefaultMaxMessageSize = 400 << 20

// Option configures a [Registry] or a [Server]. The registry options (logger,
// observer, reporter, deadlines) apply to both; the listener and gRPC options
// only to servers and are ignored by [NewRegistry].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	logger      *slog.Logger
	observer    Observer
	reporter    Reporter
	engineAddr  string
	kindTimeout [kindCount]time.Duration

	grpcOptions []grpc.ServerOption
	maxMsgSize  int
	listener    net.Listener
	address     string
	target      string
	registry    *Registry
}

func newConfig(opts []Option) config {
	c := config{maxMsgSize: DefaultMaxMessageSize}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// WithLogger sets the logger for server events, panics (the message at error
// level, the stack only at debug level) and undeliverable reports. Default: a
// logger that discards everything.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// WithObserver sets the [Observer] told about every invocation. Default: none.
func WithObserver(o Observer) Option { return optionFunc(func(c *config) { c.observer = o }) }

// WithReporter sets where [Warn], [Info] and [Report] messages go, overriding
// [EngineAddress]. Default: the engine if an address is set, else the logger.
func WithReporter(r Reporter) Option { return optionFunc(func(c *config) { c.reporter = r }) }

// EngineAddress is the address of the engine's Engine service (what programs
// receive in PULUMI_ENGINE). Reports from callbacks are sent there with
// Engine.Log, attached to the resource's URN. Default: none. Only servers
// dial it; the connection is closed with the server.
func EngineAddress(addr string) Option { return optionFunc(func(c *config) { c.engineAddr = addr }) }

// KindTimeout sets a default deadline for every callback of kind k, for
// registrations that set none with [Timeout]. Zero (the default) means no
// deadline beyond the engine's own.
func KindTimeout(k Kind, d time.Duration) Option {
	return optionFunc(func(c *config) {
		if k.valid() {
			c.kindTimeout[k] = d
		}
	})
}

// GRPCServerOptions adds options to the underlying grpc.Server, such as
// interceptors or a stats handler for OpenTelemetry. They are applied after
// this package's own, so they may override the message size limits.
func GRPCServerOptions(opts ...grpc.ServerOption) Option {
	return optionFunc(func(c *config) { c.grpcOptions = append(c.grpcOptions, opts...) })
}

// MaxMessageSize sets the receive and send limit in bytes. Default:
// [DefaultMaxMessageSize] (400 MiB), matching the engine.
func MaxMessageSize(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxMsgSize = n
		}
	})
}

// WithListener makes [Listen] serve on l instead of opening its own listener,
// for unix sockets (see [ListenUnix]) or in-memory bufconn listeners.
func WithListener(l net.Listener) Option { return optionFunc(func(c *config) { c.listener = l }) }

// Address makes [Listen] listen on addr: "host:port" for TCP or
// "unix:///absolute/path" for a unix socket (created owner-only, see
// [ListenUnix]). Default: "127.0.0.1:0", a free loopback port.
func Address(addr string) Option { return optionFunc(func(c *config) { c.address = addr }) }

// Target overrides the address handed to the engine in each Callback.
// Default: derived from the listener ("127.0.0.1:PORT" or "unix:///path").
// Needed only for listeners whose address cannot be dialled, like bufconn.
func Target(t string) Option { return optionFunc(func(c *config) { c.target = t }) }

// WithRegistry makes a server serve an existing registry instead of a new one.
// The registry keeps its own options; the server's registry options are
// ignored.
func WithRegistry(r *Registry) Option { return optionFunc(func(c *config) { c.registry = r }) }

// RegisterOption configures one registration.
type RegisterOption interface{ applyReg(*entry) }

type regOptionFunc func(*entry)

func (f regOptionFunc) applyReg(e *entry) { f(e) }

// Name gives a registration a name for errors, logs, [CallInfo] and
// observers. Default: none.
func Name(name string) RegisterOption { return regOptionFunc(func(e *entry) { e.name = name }) }

// Timeout puts a deadline on every call of this registration, overriding the
// kind's default from [KindTimeout]. The function's context carries it; a call
// that overruns ends with DeadlineExceeded and an error naming the kind, the
// registration and the resource, even if the function ignores its context.
func Timeout(d time.Duration) RegisterOption {
	return regOptionFunc(func(e *entry) {
		if d > 0 {
			e.timeout = d
		}
	})
}

// FailOpen makes calls that give no answer (a panic or a deadline of this
// package's) succeed with an empty response, which the engine reads as "no
// change" for transforms and migrations, "success" for resource hooks and "do
// not retry" for error hooks, and reports the failure as a warning. An error
// the function returns on purpose still fails the call, and so does the
// engine's own cancellation. Default: fail closed.
func FailOpen() RegisterOption { return regOptionFunc(func(e *entry) { e.failOpen = true }) }

// AcceptsByteStrings sets Callback.accepts_byte_string on the callback a
// server hands out, telling the engine it may send binary values as
// byte-string envelopes rather than failing on non-UTF-8 strings. Default:
// true.
func AcceptsByteStrings(accept bool) RegisterOption {
	return regOptionFunc(func(e *entry) { e.rejectBytes = !accept })
}
