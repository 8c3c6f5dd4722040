package invoketransforms_test

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/invoketransforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// spliceableArgs is a Struct that also carries a field Struct does not have
// (number 15): valid, and kept by a copy, but dropped by a decode, so a
// response that carries these exact bytes was not decoded and re-encoded.
func spliceableArgs() []byte {
	entry := func(key, value string) []byte {
		v := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), value)
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
		e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), v)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e)
	}
	b := append(entry("region", "us-west-2"), entry("mostRecent", "yes")...)
	return protowire.AppendVarint(protowire.AppendTag(b, 15, protowire.VarintType), 7)
}

// invokePayload encodes a TransformInvokeRequest with the given arguments
// bytes.
func invokePayload(t testing.TB, args []byte) []byte {
	t.Helper()
	b, err := proto.Marshal(&pulumirpc.TransformInvokeRequest{
		Token:   "aws:index/getRegion:getRegion",
		Options: &pulumirpc.TransformInvokeOptions{Version: "6.0.0"},
	})
	require.NoError(t, err)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, args)
}

// responseArgs returns the raw bytes of a TransformInvokeResponse's args
// field, and whether it had one.
func responseArgs(t *testing.T, b []byte) ([]byte, bool) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.GreaterOrEqual(t, n, 0)
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		require.GreaterOrEqual(t, m, 0)
		if num == 1 {
			v, _ := protowire.ConsumeBytes(b)
			return v, true
		}
		b = b[m:]
	}
	return nil, false
}

func TestLazyArguments(t *testing.T) {
	t.Parallel()
	args := spliceableArgs()
	both := resource.PropertyMap{"mostRecent": resource.NewProperty("yes"), "region": resource.NewProperty("us-west-2")}
	tests := []struct {
		name string
		fn   invoketransforms.Func
		// raw means the response's arguments must be the request's bytes.
		raw  bool
		want resource.PropertyMap
	}{
		{"unread, sent back as received", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			return a.Result(), nil
		}, true, nil},
		{"options changed, arguments unread", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			a.Options.Version = "7.0.0"
			return a.Result(), nil
		}, true, nil},
		{"read, then sent back", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			_ = a.Properties()
			return a.Result(), nil
		}, false, both},
		{"changed after Result", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			res := a.Result()
			a.Properties()["region"] = resource.NewProperty("eu-north-1")
			return res, nil
		}, false, resource.PropertyMap{"mostRecent": resource.NewProperty("yes"), "region": resource.NewProperty("eu-north-1")}},
		{"replaced", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			a.SetProperties(resource.PropertyMap{"only": resource.NewProperty(1.0)})
			return a.Result(), nil
		}, false, resource.PropertyMap{"only": resource.NewProperty(1.0)}},
		{"WithProperties", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			return a.WithProperties(func(m resource.PropertyMap) { delete(m, "mostRecent") }), nil
		}, false, resource.PropertyMap{"region": resource.NewProperty("us-west-2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, err := callbacks.NewRegistry()
			require.NoError(t, err)
			token, err := reg.Register(invoketransforms.Adapt(tt.fn))
			require.NoError(t, err)
			out, err := reg.Invoke(t.Context(), token, invokePayload(t, args))
			require.NoError(t, err)
			got, ok := responseArgs(t, out)
			require.True(t, ok, "the response has no arguments")
			if tt.raw {
				assert.True(t, bytes.Equal(args, got), "arguments were re-encoded:\nsent %x\ngot  %x", args, got)
				return
			}
			assert.False(t, bytes.Equal(args, got), "arguments read by the function were sent as received")
			res := &pulumirpc.TransformInvokeResponse{}
			require.NoError(t, proto.Unmarshal(out, res))
			back, err := invoketransforms.DecodeRequest(&pulumirpc.TransformInvokeRequest{Args: res.GetArgs()})
			require.NoError(t, err)
			assert.Equal(t, tt.want, back.Properties())
		})
	}
}

// The arguments' bytes are checked when the request arrives, read or not:
// what a decode refuses is refused with InvalidArgument, and the function
// never runs.
func TestLazyArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, bad, want string
	}{
		{"key not UTF-8", string(append(spliceableArgs(), 0x0a, 0x03, 0x0a, 0x01, 0xff)), "args: proto: string field contains invalid UTF-8"},
		{"truncated entry", string(append(spliceableArgs(), 0x0a, 0x05, 0x0a)), "args:"},
		{"bad wire type", string(append(spliceableArgs(), 0x0b)), "args:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refusedBeforeRunning(t, invokePayload(t, []byte(tt.bad)), tt.want)
		})
	}
}

// refusedBeforeRunning checks that an invoke transform refuses payload
// with InvalidArgument, saying want, and never runs.
func refusedBeforeRunning(t *testing.T, payload []byte, want string) {
	t.Helper()
	ran := false
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	token, err := reg.Register(invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
		ran = true
		return a.Result(), nil
	}))
	require.NoError(t, err)
	_, err = reg.Invoke(t.Context(), token, payload)
	require.ErrorIs(t, err, callbacks.ErrInvalidRequest)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), want)
	assert.False(t, ran, "the function ran on a request that does not decode")
}

// Args built by hand, as in a unit test of an invoke transform, behave like
// Args from a request with no arguments.
func TestArgsByHand(t *testing.T) {
	t.Parallel()
	a := &invoketransforms.Args{Token: "t"}
	require.NotNil(t, a.Properties())
	assert.Empty(t, a.Properties())
	a.Properties()["k"] = resource.NewProperty("v")
	assert.Equal(t, resource.PropertyMap{"k": resource.NewProperty("v")}, a.Result().Properties)

	a.SetProperties(resource.PropertyMap{"x": resource.NewProperty(true)})
	assert.Equal(t, resource.PropertyMap{"x": resource.NewProperty(true)}, a.Properties())
	assert.Equal(t, resource.PropertyMap{"x": resource.NewProperty(true)}, a.WithProperties(nil).Properties)
}

// Options are decoded from the wire by hand: what protobuf refuses in them
// is refused with InvalidArgument before the function runs, and options
// that protobuf would not encode fail the call with Internal.
func TestOptionsAreChecked(t *testing.T) {
	t.Parallel()
	const refused = "for aws:index/getRegion:getRegion: request does not decode: not a valid pulumirpc.TransformInvokeRequest encoding"
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	tests := []struct {
		name string
		opts []byte
	}{
		{"provider not UTF-8", str(1, "\xff")},
		{"checksum key not UTF-8", str(4, string(str(1, "\xfe")))},
		{"truncated", []byte{0x1a, 0x04, 'x'}},
		{"field number 0", []byte{0x00, 0x01}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			payload := protowire.AppendBytes(protowire.AppendTag(invokePayload(t, spliceableArgs()), 3, protowire.BytesType), tt.opts)
			refusedBeforeRunning(t, payload, refused)
		})
	}
	// The request around them is held to protobuf's field numbers too.
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	token, err := reg.Register(invoketransforms.Adapt(identity))
	require.NoError(t, err)
	past := protowire.AppendTag(invokePayload(t, spliceableArgs()), protowire.MaxValidNumber+1, protowire.VarintType)
	_, err = reg.Invoke(t.Context(), token, append(past, 0))
	require.ErrorIs(t, err, callbacks.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "request does not decode: not a valid pulumirpc.TransformInvokeRequest encoding")

	for _, edit := range []func(*invoketransforms.InvokeOptions){
		func(o *invoketransforms.InvokeOptions) { o.Version = "\xc3" },
		func(o *invoketransforms.InvokeOptions) { o.PluginChecksums = map[string][]byte{"\xff": nil} },
	} {
		reg, err := callbacks.NewRegistry()
		require.NoError(t, err)
		token, err := reg.Register(invoketransforms.Adapt(func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			return a.WithOptions(edit), nil
		}))
		require.NoError(t, err)
		_, err = reg.Invoke(t.Context(), token, invokePayload(t, spliceableArgs()))
		require.ErrorIs(t, err, callbacks.ErrEncode)
		assert.Equal(t, codes.Internal, status.Code(err))
		assert.Contains(t, err.Error(), "for aws:index/getRegion:getRegion: response does not encode: string field contains invalid UTF-8")
	}
}

// Each result is the caller's own, however many an Args makes.
func TestResultsAreDistinct(t *testing.T) {
	t.Parallel()
	a := &invoketransforms.Args{Token: "t", Options: &invoketransforms.InvokeOptions{Version: "1"}}
	first, second := a.Result(), a.WithOptions(nil)
	require.NotSame(t, first, second)
	first.Options = &invoketransforms.InvokeOptions{Version: "2"}
	assert.Equal(t, "1", second.Options.Version)
	third := a.WithProperties(nil)
	require.NotSame(t, first, third)
	require.NotSame(t, second, third)
	assert.Equal(t, "2", first.Options.Version)
	assert.Nil(t, third.Options)
}

// A request that belongs to the call (as one from the server does) is
// answered in its own bytes when the arguments go back unread and the
// options as received; anything else gets a response of its own, and the
// engine decodes the same answer either way.
func TestAnswerInPlace(t *testing.T) {
	t.Parallel()
	request := func(t *testing.T) []byte {
		// The token, the arguments, the options: the engine's order.
		b, err := proto.Marshal(&pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion"})
		require.NoError(t, err)
		b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), spliceableArgs())
		opts, err := proto.Marshal(&pulumirpc.TransformInvokeOptions{Version: "6.0.0", Provider: "urn:p::id"})
		require.NoError(t, err)
		return protowire.AppendBytes(protowire.AppendTag(b, 3, protowire.BytesType), opts)
	}
	tests := []struct {
		name    string
		fn      invoketransforms.Func
		inPlace bool
	}{
		{"unread", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			return a.Result(), nil
		}, true},
		{"empty result", func(_ context.Context, _ *invoketransforms.Args) (*invoketransforms.Result, error) {
			return &invoketransforms.Result{}, nil
		}, false},
		{"options changed", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			a.Options.Version = "7.0.0"
			return a.Result(), nil
		}, false},
		{"read", func(_ context.Context, a *invoketransforms.Args) (*invoketransforms.Result, error) {
			_ = a.Properties()
			return a.Result(), nil
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, err := callbacks.NewRegistry()
			require.NoError(t, err)
			token, err := reg.Register(invoketransforms.Adapt(tt.fn))
			require.NoError(t, err)

			// The same request, once as the caller's bytes and once as the
			// call's own.
			want, err := reg.Invoke(t.Context(), token, request(t))
			require.NoError(t, err)
			own := request(t)
			got, err := reg.InvokeOwned(t.Context(), token, own)
			require.NoError(t, err)

			inPlace := len(got) > 0 && unsafe.SliceData(got) == &own[bytes.Index(own, spliceableArgs())-2]
			assert.Equal(t, tt.inPlace, inPlace, "answered in the request's bytes")
			var gotRes, wantRes pulumirpc.TransformInvokeResponse
			require.NoError(t, proto.Unmarshal(got, &gotRes))
			require.NoError(t, proto.Unmarshal(want, &wantRes))
			assert.True(t, proto.Equal(&wantRes, &gotRes), "in the request's bytes %v, in its own %v", &gotRes, &wantRes)
			if tt.inPlace {
				p, ok := responseArgs(t, got)
				require.True(t, ok)
				assert.Equal(t, spliceableArgs(), p, "the arguments were not sent as received")
			}
		})
	}
}
