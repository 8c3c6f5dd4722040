package callbacks_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/langhost/callbacks"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// Helpers shared by the reliability and security tests (badinput, faults,
// fuzz, security). They are prefixed "rel" to stay out of the way of the
// other test files of this package.

// hangBound is the one time limit these tests use: a guard against hangs, not
// an assertion about speed. It is far above what the slowest row needs on a
// busy machine with the race detector (100,000 properties: 12 s alone
// under 8 busy loops on 2 cores, past 30 s beside the package's other
// tests), and below go test's own 10 minutes.
const hangBound = 5 * time.Minute

const bufTarget = "passthrough:///bufnet"

// relNested returns a Struct with depth levels of Struct: {"a": {"a": ... {"leaf": "x"}}}.
func relNested(depth int) *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{"leaf": structpb.NewStringValue("x")}}
	for i := 1; i < depth; i++ {
		s = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStructValue(s)}}
	}
	return s
}

// relEnvelope builds a CallbackInvokeRequest whose wire form is exactly raw:
// the bytes ride as unknown fields, which proto.Marshal copies verbatim. It
// lets a normal client send envelopes no well-behaved client would.
func relEnvelope(raw []byte) *pulumirpc.CallbackInvokeRequest {
	req := &pulumirpc.CallbackInvokeRequest{}
	req.ProtoReflect().SetUnknown(protoreflect.RawFields(raw))
	return req
}

// relTransformRecorder is a resource transform that remembers the requests it
// got and answers with reply (an empty response when reply is nil).
type relTransformRecorder struct {
	reply func(*pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error)

	mu   sync.Mutex
	reqs []*pulumirpc.TransformRequest
}

func (r *relTransformRecorder) fn() callbacks.Func {
	return callbacks.ResourceTransform(func(_ context.Context, req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req)
		r.mu.Unlock()
		if r.reply == nil {
			return &pulumirpc.TransformResponse{}, nil
		}
		return r.reply(req)
	})
}

func (r *relTransformRecorder) got() []*pulumirpc.TransformRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*pulumirpc.TransformRequest(nil), r.reqs...)
}

// relBadUTF8 is a string that is not valid UTF-8.
const relBadUTF8 = "caf\xc3\x28-\xff"

// relTransformWithBadType is a TransformRequest whose type field holds
// invalid UTF-8, encoded by hand because proto.Marshal refuses to.
func relTransformWithBadType() []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType) // TransformRequest.type
	b = protowire.AppendString(b, "pkg:index:Thing"+relBadUTF8)
	b = protowire.AppendTag(b, 2, protowire.BytesType) // name
	return protowire.AppendString(b, "thing")
}

// relTransformWithBadProperty is a TransformRequest whose properties hold
// {"blob": "<invalid UTF-8>"}, encoded by hand.
func relTransformWithBadProperty() []byte {
	value := protowire.AppendTag(nil, 3, protowire.BytesType) // Value.string_value
	value = protowire.AppendString(value, relBadUTF8)
	entry := protowire.AppendTag(nil, 1, protowire.BytesType) // map entry key
	entry = protowire.AppendString(entry, "blob")
	entry = protowire.AppendTag(entry, 2, protowire.BytesType) // map entry value
	entry = protowire.AppendBytes(entry, value)
	st := protowire.AppendTag(nil, 1, protowire.BytesType) // Struct.fields
	st = protowire.AppendBytes(st, entry)
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, "pkg:index:Thing")
	b = protowire.AppendTag(b, 5, protowire.BytesType) // TransformRequest.properties
	return protowire.AppendBytes(b, st)
}

// relByteStringEnvelope is how the engine sends a non-UTF-8 string to a
// callback whose accepts_byte_string is set.
func relByteStringEnvelope(raw string) *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		sig.Key: structpb.NewStringValue(sig.ByteString),
		"value": structpb.NewStringValue(base64.StdEncoding.EncodeToString([]byte(raw))),
	}})
}

// TestBadInputOverTheWire sends the server every kind of malformed, odd or
// extreme request over a real gRPC connection and checks the exact status the
// engine would see.
func TestBadInputOverTheWire(t *testing.T) {
	t.Parallel()

	type badCase struct {
		name string
		// srvOpts configure the server for this row.
		srvOpts []callbacks.ServerOption
		// fn is registered when set; otherwise a recording resource
		// transform (rec) is.
		fn      func(rec *relTransformRecorder) callbacks.Func
		regOpts []callbacks.RegisterOption
		// token turns the registered token into the one sent; nil sends it
		// unchanged.
		token func(registered string) string
		// payload is the request bytes; envelope, when set, replaces the
		// whole CallbackInvokeRequest on the wire instead.
		payload  func(t *testing.T) []byte
		envelope func(registered string) []byte
		wantCode codes.Code
		wantMsg  string
		// check runs after a successful call.
		check func(t *testing.T, cb *pulumirpc.Callback, got []*pulumirpc.TransformRequest, resp []byte)
		// long rows are skipped with -short; see the row for why.
		long bool
	}

	fullRequest := &pulumirpc.TransformRequest{
		Type: "aws:s3/bucket:Bucket", Name: "logs", Custom: true,
		Parent:     "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev",
		Properties: mustStruct(t, map[string]any{"acl": "private", "tags": map[string]any{"team": "infra"}}),
		Options:    &pulumirpc.TransformResourceOptions{DependsOn: []string{"urn:a"}, Version: "6.0.0"},
	}
	errorHookReq := &pulumirpc.ErrorHookRequest{
		Urn: "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs", Id: "bucket-1234",
		Name: "logs", Type: "aws:s3/bucket:Bucket",
		NewInputs:       mustStruct(t, map[string]any{"acl": "private"}),
		FailedOperation: "create", Errors: []string{"throttled"},
	}
	huge := 300 << 20
	var hugePayload []byte
	var hugeOnce sync.Once
	hugeBytes := func() []byte {
		hugeOnce.Do(func() { hugePayload = bytes.Repeat([]byte("callbacks-300MiB"), huge/16) })
		return hugePayload
	}
	fixed := func(f callbacks.Func) func(*relTransformRecorder) callbacks.Func {
		return func(*relTransformRecorder) callbacks.Func { return f }
	}
	failing := func(err error) func(*relTransformRecorder) callbacks.Func {
		return func(rec *relTransformRecorder) callbacks.Func {
			rec.reply = func(*pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) { return nil, err }
			return rec.fn()
		}
	}
	wantEmptyResponse := func(t *testing.T, _ *pulumirpc.Callback, _ []*pulumirpc.TransformRequest, resp []byte) {
		if len(resp) != 0 {
			t.Errorf("got a %d-byte response, want an empty one", len(resp))
		}
	}
	wantOneRequest := func(want *pulumirpc.TransformRequest) func(*testing.T, *pulumirpc.Callback, []*pulumirpc.TransformRequest, []byte) {
		return func(t *testing.T, _ *pulumirpc.Callback, got []*pulumirpc.TransformRequest, _ []byte) {
			require.Len(t, got, 1)
			if !proto.Equal(got[0], want) {
				t.Errorf("function got %v, want %v", got[0], want)
			}
		}
	}
	echoProperties := func(rec *relTransformRecorder) callbacks.Func {
		rec.reply = func(req *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			return &pulumirpc.TransformResponse{Properties: req.GetProperties()}, nil
		}
		return rec.fn()
	}

	cases := []badCase{
		{
			name:     "unknown token",
			token:    func(string) string { return "0b8f0f4e-3f7c-4e8e-9d61-5d1c7a3f2b10" },
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.NotFound,
			wantMsg:  `unknown callback token "0b8f0f4e-3f7c-4e8e-9d61-5d1c7a3f2b10"`,
		},
		{
			name:     "empty token",
			token:    func(string) string { return "" },
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.InvalidArgument,
			wantMsg:  "empty callback token",
		},
		{
			name:     "token with a different case",
			token:    strings.ToUpper,
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.NotFound,
			wantMsg:  "unknown callback token",
		},
		{
			// Zero bytes are the valid encoding of an empty message.
			name:     "empty payload is an empty request",
			payload:  func(*testing.T) []byte { return nil },
			wantCode: codes.OK,
			check:    wantOneRequest(&pulumirpc.TransformRequest{}),
		},
		{
			name: "garbage payload",
			payload: func(*testing.T) []byte {
				return []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
			},
			wantCode: codes.InvalidArgument,
			wantMsg:  "request does not decode: not a pulumirpc.TransformRequest",
		},
		{
			name:     "text instead of protobuf",
			payload:  func(*testing.T) []byte { return []byte(`{"type":"aws:s3/bucket:Bucket","name":"logs"}`) },
			wantCode: codes.InvalidArgument,
			wantMsg:  "request does not decode: not a pulumirpc.TransformRequest",
		},
		{
			name: "truncated message",
			payload: func(t *testing.T) []byte {
				b := mustMarshal(t, fullRequest)
				b = b[:len(b)-1] // the last field is the options message: now one byte short
				require.Error(t, proto.Unmarshal(b, new(pulumirpc.TransformRequest)), "the truncated bytes must not decode")
				return b
			},
			wantCode: codes.InvalidArgument,
			wantMsg:  "request does not decode: not a pulumirpc.TransformRequest",
		},
		{
			// The protobuf wire format names no message type, so another
			// kind's bytes decode "successfully": fields whose number and
			// wire type match land in this kind's fields, the rest become
			// unknown fields. Here the error hook's urn, id and type (1, 2, 4)
			// become the transform's type, name and parent, and new_inputs
			// (5) becomes properties; name (3, a string) does not match
			// custom (3, a bool) and is kept as an unknown field, like
			// failed_operation and errors. The server cannot tell, and it
			// does not matter: the function gets a well-formed
			// TransformRequest whose every value the sender could have put
			// in a real TransformRequest, so a mixed-up payload grants
			// nothing a well-formed one would not. The engine never does
			// this: the token decides the kind.
			name:     "payload of another kind is read as this kind",
			payload:  func(t *testing.T) []byte { return mustMarshal(t, errorHookReq) },
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, got []*pulumirpc.TransformRequest, _ []byte) {
				require.Len(t, got, 1)
				req := proto.Clone(got[0]).(*pulumirpc.TransformRequest)
				unknown := req.ProtoReflect().GetUnknown()
				req.ProtoReflect().SetUnknown(nil)
				want := &pulumirpc.TransformRequest{
					Type: errorHookReq.Urn, Name: errorHookReq.Id, Parent: errorHookReq.Type,
					Properties: errorHookReq.NewInputs,
				}
				if !proto.Equal(req, want) {
					t.Errorf("function got %v, want %v", req, want)
				}
				if len(unknown) == 0 {
					t.Errorf("want the error hook's name, failed_operation and errors kept as unknown fields")
				}
			},
		},
		{
			name: "nil Struct reaches the function as nil",
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: "a"})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, got []*pulumirpc.TransformRequest, _ []byte) {
				require.Len(t, got, 1)
				assert.Nil(t, got[0].GetProperties(), "properties")
				assert.Nil(t, got[0].GetOptions(), "options")
			},
		},
		{
			// The engine treats a set-but-empty Struct ("replace the
			// inputs with {}") differently from an unset one; the
			// distinction must survive both directions.
			name: "empty Struct stays set both ways",
			fn: func(rec *relTransformRecorder) callbacks.Func {
				rec.reply = func(*pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
					return &pulumirpc.TransformResponse{Properties: &structpb.Struct{}}, nil
				}
				return rec.fn()
			},
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: &structpb.Struct{}})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, got []*pulumirpc.TransformRequest, resp []byte) {
				require.Len(t, got, 1)
				assert.NotNil(t, got[0].GetProperties(), "request properties")
				var res pulumirpc.TransformResponse
				require.NoError(t, proto.Unmarshal(resp, &res))
				assert.NotNil(t, res.GetProperties(), "response properties")
			},
		},
		{
			name: "nil options reach the function as nil",
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: mustStruct(t, map[string]any{"a": 1.0})})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, got []*pulumirpc.TransformRequest, _ []byte) {
				require.Len(t, got, 1)
				assert.Nil(t, got[0].GetOptions())
				assert.Len(t, got[0].GetProperties().GetFields(), 1)
			},
		},
		{
			// Each Struct level is three protobuf message levels (Struct,
			// map entry, Value), so Go's decoder, which stops at 10,000
			// levels, takes at most 3,333 Struct levels. The refusal is an
			// ordinary decode error, not a crash or a stall.
			name: "Struct nested 10,000 deep",
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: relNested(10_000)})
			},
			wantCode: codes.InvalidArgument,
			wantMsg:  "exceeded maximum recursion depth",
		},
		{
			name: "Struct nested 3,333 deep, the deepest that decodes",
			fn:   echoProperties,
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: relNested(3_333)})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, _ []*pulumirpc.TransformRequest, resp []byte) {
				var res pulumirpc.TransformResponse
				require.NoError(t, proto.Unmarshal(resp, &res))
				if !proto.Equal(res.GetProperties(), relNested(3_333)) {
					t.Error("the echoed properties differ from the request's")
				}
			},
		},
		{
			name: "100,000 properties",
			fn:   echoProperties,
			payload: func(t *testing.T) []byte {
				fields := make(map[string]*structpb.Value, 100_000)
				for i := range 100_000 {
					fields[fmt.Sprintf("p%06d", i)] = structpb.NewNumberValue(float64(i))
				}
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: &structpb.Struct{Fields: fields}})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, got []*pulumirpc.TransformRequest, resp []byte) {
				require.Len(t, got, 1)
				assert.Len(t, got[0].GetProperties().GetFields(), 100_000)
				var res pulumirpc.TransformResponse
				require.NoError(t, proto.Unmarshal(resp, &res))
				fields := res.GetProperties().GetFields()
				require.Len(t, fields, 100_000)
				assert.Equal(t, 99_999.0, fields["p099999"].GetNumberValue())
			},
		},
		{
			// 300 MiB, under the 400 MiB limit the engine also uses. The
			// function answers with a digest so that only the request is
			// huge. Measured on 2 cores: 3-8 s normally, 20-45 s with
			// -race (nearly all of it the race detector's shadow memory for
			// the several fresh 300 MiB buffers gRPC and protobuf fill),
			// hence long.
			name: "300 MiB payload",
			fn: fixed(callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) {
				sum := sha256.Sum256(b)
				return sum[:], nil
			})),
			payload:  func(*testing.T) []byte { return hugeBytes() },
			wantCode: codes.OK,
			check: func(t *testing.T, _ *pulumirpc.Callback, _ []*pulumirpc.TransformRequest, resp []byte) {
				want := sha256.Sum256(hugeBytes())
				if !bytes.Equal(resp, want[:]) {
					t.Error("the function did not receive the 300 MiB payload intact")
				}
			},
			long: true,
		},
		{
			name:     "payload over the server's message limit",
			srvOpts:  []callbacks.ServerOption{callbacks.MaxMessageSize(1 << 20)},
			payload:  func(*testing.T) []byte { return make([]byte, 2<<20) },
			wantCode: codes.ResourceExhausted,
			wantMsg:  "received message larger than max",
		},
		{
			// proto3 string fields must hold UTF-8; the decoder refuses
			// anything else, whatever accepts_byte_string says.
			name:     "non-UTF-8 string field",
			payload:  func(*testing.T) []byte { return relTransformWithBadType() },
			wantCode: codes.InvalidArgument,
			wantMsg:  "invalid UTF-8",
		},
		{
			name:     "non-UTF-8 property value without an envelope",
			payload:  func(*testing.T) []byte { return relTransformWithBadProperty() },
			wantCode: codes.InvalidArgument,
			wantMsg:  "invalid UTF-8",
		},
		{
			name:     "non-UTF-8 property value, byte strings refused",
			regOpts:  []callbacks.RegisterOption{callbacks.AcceptsByteStrings(false)},
			payload:  func(*testing.T) []byte { return relTransformWithBadProperty() },
			wantCode: codes.InvalidArgument,
			wantMsg:  "invalid UTF-8",
		},
		{
			// With accepts_byte_string set, the engine wraps such a string
			// in a byte-string envelope (base64 inside a signed object),
			// which is valid UTF-8 and reaches the function untouched.
			name: "non-UTF-8 property value in a byte-string envelope",
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: &structpb.Struct{
					Fields: map[string]*structpb.Value{"blob": relByteStringEnvelope(relBadUTF8)},
				}})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, cb *pulumirpc.Callback, got []*pulumirpc.TransformRequest, _ []byte) {
				assert.True(t, cb.GetAcceptsByteString(), "accepts_byte_string is on by default")
				require.Len(t, got, 1)
				env := got[0].GetProperties().GetFields()["blob"].GetStructValue().GetFields()
				assert.Equal(t, sig.ByteString, env[sig.Key].GetStringValue())
				raw, err := base64.StdEncoding.DecodeString(env["value"].GetStringValue())
				require.NoError(t, err)
				assert.Equal(t, relBadUTF8, string(raw))
			},
		},
		{
			// accepts_byte_string only tells the engine what it may send;
			// the server decodes payloads the same either way, so an
			// envelope sent anyway still arrives (the engine would have
			// failed the deployment instead of sending it).
			name:    "byte-string envelope to a registration that refuses byte strings",
			regOpts: []callbacks.RegisterOption{callbacks.AcceptsByteStrings(false)},
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Properties: &structpb.Struct{
					Fields: map[string]*structpb.Value{"blob": relByteStringEnvelope(relBadUTF8)},
				}})
			},
			wantCode: codes.OK,
			check: func(t *testing.T, cb *pulumirpc.Callback, got []*pulumirpc.TransformRequest, _ []byte) {
				assert.False(t, cb.GetAcceptsByteString())
				require.Len(t, got, 1)
			},
		},
		{
			name: "function returns a typed nil resource transform response",
			fn: fixed(callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				return nil, nil
			})),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.OK,
			check:    wantEmptyResponse,
		},
		{
			name: "function returns a typed nil invoke transform response",
			fn: fixed(callbacks.InvokeTransform(func(context.Context, *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				return nil, nil
			})),
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion"})
			},
			wantCode: codes.OK,
			check:    wantEmptyResponse,
		},
		{
			name: "function returns a typed nil resource hook response",
			fn: fixed(callbacks.ResourceHook(func(context.Context, *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				return nil, nil
			})),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, &pulumirpc.ResourceHookRequest{Urn: "urn:x"}) },
			wantCode: codes.OK,
			check:    wantEmptyResponse,
		},
		{
			name: "function returns a typed nil error hook response",
			fn: fixed(callbacks.ErrorHook(func(context.Context, *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
				return nil, nil
			})),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, errorHookReq) },
			wantCode: codes.OK,
			check:    wantEmptyResponse,
		},
		{
			name: "function returns a typed nil state migration response",
			fn: fixed(callbacks.StateMigration(func(context.Context, *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
				return nil, nil
			})),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, &pulumirpc.StateMigrationRequest{Urn: "urn:x"}) },
			wantCode: codes.OK,
			check:    wantEmptyResponse,
		},
		{
			name:     "raw function returns nil bytes",
			fn:       fixed(callbacks.Raw(func(context.Context, []byte) ([]byte, error) { return nil, nil })),
			payload:  func(*testing.T) []byte { return []byte("anything") },
			wantCode: codes.OK,
			check:    wantEmptyResponse,
		},
		{
			name:     "function error wrapping a gRPC status keeps its code",
			fn:       failing(fmt.Errorf("looking up quota: %w", status.Error(codes.ResourceExhausted, "quota exceeded for team infra"))),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.ResourceExhausted,
			wantMsg:  "quota exceeded for team infra",
		},
		{
			name:     "function returning a gRPC status keeps its code and message",
			fn:       failing(status.Error(codes.PermissionDenied, "tag policy forbids public buckets")),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.PermissionDenied,
			wantMsg:  "tag policy forbids public buckets",
		},
		{
			name:     "function returning a plain error is Unknown",
			fn:       failing(errors.New("tag policy violated")),
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.Unknown,
			wantMsg:  "tag policy violated",
		},
		{
			name: "response that does not encode is Internal",
			fn: func(rec *relTransformRecorder) callbacks.Func {
				rec.reply = func(*pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
					return &pulumirpc.TransformResponse{Properties: &structpb.Struct{
						Fields: map[string]*structpb.Value{"blob": structpb.NewStringValue(relBadUTF8)},
					}}, nil
				}
				return rec.fn()
			},
			payload:  func(t *testing.T) []byte { return mustMarshal(t, fullRequest) },
			wantCode: codes.Internal,
			wantMsg:  "response does not encode",
		},
		{
			// The envelope itself is decoded by grpc-go, which answers
			// Internal for a request message it cannot parse. The engine
			// always sends well-formed envelopes.
			name:     "garbage envelope",
			envelope: func(string) []byte { return []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f} },
			wantCode: codes.Internal,
			wantMsg:  "failed to unmarshal the received message",
		},
		{
			name: "non-UTF-8 token in the envelope",
			envelope: func(string) []byte {
				b := protowire.AppendTag(nil, 1, protowire.BytesType)
				return protowire.AppendString(b, "tok"+relBadUTF8)
			},
			wantCode: codes.Internal,
			wantMsg:  "invalid UTF-8",
		},
		{
			// Fields a newer engine might add to the envelope are skipped.
			name: "unknown envelope fields are ignored",
			envelope: func(token string) []byte {
				b := protowire.AppendTag(nil, 1, protowire.BytesType)
				b = protowire.AppendString(b, token)
				b = protowire.AppendTag(b, 99, protowire.VarintType)
				return protowire.AppendVarint(b, 7)
			},
			wantCode: codes.OK,
			check:    wantOneRequest(&pulumirpc.TransformRequest{}),
		},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.long && testing.Short() {
				t.Skip("slow under -race; runs without -short")
			}
			env := serve(t, tc.srvOpts...)
			rec := &relTransformRecorder{}
			fn := rec.fn()
			if tc.fn != nil {
				fn = tc.fn(rec)
			}
			cb := mustRegister(t, env.srv, fn, tc.regOpts...)
			token := cb.GetToken()
			if tc.token != nil {
				token = tc.token(token)
			}

			ctx := testCtx(t)
			var resp []byte
			var err error
			if tc.envelope != nil {
				var out pulumirpc.CallbackInvokeResponse
				err = env.conn.Invoke(ctx, pulumirpc.Callbacks_Invoke_FullMethodName, relEnvelope(tc.envelope(token)), &out)
				resp = out.GetResponse()
			} else {
				resp, err = env.invoke(ctx, token, tc.payload(t))
			}

			wantStatus(t, err, tc.wantCode, tc.wantMsg)
			if tc.wantCode != codes.OK && tc.fn == nil && len(rec.got()) != 0 {
				t.Errorf("a refused request reached the function")
			}
			if tc.wantCode == codes.OK && tc.check != nil {
				tc.check(t, cb, rec.got(), resp)
			}
		})
	}
}

// TestBadInputOversizedEcho: a status message travels in HTTP/2 trailers,
// and clients cap their size. A server that echoes an unbounded piece of the
// request into its error message lets one malformed call turn a clean
// NotFound or Internal into a transport error. With a client that announces
// its limit, grpc-go resets just that stream (Internal); with grpc-go's
// default client (16 MiB, not announced, as in the engine) the trailer is
// sent anyway and the client tears down the whole connection, failing every
// other call in flight on the engine's shared, cached connection. Echoed
// request data must be bounded.
func TestBadInputOversizedEcho(t *testing.T) {
	t.Parallel()
	const maxMsg = 4 << 10

	panicking := callbacks.ResourceTransform(func(context.Context, *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
		panic("boom")
	})
	cases := []struct {
		name string
		// headerLimit is the client's announced header list limit; zero
		// keeps grpc-go's default.
		headerLimit uint32
		fn          callbacks.Func
		token       func(registered string) string
		payload     func(t *testing.T) []byte
		wantCode    codes.Code
		wantMsg     string
		// long rows are skipped with -short: while the echo is
		// unbounded, pushing 17 MiB through HPACK takes tens of seconds
		// under -race.
		long bool
	}{
		{
			name:        "unknown 1 MiB token",
			headerLimit: 64 << 10,
			token:       func(string) string { return strings.Repeat("t", 1<<20) },
			payload:     func(*testing.T) []byte { return nil },
			wantCode:    codes.NotFound,
			wantMsg:     "unknown callback token",
		},
		{
			name:        "panicking transform for a resource with a 1 MiB name",
			headerLimit: 64 << 10,
			fn:          panicking,
			payload: func(t *testing.T) []byte {
				return mustMarshal(t, &pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: strings.Repeat("n", 1<<20)})
			},
			wantCode: codes.Internal,
			wantMsg:  "panicked",
		},
		{
			name:     "unknown 17 MiB token, engine-like client",
			token:    func(string) string { return strings.Repeat("t", 17<<20) },
			payload:  func(*testing.T) []byte { return nil },
			wantCode: codes.NotFound,
			wantMsg:  "unknown callback token",
			long:     true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.long && testing.Short() {
				t.Skip("slow under -race while the echo is unbounded; runs without -short")
			}
			env := serve(t)
			conn := env.conn
			if tc.headerLimit != 0 {
				conn = env.dial(t, grpc.WithMaxHeaderListSize(tc.headerLimit))
			}
			client := pulumirpc.NewCallbacksClient(conn)
			ctx := testCtx(t)

			// A call in flight on the same connection, as the engine has
			// while it runs transforms concurrently.
			release := make(chan struct{})
			entered := make(chan struct{})
			bystander := mustRegister(t, env.srv, callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
				close(entered)
				<-release
				return []byte("done"), nil
			}))
			bystanderErr := make(chan error, 1)
			go func() {
				_, err := client.Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: bystander.GetToken()})
				bystanderErr <- err
			}()
			select {
			case <-entered:
			case <-ctx.Done():
				t.Fatal("the bystander call never started")
			}

			token := ""
			if callbacks.KindOf(tc.fn) != 0 {
				token = mustRegister(t, env.srv, tc.fn).GetToken()
			}
			if tc.token != nil {
				token = tc.token(token)
			}
			_, err := client.Invoke(ctx, &pulumirpc.CallbackInvokeRequest{Token: token, Request: tc.payload(t)})
			close(release)

			st := status.Convert(err)
			assert.Equal(t, tc.wantCode, st.Code(), "code (message %q)", clipped(st.Message()))
			assert.True(t, strings.Contains(st.Message(), tc.wantMsg), "message %q does not contain %q", clipped(st.Message()), tc.wantMsg)
			assert.LessOrEqual(t, len(st.Message()), maxMsg, "status message length")
			assert.NoError(t, <-bystanderErr, "the other call on the connection")
		})
	}
}
