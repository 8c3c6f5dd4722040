package transforms_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/testkit/wiretest"
	"github.com/langhost/callbacks/monitor/monitortest"
	"github.com/langhost/callbacks/transforms"
)

// recorder is a transform that remembers the last Args it saw, so that
// checks run on the test goroutine.
type recorder struct {
	mu   sync.Mutex
	args *transforms.Args
	info callbacks.CallInfo
	fn   transforms.Func // the answer; identity if nil
}

func (r *recorder) transform(ctx context.Context, a *transforms.Args) (*transforms.Result, error) {
	info, _ := callbacks.CallInfoFrom(ctx)
	r.mu.Lock()
	r.args, r.info = a, info
	r.mu.Unlock()
	if r.fn != nil {
		return r.fn(ctx, a)
	}
	return a.Result(), nil
}

func (r *recorder) last() (*transforms.Args, callbacks.CallInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.args, r.info
}

const (
	bucketURN = "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::b"
	compURN   = "urn:pulumi:dev::proj::my:mod:Comp::c"
)

// TestValuesRoundTrip sends each kind of special value through the real
// server to a transform that returns the properties it got. The response
// must equal the request, and the transform must have seen the value's
// meaning, not its wire form.
func TestValuesRoundTrip(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	tests := []struct {
		name  string
		value *structpb.Value
		check func(t *testing.T, v resource.PropertyValue)
	}{
		{"plain", wiretest.Object("s", wiretest.Str("x"), "n", structpb.NewNumberValue(1.5), "b", structpb.NewBoolValue(true), "null", structpb.NewNullValue(),
			"l", wiretest.List(wiretest.Str("a"), wiretest.List()), "o", wiretest.Object()), func(t *testing.T, v resource.PropertyValue) {
			assert.True(t, v.ObjectValue()["null"].IsNull())
			assert.Equal(t, 1.5, v.ObjectValue()["n"].NumberValue())
		}},
		{"secret", wiretest.Output(wiretest.Str("hunter2"), true), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsOutput())
			assert.True(t, v.OutputValue().Secret)
			assert.True(t, v.OutputValue().Known)
			assert.Equal(t, "hunter2", v.OutputValue().Element.StringValue())
		}},
		{"unknown", wiretest.Output(nil, false), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsOutput())
			assert.False(t, v.OutputValue().Known)
		}},
		{"unknown secret", wiretest.Output(nil, true), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsOutput())
			assert.False(t, v.OutputValue().Known)
			assert.True(t, v.OutputValue().Secret)
		}},
		{"output with dependencies", wiretest.Output(wiretest.Str("v"), false, bucketURN, compURN), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsOutput())
			assert.Equal(t, []resource.URN{bucketURN, compURN}, v.OutputValue().Dependencies)
		}},
		{"unknown with dependencies", wiretest.Output(nil, true, bucketURN), func(t *testing.T, v resource.PropertyValue) {
			assert.Equal(t, []resource.URN{bucketURN}, v.OutputValue().Dependencies)
		}},
		{"secret envelope", wiretest.Sig(resource.SecretSig, map[string]*structpb.Value{"value": wiretest.Str("s")}), func(t *testing.T, v resource.PropertyValue) {
			assert.True(t, v.IsSecret())
		}},
		{"resource reference", wiretest.Sig(resource.ResourceReferenceSig, map[string]*structpb.Value{
			"urn": wiretest.Str(bucketURN), "id": wiretest.Str("b-123"), "name": wiretest.Str("b"), "type": wiretest.Str("aws:s3/bucket:Bucket"), "packageVersion": wiretest.Str("6.0.0"),
		}), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsResourceReference())
			ref := v.ResourceReferenceValue()
			assert.Equal(t, resource.URN(bucketURN), ref.URN)
			assert.Equal(t, "b-123", ref.ID.StringValue())
			assert.Equal(t, "6.0.0", ref.PackageVersion)
		}},
		{"component reference", wiretest.Sig(resource.ResourceReferenceSig, map[string]*structpb.Value{
			"urn": wiretest.Str(compURN), "name": wiretest.Str("c"), "type": wiretest.Str("my:mod:Comp"),
		}), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsResourceReference())
			_, hasID := v.ResourceReferenceValue().IDString()
			assert.False(t, hasID)
		}},
		{"asset", wiretest.Sig(resource.AssetSig, map[string]*structpb.Value{
			"hash": wiretest.Str("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"), "text": wiretest.Str("hello"),
		}), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsAsset())
			assert.Equal(t, "hello", v.AssetValue().Text)
		}},
		{"archive", wiretest.Sig(resource.ArchiveSig, map[string]*structpb.Value{
			"hash": wiretest.Str("abc"), "assets": wiretest.Object("f.txt", wiretest.Sig(resource.AssetSig, map[string]*structpb.Value{"hash": wiretest.Str("def"), "text": wiretest.Str("x")})),
		}), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsArchive())
		}},
		{"byte string", wiretest.ByteString([]byte{0xff, 0xfe, 'a', 0}), func(t *testing.T, v resource.PropertyValue) {
			require.True(t, v.IsString())
			assert.Equal(t, string([]byte{0xff, 0xfe, 'a', 0}), v.StringValue())
		}},
		{"nested", wiretest.List(wiretest.Object("k", wiretest.Output(wiretest.List(wiretest.Output(wiretest.Str("inner"), true)), false, bucketURN)), wiretest.ByteString([]byte{0x80})), nil},
	}
	// Each value goes through twice: decoded and encoded again (the
	// transform reads the properties before returning them), and sent back
	// as received (it never reads them).
	for _, tt := range tests {
		for _, read := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/read=%v", tt.name, read), func(t *testing.T) {
				t.Parallel()
				rec := &recorder{fn: func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
					if read {
						_ = a.Properties()
					}
					return a.Result(), nil
				}}
				cb, err := srv.Register(context.Background(), transforms.Adapt(rec.transform))
				require.NoError(t, err)
				require.True(t, cb.GetAcceptsByteString(), "byte strings are accepted by default")
				req := request(fullOptions())
				req.Properties = wiretest.Struct("v", tt.value, "other", wiretest.Str("o"))
				res, err := wiretest.Transform(t, client, cb, req)
				require.NoError(t, err)
				wiretest.RequireProtoEqual(t, req.GetProperties(), res.GetProperties())
				wiretest.RequireProtoEqual(t, req.GetOptions(), res.GetOptions())
				if tt.check != nil {
					args, _ := rec.last()
					tt.check(t, args.Properties()["v"])
				}
			})
		}
	}
}

func TestByteStrings(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	raw := string([]byte{'b', 0xff, 0xc0})
	returnRaw := func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		return a.WithProperties(func(m resource.PropertyMap) { m["blob"] = resource.NewProperty(raw) }), nil
	}
	tests := []struct {
		name    string
		accept  bool
		wantErr string
	}{
		{"accepted", true, ""},
		{"refused", false, `the value of property "blob" is a string that contains non-UTF8 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), transforms.Adapt(returnRaw), callbacks.AcceptsByteStrings(tt.accept), callbacks.Name("raw"))
			require.NoError(t, err)
			require.Equal(t, tt.accept, cb.GetAcceptsByteString())
			res, err := wiretest.Transform(t, client, cb, request(nil))
			if tt.wantErr != "" {
				require.Error(t, err)
				st := status.Convert(err)
				assert.Equal(t, codes.Internal, st.Code())
				assert.Contains(t, st.Message(), tt.wantErr)
				assert.Contains(t, st.Message(), `resource transform "raw"`)
				return
			}
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, wiretest.ByteString([]byte(raw)), res.GetProperties().GetFields()["blob"])
			assert.Nil(t, res.GetOptions())
		})
	}

	// Adapt follows the registration's choice, for registries without a server.
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	for _, accept := range []bool{true, false} {
		token, err := reg.Register(transforms.Adapt(returnRaw), callbacks.AcceptsByteStrings(accept))
		require.NoError(t, err)
		payload, err := proto.Marshal(request(nil))
		require.NoError(t, err)
		_, err = reg.Invoke(t.Context(), token, payload)
		if accept {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, callbacks.ErrEncode)
		}
	}
}

func TestResults(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	tests := []struct {
		name string
		fn   transforms.Func
		want *pulumirpc.TransformResponse
	}{
		{"nil result", func(context.Context, *transforms.Args) (*transforms.Result, error) { return nil, nil },
			&pulumirpc.TransformResponse{}},
		{"empty result", func(context.Context, *transforms.Args) (*transforms.Result, error) { return &transforms.Result{}, nil },
			&pulumirpc.TransformResponse{}},
		{"remove all properties", func(context.Context, *transforms.Args) (*transforms.Result, error) {
			return &transforms.Result{Properties: resource.PropertyMap{}}, nil
		}, &pulumirpc.TransformResponse{Properties: &structpb.Struct{}}},
		{"clear all options", func(context.Context, *transforms.Args) (*transforms.Result, error) {
			return &transforms.Result{Options: &transforms.ResourceOptions{}}, nil
		}, &pulumirpc.TransformResponse{Options: &opts{}}},
		{"only properties", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.WithProperties(func(m resource.PropertyMap) { m["acl"] = resource.NewProperty("public") }), nil
		}, &pulumirpc.TransformResponse{Properties: wiretest.Struct("acl", wiretest.Str("public"))}},
		{"both", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			a.Properties()["x"] = resource.NewProperty(1.0)
			a.Options.Version = "9"
			return a.Result(), nil
		}, &pulumirpc.TransformResponse{
			Properties: wiretest.Struct("acl", wiretest.Str("private"), "x", structpb.NewNumberValue(1)),
			Options:    func() *opts { o := fullOptions(); o.Version = "9"; return o }(),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), transforms.Adapt(tt.fn))
			require.NoError(t, err)
			res, err := wiretest.Transform(t, client, cb, request(fullOptions()))
			require.NoError(t, err)
			wiretest.RequireProtoEqual(t, tt.want, res)
		})
	}
}

func TestURN(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	tests := []struct {
		name, parent, typ string
		want              resource.URN
	}{
		{"stack child", stackURN, "aws:s3/bucket:Bucket", "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::res"},
		{"component child", parentURN, "aws:s3/bucket:Bucket", "urn:pulumi:dev::proj::my:mod:Comp$aws:s3/bucket:Bucket::res"},
		{"grandchild", "urn:pulumi:dev::proj::my:mod:Comp$my:mod:Inner::i", "random:index:Id", "urn:pulumi:dev::proj::my:mod:Comp$my:mod:Inner$random:index:Id::res"},
		{"no parent", "", "pulumi:pulumi:Stack", ""},
		{"invalid parent", "not-a-urn", "t:t:T", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			cb, err := srv.Register(context.Background(), transforms.Adapt(rec.transform), callbacks.Name("urn"))
			require.NoError(t, err)
			req := request(nil)
			req.Parent, req.Type, req.Name, req.Custom = tt.parent, tt.typ, "res", false
			_, err = wiretest.Transform(t, client, cb, req)
			require.NoError(t, err)
			args, info := rec.last()
			assert.Equal(t, tt.want, args.URN)
			assert.Equal(t, string(tt.want), info.URN)
			assert.Equal(t, resource.URN(tt.parent), args.Parent)
			assert.Equal(t, tt.typ, args.Type)
			assert.Equal(t, tt.typ, info.Type)
			assert.Equal(t, "res", args.Name)
			assert.Equal(t, "res", info.ResourceName)
			assert.False(t, args.Custom)
			assert.NotNil(t, args.Options)
			assert.NotNil(t, args.Properties())
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	srv, client := wiretest.StartServer(t)
	fail := func(err error) transforms.Func {
		return func(context.Context, *transforms.Args) (*transforms.Result, error) { return nil, err }
	}
	malformedSecret := wiretest.Sig(resource.SecretSig, nil)
	tests := []struct {
		name     string
		fn       transforms.Func
		req      func(*pulumirpc.TransformRequest)
		wantCode codes.Code
		wantMsg  string
	}{
		{"user error", fail(errors.New("bad transform")), nil, codes.Unknown, "bad transform"},
		{"user status", fail(status.Error(codes.FailedPrecondition, "not now")), nil, codes.FailedPrecondition, "not now"},
		{"bad properties", transforms.Func(identity), func(r *pulumirpc.TransformRequest) { r.Properties = wiretest.Struct("p", malformedSecret) },
			codes.InvalidArgument, `resource transform "e" for aws:s3/bucket:Bucket b: request does not decode: properties: malformed RPC secret`},
		{"bad trigger", transforms.Func(identity), func(r *pulumirpc.TransformRequest) { r.Options.ReplacementTrigger = malformedSecret },
			codes.InvalidArgument, "options: decoding replacementTrigger"},
		{"panic", func(context.Context, *transforms.Args) (*transforms.Result, error) { panic("boom") }, nil,
			codes.Internal, "panicked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cb, err := srv.Register(context.Background(), transforms.Adapt(tt.fn), callbacks.Name("e"))
			require.NoError(t, err)
			req := request(fullOptions())
			if tt.req != nil {
				tt.req(req)
			}
			_, err = wiretest.Transform(t, client, cb, req)
			require.Error(t, err)
			st := status.Convert(err)
			assert.Equal(t, tt.wantCode, st.Code(), st.Message())
			assert.Contains(t, st.Message(), tt.wantMsg)
		})
	}
}

func TestCallbackArguments(t *testing.T) {
	t.Parallel()
	mon := monitortest.Serve(t, &monitortest.Fake{})
	srv := mon.Server()
	_, err := transforms.Callback(t.Context(), mon, nil)
	assert.ErrorIs(t, err, callbacks.ErrNilFunc)
	_, err = transforms.Callback(t.Context(), nil, identity)
	assert.ErrorIs(t, err, callbacks.ErrNilArgument)
	assert.Equal(t, 0, srv.Registry().Len())

	cb, err := transforms.Callback(t.Context(), mon, identity, callbacks.Name("tagger"))
	require.NoError(t, err)
	kind, name, ok := srv.Registry().Lookup(cb.GetToken())
	require.True(t, ok)
	assert.Equal(t, callbacks.KindResourceTransform, kind)
	assert.Equal(t, "tagger", name)
	assert.Equal(t, srv.Target(), cb.GetTarget())
}

// A result holding a Go value that no property value may hold, in its
// properties or its replacement trigger, fails as an invalid result that
// names the property and what to write instead, not as a panic of the
// user's function.
func TestGoValuesInAResultAreAnInvalidResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   transforms.Func
		want string
	}{
		{"property", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.WithProperties(func(m resource.PropertyMap) { m["length"] = resource.PropertyValue{V: 3} }), nil
		}, `the value of property "length" is 3 (type int), which a property value cannot hold: a number is a float64: resource.NewProperty(float64(3)) or resource.NewNumberProperty(3)`},
		{"replacement trigger", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			a.Options.ReplacementTrigger = &resource.PropertyValue{V: int64(2)}
			return a.Result(), nil
		}, `is 2 (type int64)`},
	}
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	payload, err := proto.Marshal(request(fullOptions()))
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			token, err := reg.Register(transforms.Adapt(tt.fn), callbacks.Name("sizes"))
			require.NoError(t, err)
			_, err = reg.Invoke(t.Context(), token, payload)
			require.ErrorIs(t, err, callbacks.ErrInvalidResult)
			require.NotErrorIs(t, err, callbacks.ErrPanicked)
			assert.Equal(t, codes.Internal, status.Code(err))
			assert.Contains(t, err.Error(), `resource transform "sizes"`)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
