package callbacks

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// DefaultMaxMessageSize is the default receive and send limit, in bytes: the
// 400 MiB the Pulumi engine allows on its side.
const DefaultMaxMessageSize = 400 << 20

// ErrInvalidOption is wrapped by the error that [NewRegistry], [NewServer],
// [Listen] and registrations return for an option with an invalid value,
// such as Timeout(0) or a relative unix socket path.
var ErrInvalidOption = errors.New("callbacks: invalid option")

// ServerOption configures a [Server] ([NewServer], [Listen]). Every
// [RegistryOption] is also a ServerOption and configures the registry the
// server creates.
type ServerOption interface {
	applyServer(*config) error
}

// RegistryOption configures a [Registry] ([NewRegistry]) or the registry of
// a [Server]. Options that concern only servers, such as [Address], are not
// RegistryOptions, so giving one to NewRegistry does not compile.
type RegistryOption interface {
	ServerOption
	configuresRegistry()
}

type serverOption func(*config) error

func (f serverOption) applyServer(c *config) error { return f(c) }

type registryOption func(*config) error

func (f registryOption) applyServer(c *config) error {
	c.registryOpts++
	return f(c)
}
func (registryOption) configuresRegistry() {}

type config struct {
	logger      *slog.Logger
	observer    Observer
	reporter    Reporter
	engineAddr  string
	kindTimeout [kindCount]time.Duration
	tp          trace.TracerProvider

	grpcOptions  []grpc.ServerOption
	maxMsgSize   int
	listener     net.Listener
	listenerSet  bool
	address      string
	target       string
	registry     *Registry
	registryOpts int  // registry options given to a server
	noPulumiLog  bool // WithoutPulumiLog
}

func defaultConfig() config { return config{maxMsgSize: DefaultMaxMessageSize} }

func (c *config) finish() {
	if c.logger == nil { // WithLogger says why this default
		c.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...)
}

// WithLogger sets the logger for server events, panics (with their stacks,
// at debug level) and undeliverable reports. Default: a text handler on
// standard error at warning level, so that failures and undeliverable
// reports are seen (the Pulumi CLI shows a program's standard error) while
// routine events and the stacks of panics stay out of the user's terminal.
// A nil logger is invalid; to discard everything use
// slog.New(slog.DiscardHandler).
func WithLogger(l *slog.Logger) RegistryOption {
	return registryOption(func(c *config) error {
		if l == nil {
			return invalid("WithLogger(nil)")
		}
		c.logger = l
		return nil
	})
}

// WithObserver sets the [Observer] told about every invocation. Default: none.
func WithObserver(o Observer) RegistryOption {
	return registryOption(func(c *config) error {
		if o == nil {
			return invalid("WithObserver(nil)")
		}
		c.observer = o
		return nil
	})
}

// WithReporter sets where [Warn], [Info] and [Report] messages go, overriding
// [EngineAddress]. Default: the engine if an address is set, else the logger.
func WithReporter(r Reporter) RegistryOption {
	return registryOption(func(c *config) error {
		if r == nil {
			return invalid("WithReporter(nil)")
		}
		c.reporter = r
		return nil
	})
}

// WithTracerProvider sets the OpenTelemetry tracer provider of the spans
// of calls (see the package documentation, "Tracing"). Default: the global
// provider, if one was set (with otel.SetTracerProvider, as the Go SDK
// does when the engine traces the deployment) before the server is made;
// without one, nothing is traced and the server installs no
// instrumentation. A nil provider is invalid.
func WithTracerProvider(tp trace.TracerProvider) RegistryOption {
	return registryOption(func(c *config) error {
		if tp == nil {
			return invalid("WithTracerProvider(nil)")
		}
		c.tp = tp
		return nil
	})
}

// KindTimeout sets a default deadline for every callback of kind k, for
// registrations that set none with [Timeout]. Without it there is no
// deadline beyond the engine's own. The duration must be positive and the
// kind one of the Kind constants.
func KindTimeout(k Kind, d time.Duration) RegistryOption {
	return registryOption(func(c *config) error {
		if !k.valid() {
			return invalid("KindTimeout: %v is not a callback kind", k)
		}
		if d <= 0 {
			return invalid("KindTimeout(%v, %v): the duration must be positive", k, d)
		}
		c.kindTimeout[k] = d
		return nil
	})
}

// EngineAddress is the address of the engine's Engine service (what programs
// receive in PULUMI_ENGINE). Reports from callbacks are sent there with
// Engine.Log, attached to the resource's URN, each bounded by 5 seconds (a
// report that does not get through in time is logged instead). Default:
// none. The connection is closed with the server.
// An empty address means none, so os.Getenv("PULUMI_ENGINE") can be passed
// as it is.
func EngineAddress(addr string) ServerOption {
	return serverOption(func(c *config) error { c.engineAddr = addr; return nil })
}

// GRPCServerOptions adds options to the underlying grpc.Server, such as
// interceptors or a stats handler for OpenTelemetry. They are applied after
// this package's own, so they may override the message size limits.
func GRPCServerOptions(opts ...grpc.ServerOption) ServerOption {
	return serverOption(func(c *config) error {
		c.grpcOptions = append(c.grpcOptions, opts...)
		return nil
	})
}

// MaxMessageSize sets the receive and send limit in bytes, which must be
// positive. Default: [DefaultMaxMessageSize] (400 MiB), matching the engine.
func MaxMessageSize(n int) ServerOption {
	return serverOption(func(c *config) error {
		if n <= 0 {
			return invalid("MaxMessageSize(%d): the size must be positive", n)
		}
		c.maxMsgSize = n
		return nil
	})
}

// WithListener makes [Listen] serve on l instead of opening its own listener,
// for unix sockets (see [ListenUnix]) or in-memory bufconn listeners. Given
// to [NewServer], it binds the server to l at once, so that registrations
// work before [Server.Serve] is called with l.
func WithListener(l net.Listener) ServerOption {
	return serverOption(func(c *config) error {
		if l == nil {
			return invalid("WithListener(nil)")
		}
		c.listener, c.listenerSet = l, true
		return nil
	})
}

// Address makes [Listen] listen on addr: "host:port" for TCP or
// "unix:///absolute/path" for a unix socket (created owner-only, see
// [ListenUnix]). Default: "127.0.0.1:0", a free loopback port. A unix path
// must be absolute: the engine runs in another directory.
func Address(addr string) ServerOption {
	return serverOption(func(c *config) error {
		if err := checkAddress(addr); err != nil {
			return err
		}
		c.address = addr
		return nil
	})
}

func checkAddress(addr string) error {
	if addr == "" {
		return invalid("Address(\"\")")
	}
	if path, ok := strings.CutPrefix(addr, "unix://"); ok && !filepath.IsAbs(path) {
		return invalid("%q: a unix socket path must be absolute (unix:///path), since the engine resolves it from another directory", addr)
	}
	return nil
}

// Target sets the address handed to the engine in each Callback. Default:
// derived from the listener ("127.0.0.1:PORT" or "unix:///path"). Needed
// for listeners whose address cannot be dialled, like bufconn; given to
// [NewServer], it lets registrations work before [Server.Serve] is called.
func Target(t string) ServerOption {
	return serverOption(func(c *config) error {
		if err := checkAddress(t); err != nil {
			return fmt.Errorf("target: %w", err)
		}
		c.target = t
		return nil
	})
}

// WithRegistry makes a server serve an existing registry instead of a new
// one. The registry keeps its own options, so registry options given with
// it are an error.
func WithRegistry(r *Registry) ServerOption {
	return serverOption(func(c *config) error {
		if r == nil {
			return invalid("WithRegistry(nil)")
		}
		c.registry = r
		return nil
	})
}

// newConfig reads the options of a server or of a registry.
func newConfig[O ServerOption](opts []O) (config, error) {
	c := defaultConfig()
	for _, o := range opts {
		if any(o) == nil {
			continue
		}
		if err := o.applyServer(&c); err != nil {
			return c, err
		}
	}
	if c.registry != nil && c.registryOpts > 0 {
		return c, invalid("WithRegistry is given with registry options (logger, observer, reporter, deadlines); give those to NewRegistry instead")
	}
	c.finish()
	return c, nil
}

// RegisterOption configures one registration of a callback:
// [Registry.Register], [Server.Register] and the Register, Callback and
// Attach functions of the typed packages take it (package hooks through
// hooks.WithRegisterOptions, except hooks.Attach, which takes them as
// transforms.Attach does). [NewRunner] applies them to functions run inside
// another callback.
type RegisterOption interface {
	applyReg(*entry) error
}

type regOption func(*entry) error

func (f regOption) applyReg(e *entry) error { return f(e) }

// Name gives a registration a name for errors, logs, [CallInfo] and
// observers. Default: none (hooks are named after the hook).
func Name(name string) RegisterOption {
	return regOption(func(e *entry) error { e.name = name; return nil })
}

// Timeout puts a deadline on every call of this registration, overriding the
// kind's default from [KindTimeout]. The function's context carries it; a call
// that overruns ends with DeadlineExceeded and an error naming the kind, the
// registration and the resource, even if the function ignores its context.
// The duration must be positive.
func Timeout(d time.Duration) RegisterOption {
	return regOption(func(e *entry) error {
		if d <= 0 {
			return invalid("Timeout(%v): the duration must be positive", d)
		}
		e.timeout = d
		return nil
	})
}

// FailOpen makes calls that give no answer (a panic or a deadline of this
// package's) succeed with an empty response, which the engine reads as "no
// change" for transforms and migrations, "success" for resource hooks and "do
// not retry" for error hooks, and reports the failure as a warning. An error
// the function returns on purpose still fails the call, and so does the
// engine's own cancellation. Default: fail closed.
func FailOpen() RegisterOption {
	return regOption(func(e *entry) error { e.failOpen = true; return nil })
}

// AcceptsByteStrings sets Callback.accepts_byte_string on the callback a
// server hands out, telling the engine it may send binary values as
// byte-string envelopes rather than failing on non-UTF-8 strings. Default:
// true.
func AcceptsByteStrings(accept bool) RegisterOption {
	return regOption(func(e *entry) error { e.rejectBytes = !accept; return nil })
}
