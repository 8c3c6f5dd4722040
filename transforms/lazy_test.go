package transforms_test

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/transforms"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// spliceableProperties is a Struct that also carries a field Struct does not
// have (number 15): valid, and kept by a copy, but dropped by a decode, so a
// response that carries these exact bytes was not decoded and re-encoded.
func spliceableProperties() []byte {
	entry := func(key, value string) []byte {
		v := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), value)
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
		e = protowire.AppendBytes(protowire.AppendTag(e, 2, protowire.BytesType), v)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), e)
	}
	b := append(entry("zone", "b"), entry("acl", "private")...)
	return protowire.AppendVarint(protowire.AppendTag(b, 15, protowire.VarintType), 7)
}

// transformPayload encodes a TransformRequest with the given properties
// bytes.
func transformPayload(t *testing.T, props []byte) []byte {
	t.Helper()
	b, err := proto.Marshal(&pulumirpc.TransformRequest{Type: "aws:s3/bucket:Bucket", Name: "b", Custom: true, Parent: parentURN})
	require.NoError(t, err)
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	return protowire.AppendBytes(b, props)
}

// responseProperties returns the raw bytes of a TransformResponse's
// properties field, and whether it had one.
func responseProperties(t *testing.T, b []byte) ([]byte, bool) {
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

func TestLazyProperties(t *testing.T) {
	t.Parallel()
	props := spliceableProperties()
	tests := []struct {
		name string
		fn   transforms.Func
		// want is checked against the response's properties; raw means
		// they must be the request's bytes, unchanged.
		raw  bool
		want resource.PropertyMap
	}{
		{"unread, sent back as received", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.Result(), nil
		}, true, nil},
		{"options changed, properties unread", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			a.Options.Protect = new(true)
			return a.Result(), nil
		}, true, nil},
		{"read, then sent back", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			_ = a.Properties()
			return a.Result(), nil
		}, false, resource.PropertyMap{"acl": resource.NewProperty("private"), "zone": resource.NewProperty("b")}},
		{"changed after Result", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			res := a.Result()
			a.Properties()["acl"] = resource.NewProperty("public")
			return res, nil
		}, false, resource.PropertyMap{"acl": resource.NewProperty("public"), "zone": resource.NewProperty("b")}},
		{"replaced", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			a.SetProperties(resource.PropertyMap{"only": resource.NewProperty(1.0)})
			return a.Result(), nil
		}, false, resource.PropertyMap{"only": resource.NewProperty(1.0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, err := callbacks.NewRegistry()
			require.NoError(t, err)
			token, err := reg.Register(transforms.Adapt(tt.fn))
			require.NoError(t, err)
			out, err := reg.Invoke(t.Context(), token, transformPayload(t, props))
			require.NoError(t, err)
			got, ok := responseProperties(t, out)
			require.True(t, ok, "the response has no properties")
			if tt.raw {
				assert.True(t, bytes.Equal(props, got), "properties were re-encoded:\nsent %x\ngot  %x", props, got)
				return
			}
			assert.False(t, bytes.Equal(props, got), "properties read by the function were sent as received")
			res := &pulumirpc.TransformResponse{}
			require.NoError(t, proto.Unmarshal(out, res))
			args, err := transforms.DecodeRequest(&pulumirpc.TransformRequest{Properties: res.GetProperties()})
			require.NoError(t, err)
			assert.Equal(t, tt.want, args.Properties())
		})
	}
}

// The properties' bytes are checked when the request arrives, read or not,
// and the function never runs on a request that does not decode.
func TestLazyPropertiesAreChecked(t *testing.T) {
	t.Parallel()
	ran := false
	reg, err := callbacks.NewRegistry()
	require.NoError(t, err)
	token, err := reg.Register(transforms.Adapt(func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
		ran = true
		return a.Result(), nil
	}))
	require.NoError(t, err)
	bad := append(spliceableProperties(), 0x0a, 0x03, 0x0a, 0x01, 0xff) // an entry whose key is not UTF-8
	_, err = reg.Invoke(t.Context(), token, transformPayload(t, bad))
	require.ErrorIs(t, err, callbacks.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "properties: proto: string field contains invalid UTF-8")
	assert.False(t, ran)
}

// Args built by hand, as in a unit test of a transform, behave like Args
// from a request with no properties.
func TestArgsByHand(t *testing.T) {
	t.Parallel()
	a := &transforms.Args{Type: "t", Name: "n"}
	require.NotNil(t, a.Properties())
	assert.Empty(t, a.Properties())
	a.Properties()["k"] = resource.NewProperty("v")
	assert.Equal(t, resource.PropertyMap{"k": resource.NewProperty("v")}, a.Result().Properties)

	a.SetProperties(resource.PropertyMap{"x": resource.NewProperty(true)})
	assert.Equal(t, resource.PropertyMap{"x": resource.NewProperty(true)}, a.Properties())
	assert.Equal(t, resource.PropertyMap{"x": resource.NewProperty(true)}, a.WithProperties(nil).Properties)
}

// A request that belongs to the call (as one from the server does) is
// answered in its own bytes when the properties go back unread and the
// options as received; anything else gets a response of its own, and the
// engine decodes the same answer either way.
func TestAnswerInPlace(t *testing.T) {
	t.Parallel()
	request := func(t *testing.T) []byte {
		b, err := proto.Marshal(&pulumirpc.TransformRequest{
			Type: "aws:s3/bucket:Bucket", Name: "b", Custom: true, Parent: parentURN,
			Options: &pulumirpc.TransformResourceOptions{DependsOn: []string{parentURN}, Version: "1.2.3"},
		})
		require.NoError(t, err)
		// The properties between the parent and the options, where the
		// engine's encoding puts them.
		i := bytes.Index(b, []byte(parentURN)) + len(parentURN)
		props := protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), spliceableProperties())
		return append(b[:i:i], append(props, b[i:]...)...)
	}
	tests := []struct {
		name    string
		fn      transforms.Func
		inPlace bool
	}{
		{"unread", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.Result(), nil
		}, true},
		{"empty result", func(_ context.Context, _ *transforms.Args) (*transforms.Result, error) {
			return &transforms.Result{}, nil
		}, false},
		{"options changed", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			a.Options.Protect = new(true)
			return a.Result(), nil
		}, false},
		{"read", func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			_ = a.Properties()
			return a.Result(), nil
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg, err := callbacks.NewRegistry()
			require.NoError(t, err)
			token, err := reg.Register(transforms.Adapt(tt.fn))
			require.NoError(t, err)

			// The same request, once as the caller's bytes and once as the
			// call's own.
			want, err := reg.Invoke(t.Context(), token, request(t))
			require.NoError(t, err)
			own := request(t)
			got, err := reg.InvokeOwned(t.Context(), token, own)
			require.NoError(t, err)

			inPlace := len(got) > 0 && unsafe.SliceData(got) == &own[bytes.Index(own, spliceableProperties())-2]
			assert.Equal(t, tt.inPlace, inPlace, "answered in the request's bytes")
			var gotRes, wantRes pulumirpc.TransformResponse
			require.NoError(t, proto.Unmarshal(got, &gotRes))
			require.NoError(t, proto.Unmarshal(want, &wantRes))
			assert.True(t, proto.Equal(&wantRes, &gotRes), "in the request's bytes %v, in its own %v", &gotRes, &wantRes)
			if tt.inPlace {
				p, ok := responseProperties(t, got)
				require.True(t, ok)
				assert.Equal(t, spliceableProperties(), p, "the properties were not sent as received")
			}
		})
	}
}
