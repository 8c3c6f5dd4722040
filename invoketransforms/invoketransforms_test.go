package invoketransforms_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

type opts = pulumirpc.TransformInvokeOptions

func withUnknown[M proto.Message](m M, num protowire.Number, s string) M {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	m.ProtoReflect().SetUnknown(protowire.AppendString(b, s))
	return m
}

const providerRef = "urn:pulumi:dev::proj::pulumi:providers:aws::p::0a1b"

func optionRows() []struct {
	name string
	opts *opts
} {
	return []struct {
		name string
		opts *opts
	}{
		{"provider", &opts{Provider: providerRef}},
		{"plugin_download_url", &opts{PluginDownloadUrl: "https://example.com/plugins"}},
		{"version", &opts{Version: "6.1.0"}},
		{"plugin_checksums", &opts{PluginChecksums: map[string][]byte{"linux-amd64": {0xde, 0xad}, "windows-arm64": {0}}}},
		{"unknown-fields", withUnknown(&opts{}, 500, "from a newer engine")},
	}
}

func fullOptions() *opts {
	return withUnknown(&opts{
		Provider:          providerRef,
		PluginDownloadUrl: "github://api.github.com/org",
		Version:           "1.0.0",
		PluginChecksums:   map[string][]byte{"darwin-arm64": {1, 2, 3}},
	}, 77, "x")
}

func request(o *opts) *pulumirpc.TransformInvokeRequest {
	return &pulumirpc.TransformInvokeRequest{
		Token:   "aws:index/getRegion:getRegion",
		Args:    wiretest.Struct("name", wiretest.Str("us-east-1")),
		Options: o,
	}
}

func TestOptionsCoverEveryField(t *testing.T) {
	t.Parallel()
	seen := map[protoreflect.FullName]bool{}
	for _, row := range append(optionRows(), struct {
		name string
		opts *opts
	}{"full", fullOptions()}) {
		row.opts.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
			seen[fd.FullName()] = true
			return true
		})
	}
	fields := (&opts{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		assert.Truef(t, seen[fields.Get(i).FullName()], "no row sets %s", fields.Get(i).FullName())
	}
	assert.Equal(t, 4, fields.Len(), "TransformInvokeOptions changed: update InvokeOptions, its conversions (wire.go) and these rows")
}

func TestIdentityRoundTripEveryOption(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	cb, err := invoketransforms.RegisterStack(t.Context(), wiretest.Bind(t, okMonitor(t), srv), identity)
	require.NoError(t, err)
	rows := append(optionRows(), struct {
		name string
		opts *opts
	}{"fully-populated", fullOptions()})
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			req := request(row.opts)
			res, err := wiretest.InvokeTransform(t, client, cb, req)
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, req.GetOptions(), res.GetOptions())
			wiretest.RequireProtoEqual(t, req.GetArgs(), res.GetArgs())
		})
	}
}

func TestChangeOneOptionKeepsOthers(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	tests := []struct {
		name string
		edit func(*invoketransforms.InvokeOptions)
		want func(*opts)
	}{
		{"provider", func(o *invoketransforms.InvokeOptions) { o.Provider = "other::ref" }, func(o *opts) { o.Provider = "other::ref" }},
		{"clear provider", func(o *invoketransforms.InvokeOptions) { o.Provider = "" }, func(o *opts) { o.Provider = "" }},
		{"version", func(o *invoketransforms.InvokeOptions) { o.Version = "2.0.0" }, func(o *opts) { o.Version = "2.0.0" }},
		{"url", func(o *invoketransforms.InvokeOptions) { o.PluginDownloadURL = "" }, func(o *opts) { o.PluginDownloadUrl = "" }},
		{"checksums", func(o *invoketransforms.InvokeOptions) { o.PluginChecksums["linux-amd64"] = []byte{7} },
			func(o *opts) { o.PluginChecksums["linux-amd64"] = []byte{7} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
				return a.WithOptions(tt.edit), nil
			}))
			require.NoError(t, err)
			req := request(fullOptions())
			want := proto.CloneOf(req.GetOptions())
			tt.want(want)
			require.False(t, proto.Equal(want, req.GetOptions()), "the edit changes nothing")
			res, err := wiretest.InvokeTransform(t, client, cb, req)
			require.NoError(t, err)
			assert.Nil(t, res.GetArgs(), "args must stay unset")
			wiretest.RequireProtoEqual(t, want, res.GetOptions())
		})
	}
}

type recorder struct {
	mu   sync.Mutex
	args *invoketransforms.Args
	info callbacks.CallInfo
}

func (r *recorder) transform(ctx context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
	info, _ := callbacks.CallInfoFrom(ctx)
	r.mu.Lock()
	r.args, r.info = a, info
	r.mu.Unlock()
	return a.Result(), nil
}

func (r *recorder) last() (*invoketransforms.Args, callbacks.CallInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.args, r.info
}

func secret(v *structpb.Value) *structpb.Value {
	return wiretest.Sig(resource.SecretSig, map[string]*structpb.Value{"value": v})
}

const bucketURN = "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::b"

// TestValuesRoundTrip sends each kind of value, in the form the engine uses
// for invoke arguments, through the real server and back.
func TestValuesRoundTrip(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	tests := []struct {
		name  string
		value *structpb.Value
		check func(t *testing.T, v resource.PropertyValue)
	}{
		{"plain", wiretest.Object("s", wiretest.Str("x"), "n", structpb.NewNumberValue(-3), "b", structpb.NewBoolValue(false), "null", structpb.NewNullValue(), "l", wiretest.List()), nil},
		{"secret envelope", secret(wiretest.Str("hunter2")), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsSecret())
			assert.Equal(t, "hunter2", v.SecretValue().Element.StringValue())
		}},
		{"nested secret", wiretest.List(wiretest.Str("a"), secret(wiretest.Object("k", wiretest.Str("v")))), func(t *testing.T, v resource.PropertyValue) {
			assert.True(t, v.ArrayValue()[1].IsSecret())
		}},
		{"unknown string", wiretest.Str(plugin.UnknownStringValue), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsComputed())
		}},
		{"unknown bool", wiretest.Str(plugin.UnknownBoolValue), nil},
		{"unknown number", wiretest.Str(plugin.UnknownNumberValue), nil},
		{"unknown array", wiretest.Str(plugin.UnknownArrayValue), nil},
		{"unknown object", wiretest.Str(plugin.UnknownObjectValue), nil},
		{"unknown asset", wiretest.Str(plugin.UnknownAssetValue), nil},
		{"unknown archive", wiretest.Str(plugin.UnknownArchiveValue), nil},
		{"secret unknown", secret(wiretest.Str(plugin.UnknownStringValue)), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsSecret())
			assert.True(t, v.SecretValue().Element.IsComputed())
		}},
		{"output value", wiretest.Output(wiretest.Str("v"), true, bucketURN), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsOutput())
			assert.Equal(t, []resource.URN{bucketURN}, v.OutputValue().Dependencies)
		}},
		{"resource reference", wiretest.Sig(resource.ResourceReferenceSig, map[string]*structpb.Value{
			"urn": wiretest.Str(bucketURN), "id": wiretest.Str("b-1"), "name": wiretest.Str("b"), "type": wiretest.Str("aws:s3/bucket:Bucket"),
		}), func(t *testing.T, v resource.PropertyValue) {
			assert.True(t, v.IsResourceReference())
		}},
		{"asset", wiretest.Sig(resource.AssetSig, map[string]*structpb.Value{"hash": wiretest.Str("h"), "text": wiretest.Str("hello")}), nil},
		{"byte string", wiretest.ByteString([]byte{0xff, 0}), func(t *testing.T, v resource.PropertyValue) {
			assert.Equal(t, string([]byte{0xff, 0}), v.StringValue())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			cb, err := srv.Register(context.Background(), invoketransforms.Adapt(rec.transform))
			require.NoError(t, err)
			req := request(fullOptions())
			req.Args = wiretest.Struct("v", tt.value, "other", wiretest.Str("o"))
			res, err := wiretest.InvokeTransform(t, client, cb, req)
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, req.GetArgs(), res.GetArgs())
			wiretest.RequireProtoEqual(t, req.GetOptions(), res.GetOptions())
			args, info := rec.last()
			assert.Equal(t, req.GetToken(), args.Token)
			assert.Equal(t, req.GetToken(), info.Type)
			if tt.check != nil {
				tt.check(t, args.Properties()["v"])
			}
		})
	}
}

func TestByteStrings(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	raw := string([]byte{0xc3, 0x28})
	fn := func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
		return a.WithProperties(func(m resource.PropertyMap) { m["blob"] = resource.NewProperty(raw) }), nil
	}
	for _, accept := range []bool{true, false} {
		f := &monitortest.Fake{DeploymentInfo: monitortest.CurrentEngine(monitor.InvokeTransforms), RegisterStackInvokeTransform: func(context.Context, *pulumirpc.Callback) error { return nil }}
		cb, err := invoketransforms.RegisterStack(t.Context(), wiretest.Bind(t, monitortest.Serve(t, f), srv), fn, callbacks.AcceptsByteStrings(accept))
		require.NoError(t, err)
		require.Equal(t, accept, monitortest.Requests[*pulumirpc.Callback](f, "RegisterStackInvokeTransform")[0].GetAcceptsByteString())
		res, err := wiretest.InvokeTransform(t, client, cb, request(nil))
		if !accept {
			require.Error(t, err)
			assert.Equal(t, codes.Internal, status.Code(err))
			assert.Contains(t, status.Convert(err).Message(), `the value of property "blob" is a string that contains non-UTF8 bytes`)
			continue
		}
		require.NoError(t, err)
		wiretest.RequireProtoEqual(t, wiretest.ByteString([]byte(raw)), res.GetArgs().GetFields()["blob"])
		assert.Nil(t, res.GetOptions())
	}
}

func TestResults(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	fixed := func(r *invoketransforms.Result) invoketransforms.Func {
		return func(context.Context, *invoketransforms.Args) (*invoketransforms.Result, error) { return r, nil }
	}
	tests := []struct {
		name string
		fn   invoketransforms.Func
		want *pulumirpc.TransformInvokeResponse
	}{
		{"nil", fixed(nil), &pulumirpc.TransformInvokeResponse{}},
		{"empty", fixed(&invoketransforms.Result{}), &pulumirpc.TransformInvokeResponse{}},
		{"remove args", fixed(&invoketransforms.Result{Properties: resource.PropertyMap{}}), &pulumirpc.TransformInvokeResponse{Args: &structpb.Struct{}}},
		{"clear options", fixed(&invoketransforms.Result{Options: &invoketransforms.InvokeOptions{}}), &pulumirpc.TransformInvokeResponse{Options: &opts{}}},
		{"args only", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			return a.WithProperties(func(m resource.PropertyMap) { m["name"] = resource.NewProperty("eu-west-1") }), nil
		}, &pulumirpc.TransformInvokeResponse{Args: wiretest.Struct("name", wiretest.Str("eu-west-1"))}},
		{"identity", identity, &pulumirpc.TransformInvokeResponse{Args: wiretest.Struct("name", wiretest.Str("us-east-1")), Options: fullOptions()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), invoketransforms.Adapt(tt.fn))
			require.NoError(t, err)
			res, err := wiretest.InvokeTransform(t, client, cb, request(fullOptions()))
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, tt.want, res)
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	fail := func(err error) invoketransforms.Func {
		return func(context.Context, *invoketransforms.Args) (*invoketransforms.Result, error) { return nil, err }
	}
	tests := []struct {
		name     string
		fn       invoketransforms.Func
		args     *structpb.Struct
		wantCode codes.Code
		wantMsg  string
	}{
		{"user error", fail(errors.New("no such region")), nil, codes.Unknown, "no such region"},
		{"user status", fail(status.Error(codes.PermissionDenied, "nope")), nil, codes.PermissionDenied, "nope"},
		{"bad args", identity, wiretest.Struct("p", wiretest.Sig(resource.SecretSig, nil)), codes.InvalidArgument,
			`invoke transform "e" for aws:index/getRegion:getRegion: request does not decode: args: malformed RPC secret`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), invoketransforms.Adapt(tt.fn), callbacks.Name("e"))
			require.NoError(t, err)
			req := request(fullOptions())
			if tt.args != nil {
				req.Args = tt.args
			}
			_, err = wiretest.InvokeTransform(t, client, cb, req)
			require.Error(t, err)
			st := status.Convert(err)
			assert.Equal(t, tt.wantCode, st.Code(), st.Message())
			assert.Contains(t, st.Message(), tt.wantMsg)
		})
	}
}

// A result holding a Go value that no property value may hold fails as an
// invalid result that names the argument and what to write instead, not as
// a panic of the user's function.
func TestGoValuesInAResultAreAnInvalidResult(t *testing.T) {
	t.Parallel()
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	token, err := reg.Register(invoketransforms.Adapt(func(context.Context, *invoketransforms.Args) (*invoketransforms.Result, error) {
		return &invoketransforms.Result{Properties: resource.PropertyMap{"count": {V: 3}}}, nil
	}), callbacks.Name("counts"))
	require.NoError(t, err)
	payload, err := proto.Marshal(request(nil))
	require.NoError(t, err)
	_, err = reg.Invoke(t.Context(), token, payload)
	require.ErrorIs(t, err, callbacks.ErrInvalidResult)
	require.NotErrorIs(t, err, callbacks.ErrPanicked)
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Contains(t, err.Error(), `invoke transform "counts"`)
	assert.Contains(t, err.Error(), `the value of property "count" is 3 (type int), which a property value cannot hold: a number is a float64: resource.NewProperty(float64(3))`)
}
