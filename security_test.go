package callbacks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/langhost/callbacks"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// The default listener accepts connections from this machine only: its
// target is 127.0.0.1, and the port cannot be reached through any other
// address of the machine.
func TestSecurityDefaultListenerIsLoopbackOnly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts []callbacks.ServerOption
	}{
		{"no options", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, err := callbacks.Listen(tc.opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })

			host, port, err := net.SplitHostPort(srv.Target())
			require.NoError(t, err, "target %q", srv.Target())
			assert.Equal(t, "127.0.0.1", host)
			assert.NotEqual(t, "0", port)
			cb := mustRegister(t, srv, callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil }))
			assert.Equal(t, srv.Target(), cb.GetTarget(), "the target handed to the engine")

			// Every other address of this machine must refuse the port.
			others := []string{"::1"}
			addrs, err := net.InterfaceAddrs()
			require.NoError(t, err)
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
					others = append(others, ipn.IP.String())
				}
			}
			guard := testCtx(t)
			for _, ip := range others {
				// A refused connection fails at once; a dropped one fails at
				// the dialer's timeout. Either way the port is unreachable.
				d := net.Dialer{Timeout: 5 * time.Second}
				conn, err := d.DialContext(guard, "tcp", net.JoinHostPort(ip, port))
				if err == nil {
					_ = conn.Close()
					t.Errorf("connected to the callback port through %s", ip)
				}
			}
			t.Logf("port %s refused on %v", port, others)
		})
	}
}

// Tokens are random version 4 UUIDs: well-formed, distinct, not counting
// up, and with every random bit actually varying.
func TestSecurityTokensAreRandomV4UUIDs(t *testing.T) {
	t.Parallel()
	const n = 1000
	fn := callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil })
	cases := []struct {
		name     string
		register func(t *testing.T) func() string
	}{
		{"registry", func(t *testing.T) func() string {
			reg := newTestRegistry(t)
			return func() string {
				token, err := reg.Register(fn, callbacks.Name("same-name"))
				require.NoError(t, err)
				return token
			}
		}},
		{"server", func(t *testing.T) func() string {
			env := serve(t)
			return func() string { return mustRegister(t, env.srv, fn, callbacks.Name("same-name")).GetToken() }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			register := tc.register(t)
			seen := make(map[string]bool, n)
			values := make([]*big.Int, 0, n)
			var ones [128]int
			for range n {
				token := register()
				id, err := uuid.Parse(token)
				require.NoError(t, err, "token %q", token)
				require.Equal(t, uuid.Version(4), id.Version(), "token %q", token)
				require.Equal(t, uuid.RFC4122, id.Variant(), "token %q", token)
				require.Equal(t, id.String(), token, "token is not in canonical form")
				require.False(t, seen[token], "token %q handed out twice", token)
				seen[token] = true
				values = append(values, new(big.Int).SetBytes(id[:]))
				for bit := range 128 {
					if id[bit/8]&(0x80>>(bit%8)) != 0 {
						ones[bit]++
					}
				}
			}

			// Not a counter: consecutive tokens are far apart. Two random
			// 122-bit values fall within 2^64 of each other with
			// probability about 2^-57.
			near := new(big.Int).Lsh(big.NewInt(1), 64)
			for i := 1; i < n; i++ {
				d := new(big.Int).Sub(values[i], values[i-1])
				if d.Abs(d).Cmp(near) < 0 {
					t.Fatalf("tokens %d and %d differ by only %v", i-1, i, d)
				}
			}
			// Random, not derived: each of the 122 random bits is set in
			// roughly half the tokens. The bounds are 9.5 standard
			// deviations wide; only a fixed or heavily biased bit fails.
			for bit := range 128 {
				if bit/4 == 12 || bit == 64 || bit == 65 { // version nibble and variant bits
					continue
				}
				if ones[bit] < 350 || ones[bit] > 650 {
					t.Errorf("bit %d is set in %d of %d tokens", bit, ones[bit], n)
				}
			}
		})
	}
}

// A token that is not registered reaches no function: never registered,
// unregistered, unregistered and then followed by new registrations, or
// another server's.
func TestSecurityUnregisteredTokenNeverReachesAFunction(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// stale returns the token to try after the setup it does; fresh
		// registrations it makes go through register.
		stale func(t *testing.T, env *harness, register func() string) string
	}{
		{"never registered", func(*testing.T, *harness, func() string) string {
			return uuid.NewString()
		}},
		{"unregistered", func(t *testing.T, env *harness, register func() string) string {
			token := register()
			require.True(t, env.srv.Registry().Unregister(token))
			return token
		}},
		{"unregistered, then the same function registered again", func(t *testing.T, env *harness, register func() string) string {
			token := register()
			require.True(t, env.srv.Registry().Unregister(token))
			require.NotEqual(t, token, register(), "a token was reused")
			return token
		}},
		{"unregistered, then 1,000 more registrations", func(t *testing.T, env *harness, register func() string) string {
			token := register()
			require.True(t, env.srv.Registry().Unregister(token))
			for range 1000 {
				require.NotEqual(t, token, register(), "a token was reused")
			}
			return token
		}},
		{"another server's token", func(t *testing.T, _ *harness, _ func() string) string {
			other := serve(t)
			return mustRegister(t, other.srv, callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
				return nil, nil
			})).GetToken()
		}},
		{"a live token with a trailing newline", func(_ *testing.T, _ *harness, register func() string) string {
			return register() + "\n"
		}},
		{"a live token in upper case", func(_ *testing.T, _ *harness, register func() string) string {
			return strings.ToUpper(register())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := serve(t)
			var calls atomic.Int64
			fn := callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
				calls.Add(1)
				return nil, nil
			})
			register := func() string { return mustRegister(t, env.srv, fn).GetToken() }
			token := tc.stale(t, env, register)

			_, err := env.invoke(testCtx(t), token, []byte("payload"))
			wantStatus(t, err, codes.NotFound, "unknown callback token")
			assert.Zero(t, calls.Load(), "a function ran for a token that is not registered")
		})
	}
}

// A unix socket listener is owner-only (0600), works end to end, and is
// removed when the server stops. ListenUnix replaces a stale socket but
// never a file or a symlink.
func TestSecurityUnixSocket(t *testing.T) {
	t.Parallel()
	relSocketDir := func(t *testing.T) string {
		// Short: socket paths are limited to about 100 bytes.
		dir, err := os.MkdirTemp("", "cbsock")
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	serveCases := []struct {
		name   string
		listen func(t *testing.T, path string) (*callbacks.Server, error)
	}{
		{"ListenUnix and WithListener", func(_ *testing.T, path string) (*callbacks.Server, error) {
			lis, err := callbacks.ListenUnix(path)
			if err != nil {
				return nil, err
			}
			return callbacks.Listen(callbacks.WithListener(lis))
		}},
		{"Address unix://", func(_ *testing.T, path string) (*callbacks.Server, error) {
			return callbacks.Listen(callbacks.Address("unix://" + path))
		}},
		{"Address unix:// over a stale socket", func(t *testing.T, path string) (*callbacks.Server, error) {
			stale, err := net.Listen("unix", path)
			require.NoError(t, err)
			stale.(*net.UnixListener).SetUnlinkOnClose(false)
			require.NoError(t, stale.Close())
			fi, err := os.Lstat(path)
			require.NoError(t, err)
			require.NotZero(t, fi.Mode()&os.ModeSocket, "the stale socket file stays")
			return callbacks.Listen(callbacks.Address("unix://" + path))
		}},
	}
	for _, tc := range serveCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(relSocketDir(t), "cb.sock")
			srv, err := tc.listen(t, path)
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })

			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.NotZero(t, fi.Mode()&os.ModeSocket, "not a socket: %v", fi.Mode())
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket permissions")
			assert.Equal(t, "unix://"+path, srv.Target())

			cb := mustRegister(t, srv, callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) {
				return append([]byte("echo:"), b...), nil
			}))
			assert.Equal(t, "unix://"+path, cb.GetTarget())
			conn := dialLikeEngine(t, cb.GetTarget())
			res, err := pulumirpc.NewCallbacksClient(conn).Invoke(testCtx(t),
				&pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: []byte("hi")})
			require.NoError(t, err)
			assert.Equal(t, "echo:hi", string(res.GetResponse()))

			require.NoError(t, conn.Close())
			require.NoError(t, srv.Close())
			_, err = os.Lstat(path)
			assert.True(t, os.IsNotExist(err), "the socket file outlived the server: %v", err)
		})
	}

	refuseCases := []struct {
		name    string
		prepare func(t *testing.T, path string) (check func(t *testing.T))
	}{
		{"a regular file", func(t *testing.T, path string) func(*testing.T) {
			require.NoError(t, os.WriteFile(path, []byte("precious"), 0o644))
			return func(t *testing.T) {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "precious", string(b))
			}
		}},
		{"a symlink to a file", func(t *testing.T, path string) func(*testing.T) {
			target := path + ".target"
			require.NoError(t, os.WriteFile(target, []byte("precious"), 0o644))
			require.NoError(t, os.Symlink(target, path))
			return func(t *testing.T) {
				fi, err := os.Lstat(path)
				require.NoError(t, err)
				assert.NotZero(t, fi.Mode()&os.ModeSymlink, "the symlink was replaced")
				b, err := os.ReadFile(target)
				require.NoError(t, err)
				assert.Equal(t, "precious", string(b))
			}
		}},
		{"a symlink to another socket", func(t *testing.T, path string) func(*testing.T) {
			target := path + ".target"
			other, err := net.Listen("unix", target)
			require.NoError(t, err)
			t.Cleanup(func() { _ = other.Close() })
			require.NoError(t, os.Symlink(target, path))
			return func(t *testing.T) {
				fi, err := os.Lstat(target)
				require.NoError(t, err)
				assert.NotZero(t, fi.Mode()&os.ModeSocket, "the other socket was removed")
			}
		}},
	}
	for _, tc := range refuseCases {
		t.Run("refuses to replace "+tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(relSocketDir(t), "cb.sock")
			check := tc.prepare(t, path)
			lis, err := callbacks.ListenUnix(path)
			if err == nil {
				_ = lis.Close()
				t.Fatal("ListenUnix took over an existing path")
			}
			check(t)
		})
	}
}

// relLogBuffer collects log output from any goroutine.
type relLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *relLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the JSON log records written so far.
func (b *relLogBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	data := append([]byte(nil), b.buf.Bytes()...)
	b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "log line %q", sc.Text())
		out = append(out, rec)
	}
	require.NoError(t, sc.Err())
	return out
}

// Secrets in requests and panic values stay out of everything above debug
// level and out of the error the engine receives (the engine prints it to
// the user and may store it). Debug records may hold them: that is where
// a panic's detail goes, for the program's author.
func TestSecuritySecretsStayOutOfLogsAndWire(t *testing.T) {
	t.Parallel()
	secret := "hunter2-" + uuid.NewString()
	// How the engine sends a secret input to a transform: an output value
	// with secret set.
	props := &structpb.Struct{Fields: map[string]*structpb.Value{
		"password": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			sig.Key:  structpb.NewStringValue(sig.OutputValue),
			"secret": structpb.NewBoolValue(true),
			"value":  structpb.NewStringValue(secret),
		}}),
	}}
	request := &pulumirpc.TransformRequest{Type: "aws:rds/instance:Instance", Name: "db", Properties: props}

	panicWithSecret := callbacks.ResourceTransform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		// A panic's value is the author's message and reaches the user, like
		// a returned error's; what the request holds must not.
		pw := req.GetProperties().GetFields()["password"].GetStructValue().GetFields()["value"].GetStringValue()
		panic(fmt.Sprintf("password is too short (%d characters)", len(pw)))
	})
	cases := []struct {
		name     string
		fn       func(release <-chan struct{}) callbacks.Func
		regOpts  []callbacks.RegisterOption
		payload  func(t *testing.T) []byte
		wantCode codes.Code
		// wantDebug: the secret must show up in a debug record, proving
		// that the logs were captured and that the detail is kept.
		wantDebug bool
	}{
		{
			name:     "panic with the secret in its value",
			fn:       func(<-chan struct{}) callbacks.Func { return panicWithSecret },
			payload:  func(t *testing.T) []byte { return mustMarshal(t, request) },
			wantCode: codes.Internal,
		},
		{
			name:     "panic under a deadline",
			fn:       func(<-chan struct{}) callbacks.Func { return panicWithSecret },
			regOpts:  []callbacks.RegisterOption{callbacks.Timeout(time.Hour)},
			payload:  func(t *testing.T) []byte { return mustMarshal(t, request) },
			wantCode: codes.Internal,
		},
		{
			// Failing open reports the failure as a warning: that warning
			// must not carry the secret either.
			name:     "panic, failing open",
			fn:       func(<-chan struct{}) callbacks.Func { return panicWithSecret },
			regOpts:  []callbacks.RegisterOption{callbacks.FailOpen()},
			payload:  func(t *testing.T) []byte { return mustMarshal(t, request) },
			wantCode: codes.OK,
		},
		{
			name: "deadline passed with the secret in the request",
			fn: func(release <-chan struct{}) callbacks.Func {
				return callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
					<-release
					return nil, nil
				})
			},
			regOpts:  []callbacks.RegisterOption{callbacks.Timeout(20 * time.Millisecond)},
			payload:  func(t *testing.T) []byte { return mustMarshal(t, request) },
			wantCode: codes.DeadlineExceeded,
		},
		{
			name: "request with the secret that does not decode",
			fn:   func(<-chan struct{}) callbacks.Func { return panicWithSecret },
			payload: func(t *testing.T) []byte {
				return append(mustMarshal(t, request), 0x2a, 0x80) // a truncated field 5
			},
			wantCode: codes.InvalidArgument,
		},
		{
			name: "request with the secret in a non-UTF-8 neighbour",
			fn:   func(<-chan struct{}) callbacks.Func { return panicWithSecret },
			payload: func(t *testing.T) []byte {
				return append(mustMarshal(t, request), relTransformWithBadType()...)
			},
			wantCode: codes.InvalidArgument,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &relLogBuffer{}
			logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			env := serve(t, callbacks.WithLogger(logger))
			release := make(chan struct{})
			defer close(release)
			cb := mustRegister(t, env.srv, tc.fn(release), append([]callbacks.RegisterOption{callbacks.Name("db-policy")}, tc.regOpts...)...)

			_, err := env.invoke(testCtx(t), cb.GetToken(), tc.payload(t))
			assert.Equal(t, tc.wantCode, status.Code(err), "code of %v", err)
			assert.NotContains(t, status.Convert(err).Message(), secret, "the secret reached the wire")
			noStack(t, status.Convert(err).Message())

			inDebug := false
			for _, rec := range logs.records(t) {
				line, _ := json.Marshal(rec)
				if !strings.Contains(string(line), secret) {
					continue
				}
				if rec["level"] == slog.LevelDebug.String() {
					inDebug = true
					continue
				}
				t.Errorf("the secret reached a %v record: %s", rec["level"], line)
			}
			if tc.wantDebug {
				assert.True(t, inDebug, "the panic detail is missing from the debug log")
			}
		})
	}
}
