package callbacks_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/langhost/callbacks"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Fuzz targets for the Invoke path. Each registers one echoing function of
// its kind and throws arbitrary payloads and tokens at it. The oracle is
// exact: a payload that protobuf decodes must succeed with the echo (or fail
// with Internal when it asks the function to panic), one that does not must
// fail with InvalidArgument, an empty token with InvalidArgument and an
// unknown one with NotFound. Whatever happens, no panic escapes, every error
// is a *callbacks.Error with a documented code, and no call hangs.
//
// Long runs, one target at a time (see the README):
//
//	go test -run='^$' -fuzz='^FuzzInvokeResourceTransform$' -fuzztime=10m .

// relFuzzHang bounds one fuzz input. A call takes microseconds; this only
// turns a hang into a failure on that input, so it is the same guard as
// every other test's.
const relFuzzHang = hangBound

// relPanicMarker in a request's chosen string field makes the fuzzed
// function panic, so the panic path is fuzzed too.
const relPanicMarker = "panic"

// relDocumentedCodes are the codes the package documents for Invoke errors.
var relDocumentedCodes = []codes.Code{
	codes.NotFound, codes.InvalidArgument, codes.Internal,
	codes.DeadlineExceeded, codes.Canceled, codes.Unknown,
}

// relFuzzKind is what the fuzz targets need to know about one kind.
type relFuzzKind struct {
	kind callbacks.Kind
	// newReq and newRes return empty request and response messages; nil
	// for the raw kind, whose payload is not decoded.
	newReq, newRes func() proto.Message
	// respond is the function's answer; marker returns the field that, when
	// it equals relPanicMarker, makes the function panic.
	respond func(req proto.Message) proto.Message
	marker  func(req proto.Message) string
	// fn wraps respond and marker into a registrable function.
	fn func() callbacks.Func
	// seeds are real requests of this kind.
	seeds func() []proto.Message
}

// relFuzzKinds describes every kind, in Kind order.
func relFuzzKinds() []relFuzzKind {
	kinds := []relFuzzKind{
		{
			kind:   callbacks.KindResourceTransform,
			newReq: func() proto.Message { return new(pulumirpc.TransformRequest) },
			newRes: func() proto.Message { return new(pulumirpc.TransformResponse) },
			respond: func(m proto.Message) proto.Message {
				r := m.(*pulumirpc.TransformRequest)
				return &pulumirpc.TransformResponse{Properties: r.GetProperties(), Options: r.GetOptions()}
			},
			marker: func(m proto.Message) string { return m.(*pulumirpc.TransformRequest).GetName() },
			seeds:  relTransformSeeds,
		},
		{
			kind:   callbacks.KindInvokeTransform,
			newReq: func() proto.Message { return new(pulumirpc.TransformInvokeRequest) },
			newRes: func() proto.Message { return new(pulumirpc.TransformInvokeResponse) },
			respond: func(m proto.Message) proto.Message {
				r := m.(*pulumirpc.TransformInvokeRequest)
				return &pulumirpc.TransformInvokeResponse{Args: r.GetArgs(), Options: r.GetOptions()}
			},
			marker: func(m proto.Message) string { return m.(*pulumirpc.TransformInvokeRequest).GetToken() },
			seeds:  relInvokeTransformSeeds,
		},
		{
			kind:   callbacks.KindResourceHook,
			newReq: func() proto.Message { return new(pulumirpc.ResourceHookRequest) },
			newRes: func() proto.Message { return new(pulumirpc.ResourceHookResponse) },
			respond: func(m proto.Message) proto.Message {
				r := m.(*pulumirpc.ResourceHookRequest)
				if r.GetNewOutputs() == nil {
					return nil // typed nil: an empty response
				}
				return &pulumirpc.ResourceHookResponse{Error: r.GetType()}
			},
			marker: func(m proto.Message) string { return m.(*pulumirpc.ResourceHookRequest).GetName() },
			seeds:  relResourceHookSeeds,
		},
		{
			kind:   callbacks.KindErrorHook,
			newReq: func() proto.Message { return new(pulumirpc.ErrorHookRequest) },
			newRes: func() proto.Message { return new(pulumirpc.ErrorHookResponse) },
			respond: func(m proto.Message) proto.Message {
				r := m.(*pulumirpc.ErrorHookRequest)
				return &pulumirpc.ErrorHookResponse{Retry: len(r.GetErrors()) < 3, Error: r.GetFailedOperation()}
			},
			marker: func(m proto.Message) string { return m.(*pulumirpc.ErrorHookRequest).GetName() },
			seeds:  relErrorHookSeeds,
		},
		{
			kind:   callbacks.KindStateMigration,
			newReq: func() proto.Message { return new(pulumirpc.StateMigrationRequest) },
			newRes: func() proto.Message { return new(pulumirpc.StateMigrationResponse) },
			respond: func(m proto.Message) proto.Message {
				r := m.(*pulumirpc.StateMigrationRequest)
				return &pulumirpc.StateMigrationResponse{NewState: r.GetOldState(), Successors: map[string]string{r.GetUrn(): r.GetUrn()}}
			},
			marker: func(m proto.Message) string { return m.(*pulumirpc.StateMigrationRequest).GetUrn() },
			seeds:  relStateMigrationSeeds,
		},
		{
			kind:  callbacks.KindRaw,
			seeds: func() []proto.Message { return nil },
		},
	}
	for i := range kinds {
		k := &kinds[i]
		k.fn = relFuzzFunc(k)
	}
	return kinds
}

// relFuzzFunc builds the registered function for k: panic on the marker,
// otherwise answer with respond.
func relFuzzFunc(k *relFuzzKind) func() callbacks.Func {
	answer := func(req proto.Message) proto.Message {
		if k.marker(req) == relPanicMarker {
			panic("fuzzed panic: " + relPanicMarker)
		}
		return k.respond(req)
	}
	switch k.kind {
	case callbacks.KindResourceTransform:
		return func() callbacks.Func {
			return callbacks.ResourceTransform(func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
				res, _ := answer(r).(*pulumirpc.TransformResponse)
				return res, nil
			})
		}
	case callbacks.KindInvokeTransform:
		return func() callbacks.Func {
			return callbacks.InvokeTransform(func(_ context.Context, r *pulumirpc.TransformInvokeRequest) (*pulumirpc.TransformInvokeResponse, error) {
				res, _ := answer(r).(*pulumirpc.TransformInvokeResponse)
				return res, nil
			})
		}
	case callbacks.KindResourceHook:
		return func() callbacks.Func {
			return callbacks.ResourceHook(func(_ context.Context, r *pulumirpc.ResourceHookRequest) (*pulumirpc.ResourceHookResponse, error) {
				res, _ := answer(r).(*pulumirpc.ResourceHookResponse)
				return res, nil
			})
		}
	case callbacks.KindErrorHook:
		return func() callbacks.Func {
			return callbacks.ErrorHook(func(_ context.Context, r *pulumirpc.ErrorHookRequest) (*pulumirpc.ErrorHookResponse, error) {
				res, _ := answer(r).(*pulumirpc.ErrorHookResponse)
				return res, nil
			})
		}
	case callbacks.KindStateMigration:
		return func() callbacks.Func {
			return callbacks.StateMigration(func(_ context.Context, r *pulumirpc.StateMigrationRequest) (*pulumirpc.StateMigrationResponse, error) {
				res, _ := answer(r).(*pulumirpc.StateMigrationResponse)
				return res, nil
			})
		}
	}
	return func() callbacks.Func {
		return callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) {
			if string(b) == relPanicMarker {
				panic("fuzzed panic: " + relPanicMarker)
			}
			return b, nil
		})
	}
}

// relExpect is what the oracle predicts for one call.
type relExpect struct {
	code codes.Code
	is   error          // the sentinel the error wraps, for failures
	kind callbacks.Kind // the error's Kind, for failures
	// resp is the expected response message (nil: an empty response);
	// raw holds it instead for the raw kind.
	resp proto.Message
	raw  []byte
}

// predict says what calling k's function with payload under token must do.
func (k *relFuzzKind) predict(token, registered string, payload []byte) relExpect {
	switch {
	case token == "":
		return relExpect{code: codes.InvalidArgument, is: callbacks.ErrInvalidRequest}
	case token != registered:
		return relExpect{code: codes.NotFound, is: callbacks.ErrUnknownToken}
	case k.newReq == nil:
		if string(payload) == relPanicMarker {
			return relExpect{code: codes.Internal, is: callbacks.ErrPanicked, kind: k.kind}
		}
		return relExpect{code: codes.OK, raw: payload}
	}
	req := k.newReq()
	if err := proto.Unmarshal(payload, req); err != nil {
		return relExpect{code: codes.InvalidArgument, is: callbacks.ErrInvalidRequest, kind: k.kind}
	}
	if k.marker(req) == relPanicMarker {
		return relExpect{code: codes.Internal, is: callbacks.ErrPanicked, kind: k.kind}
	}
	return relExpect{code: codes.OK, resp: k.respond(req)}
}

// checkResponse compares a successful call's response bytes with want.
func (k *relFuzzKind) checkResponse(t *testing.T, want relExpect, out []byte) {
	t.Helper()
	if k.newRes == nil {
		if !bytes.Equal(out, want.raw) {
			t.Fatalf("raw response %q, want the payload %q back", out, want.raw)
		}
		return
	}
	got := k.newRes()
	if err := proto.Unmarshal(out, got); err != nil {
		t.Fatalf("the response does not decode as %T: %v", got, err)
	}
	wantRes := k.newRes()
	if want.resp != nil {
		proto.Merge(wantRes, want.resp)
	}
	if !proto.Equal(got, wantRes) {
		t.Fatalf("response %v, want %v", got, wantRes)
	}
}

// relGuarded runs call on its own goroutine, turning an escaped panic or a
// hang into a test failure.
func relGuarded(t *testing.T, call func() ([]byte, error)) ([]byte, error) {
	t.Helper()
	type result struct {
		out      []byte
		err      error
		panicked any
		ok       bool
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if !r.ok {
				r.panicked = recover()
			}
			ch <- r
		}()
		r.out, r.err = call()
		r.ok = true
	}()
	timer := time.NewTimer(relFuzzHang)
	defer timer.Stop()
	select {
	case r := <-ch:
		if !r.ok {
			t.Fatalf("a panic escaped Invoke: %v", r.panicked)
		}
		return r.out, r.err
	case <-timer.C:
		t.Fatalf("Invoke did not return within %v", relFuzzHang)
	}
	return nil, nil
}

// relCheckError checks the invariants every Invoke error must meet and
// returns it as a *callbacks.Error.
func relCheckError(t *testing.T, err error) *callbacks.Error {
	t.Helper()
	var ce *callbacks.Error
	if !errors.As(err, &ce) || ce == nil {
		t.Fatalf("error %v (%T) is not a *callbacks.Error", err, err)
	}
	if !slices.Contains(relDocumentedCodes, ce.Code) {
		t.Fatalf("code %v is not one the package documents (%v)", ce.Code, err)
	}
	if ce.Msg == "" || ce.Error() != ce.Msg {
		t.Fatalf("message %q, Error() %q", ce.Msg, ce.Error())
	}
	if st := status.Convert(err); st.Code() != ce.Code || st.Message() != ce.Msg {
		t.Fatalf("gRPC status %v %q, want %v %q", st.Code(), st.Message(), ce.Code, ce.Msg)
	}
	noStack(t, ce.Msg)
	return ce
}

// relFuzzRegistry is the body shared by the registry fuzz targets.
func relFuzzRegistry(f *testing.F, k relFuzzKind) {
	reg := newTestRegistry(f)
	registered, err := reg.Register(k.fn(), callbacks.Name("fuzzed"))
	require.NoError(f, err)
	for _, s := range relSeedPayloads(f, k) {
		f.Add(s, "", true)
	}
	f.Add([]byte("payload"), "", false)
	f.Add([]byte{}, "0b8f0f4e-3f7c-4e8e-9d61-5d1c7a3f2b10", false)
	f.Add([]byte{0x0a}, "tok"+relBadUTF8, false)

	f.Fuzz(func(t *testing.T, payload []byte, token string, useRegistered bool) {
		if useRegistered {
			token = registered
		}
		want := k.predict(token, registered, payload)
		out, err := relGuarded(t, func() ([]byte, error) { return reg.Invoke(context.Background(), token, payload) })
		if want.code == codes.OK {
			if err != nil {
				t.Fatalf("got error %v, want success", err)
			}
			k.checkResponse(t, want, out)
			return
		}
		if err == nil {
			t.Fatalf("got success, want %v", want.code)
		}
		ce := relCheckError(t, err)
		if ce.Code != want.code || !errors.Is(err, want.is) || ce.Kind != want.kind {
			t.Fatalf("got %v %v (kind %v), want %v %v (kind %v)", ce.Code, err, ce.Kind, want.code, want.is, want.kind)
		}
		if want.kind != 0 && ce.Name != "fuzzed" {
			t.Fatalf("error names registration %q, want %q", ce.Name, "fuzzed")
		}
	})
}

func FuzzInvokeResourceTransform(f *testing.F) { relFuzzRegistry(f, relFuzzKinds()[0]) }
func FuzzInvokeInvokeTransform(f *testing.F)   { relFuzzRegistry(f, relFuzzKinds()[1]) }
func FuzzInvokeResourceHook(f *testing.F)      { relFuzzRegistry(f, relFuzzKinds()[2]) }
func FuzzInvokeErrorHook(f *testing.F)         { relFuzzRegistry(f, relFuzzKinds()[3]) }
func FuzzInvokeStateMigration(f *testing.F)    { relFuzzRegistry(f, relFuzzKinds()[4]) }
func FuzzInvokeRaw(f *testing.F)               { relFuzzRegistry(f, relFuzzKinds()[5]) }

// FuzzServerInvoke goes through a real gRPC server over bufconn, with one
// registration of every kind; which picks the registration (or, past the
// last, the fuzzed token). The envelope is written by hand so that any token
// bytes reach the server, including ones a client would refuse to encode.
func FuzzServerInvoke(f *testing.F) {
	kinds := relFuzzKinds()
	env := serve(f)
	tokens := make([]string, len(kinds))
	for i, k := range kinds {
		tokens[i] = mustRegister(f, env.srv, k.fn(), callbacks.Name("fuzzed")).GetToken()
		for _, s := range relSeedPayloads(f, k) {
			f.Add(s, "", uint8(i))
		}
	}
	f.Add([]byte("payload"), "", uint8(len(kinds)))
	f.Add([]byte{}, "0b8f0f4e-3f7c-4e8e-9d61-5d1c7a3f2b10", uint8(len(kinds)))
	f.Add([]byte{0x0a}, "tok"+relBadUTF8, uint8(len(kinds)))

	f.Fuzz(func(t *testing.T, payload []byte, token string, which uint8) {
		k := kinds[0]
		registered := tokens[0]
		if i := int(which) % (len(kinds) + 1); i < len(kinds) {
			k, registered, token = kinds[i], tokens[i], tokens[i]
		}
		envelope := protowire.AppendTag(nil, 1, protowire.BytesType)
		envelope = protowire.AppendString(envelope, token)
		envelope = protowire.AppendTag(envelope, 2, protowire.BytesType)
		envelope = protowire.AppendBytes(envelope, payload)

		ctx, cancel := context.WithTimeout(context.Background(), relFuzzHang)
		defer cancel()
		var res pulumirpc.CallbackInvokeResponse
		err := env.conn.Invoke(ctx, pulumirpc.Callbacks_Invoke_FullMethodName, relEnvelope(envelope), &res)
		if ctx.Err() != nil {
			t.Fatalf("the call did not end within %v: %v", relFuzzHang, err)
		}
		st := status.Convert(err)
		noStack(t, st.Message())
		if !utf8.ValidString(token) {
			// grpc-go refuses the envelope before the registry sees it.
			if st.Code() != codes.Internal {
				t.Fatalf("non-UTF-8 token: got %v %q, want Internal", st.Code(), st.Message())
			}
			return
		}
		want := k.predict(token, registered, payload)
		if st.Code() != want.code {
			t.Fatalf("got %v %q, want %v", st.Code(), st.Message(), want.code)
		}
		if want.code == codes.OK {
			k.checkResponse(t, want, res.GetResponse())
		}
	})
}

// relSeedPayloads turns k's seed requests into payloads, adding the generic
// awkward ones: empty, garbage, truncated, another kind's, the panic marker.
func relSeedPayloads(tb testing.TB, k relFuzzKind) [][]byte {
	out := [][]byte{nil, {0xff, 0xff, 0xff}, []byte(relPanicMarker)}
	for _, m := range k.seeds() {
		b, err := proto.Marshal(m)
		require.NoError(tb, err)
		out = append(out, b)
		if len(b) > 1 {
			out = append(out, b[:len(b)/2])
		}
	}
	other := relErrorHookSeeds()[0]
	if k.kind == callbacks.KindErrorHook {
		other = relTransformSeeds()[0]
	}
	b, err := proto.Marshal(other)
	require.NoError(tb, err)
	return append(out, b)
}

// relSeedProps is a property map shaped like the engine's: plain values,
// a secret and an unknown as output values, a resource reference, an asset,
// a byte string and nesting.
func relSeedProps() *structpb.Struct {
	obj := func(fields map[string]*structpb.Value) *structpb.Value {
		return structpb.NewStructValue(&structpb.Struct{Fields: fields})
	}
	str := structpb.NewStringValue
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"acl":  str("private"),
		"size": structpb.NewNumberValue(3),
		"tags": obj(map[string]*structpb.Value{"team": str("infra"), "cost-center": str("42")}),
		"list": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{str("a"), structpb.NewBoolValue(true), structpb.NewNullValue()}}),
		"password": obj(map[string]*structpb.Value{
			sig.Key: str(sig.OutputValue), "secret": structpb.NewBoolValue(true), "value": str("hunter2"),
		}),
		"arn": obj(map[string]*structpb.Value{
			sig.Key: str(sig.OutputValue),
			"dependencies": structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{
				str("urn:pulumi:dev::proj::aws:iam/role:Role::r"),
			}}),
		}),
		"role": obj(map[string]*structpb.Value{
			sig.Key: str(sig.ResourceReference), "urn": str("urn:pulumi:dev::proj::aws:iam/role:Role::r"),
			"id": str("r-123"), "packageVersion": str("6.0.0"),
		}),
		"code": obj(map[string]*structpb.Value{
			sig.Key: str(sig.AssetSig), "hash": str("abc123"), "text": str("print('hi')"),
		}),
		"blob":    relByteStringEnvelope(relBadUTF8),
		"unknown": str(sig.UnknownStringValue),
		"deep":    structpb.NewStructValue(relNested(8)),
	}}
}

func relSeedOptions() *pulumirpc.ResourceOptions {
	protect := true
	return &pulumirpc.ResourceOptions{
		DependsOn: []string{"urn:pulumi:dev::proj::aws:s3/bucket:Bucket::other"}, Protect: &protect,
		IgnoreChanges: []string{"tags"}, Version: "6.0.0", Provider: "urn:pulumi:dev::proj::pulumi:providers:aws::default::id",
		CustomTimeouts: &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "16m40s"},
		Providers:      map[string]string{"aws": "urn:pulumi:dev::proj::pulumi:providers:aws::p::id"},
		Hooks:          &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"audit"}},
	}
}

func relTransformSeeds() []proto.Message {
	protect, retain := true, false
	return []proto.Message{
		&pulumirpc.TransformRequest{
			Type: "aws:s3/bucket:Bucket", Name: "logs", Custom: true,
			Parent:     "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev",
			Properties: relSeedProps(),
			Options: &pulumirpc.TransformResourceOptions{
				DependsOn: []string{"urn:pulumi:dev::proj::aws:s3/bucket:Bucket::other"}, Protect: &protect,
				IgnoreChanges: []string{"tags"}, ReplaceOnChanges: []string{"acl"}, Version: "6.0.0",
				Aliases: []*pulumirpc.Alias{
					{Alias: &pulumirpc.Alias_Urn{Urn: "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::old"}},
					{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{Name: "older", Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true}}}},
				},
				Provider:          "urn:pulumi:dev::proj::pulumi:providers:aws::default::id",
				CustomTimeouts:    &pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "16m40s", Delete: "1h"},
				PluginDownloadUrl: "https://example.com/plugins", RetainOnDelete: &retain,
				DeletedWith:             "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::other",
				AdditionalSecretOutputs: []string{"arn"},
				Providers:               map[string]string{"aws": "urn:pulumi:dev::proj::pulumi:providers:aws::p::id"},
				PluginChecksums:         map[string][]byte{"linux-amd64": {0xde, 0xad, 0xbe, 0xef}},
				Hooks:                   &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"audit"}, OnError: []string{"retry"}},
				Import:                  "bucket-123", HideDiff: []string{"tags"}, ReplaceWith: []string{"urn:x"},
				ReplacementTrigger: structpb.NewStringValue("v2"),
			},
		},
		&pulumirpc.TransformRequest{Type: "my:index:Component", Name: "comp"},
		&pulumirpc.TransformRequest{Type: "pkg:index:Thing", Name: relPanicMarker, Properties: &structpb.Struct{}},
	}
}

func relInvokeTransformSeeds() []proto.Message {
	return []proto.Message{
		&pulumirpc.TransformInvokeRequest{
			Token: "aws:index/getRegion:getRegion",
			Args:  relSeedProps(),
			Options: &pulumirpc.TransformInvokeOptions{
				Provider: "urn:pulumi:dev::proj::pulumi:providers:aws::default::id", Version: "6.0.0",
				PluginDownloadUrl: "https://example.com", PluginChecksums: map[string][]byte{"darwin-arm64": {1, 2}},
			},
		},
		&pulumirpc.TransformInvokeRequest{Token: "pkg:index:noArgs"},
		&pulumirpc.TransformInvokeRequest{Token: relPanicMarker},
	}
}

func relResourceHookSeeds() []proto.Message {
	return []proto.Message{
		&pulumirpc.ResourceHookRequest{
			Urn: "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs", Id: "logs-123", Name: "logs", Type: "aws:s3/bucket:Bucket",
			NewInputs: relSeedProps(), OldInputs: &structpb.Struct{Fields: map[string]*structpb.Value{"acl": structpb.NewStringValue("public")}},
			NewOutputs: relSeedProps(), OldOutputs: &structpb.Struct{},
			OldOptions: relSeedOptions(), NewOptions: relSeedOptions(),
		},
		&pulumirpc.ResourceHookRequest{Urn: "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs", Name: "logs"},
		&pulumirpc.ResourceHookRequest{Name: relPanicMarker, NewOutputs: &structpb.Struct{}},
	}
}

func relErrorHookSeeds() []proto.Message {
	return []proto.Message{
		&pulumirpc.ErrorHookRequest{
			Urn: "urn:pulumi:dev::proj::aws:s3/bucket:Bucket::logs", Id: "logs-123", Name: "logs", Type: "aws:s3/bucket:Bucket",
			NewInputs: relSeedProps(), OldInputs: &structpb.Struct{}, OldOutputs: relSeedProps(),
			FailedOperation: "create", Errors: []string{"throttled", "throttled again"},
			OldOptions: relSeedOptions(), NewOptions: relSeedOptions(),
		},
		&pulumirpc.ErrorHookRequest{Urn: "urn:x", FailedOperation: "delete", Errors: []string{"a", "b", "c"}},
		&pulumirpc.ErrorHookRequest{Name: relPanicMarker, Errors: []string{"x"}},
	}
}

func relStateMigrationSeeds() []proto.Message {
	return []proto.Message{
		&pulumirpc.StateMigrationRequest{
			Urn:      "urn:pulumi:dev::proj::my:index:Thing::a",
			OldState: []byte(`{"version":1,"items":[{"name":"x","size":3}],"secret":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"s"}}`),
		},
		&pulumirpc.StateMigrationRequest{Urn: "urn:pulumi:dev::proj::my:index:Thing::b", OldState: []byte{0xff, 0x00, 0xfe}},
		&pulumirpc.StateMigrationRequest{Urn: relPanicMarker},
	}
}

// relUpdateCorpus rewrites the seed files under testdata/fuzz.
var relUpdateCorpus = flag.Bool("update-fuzz-corpus", false, "rewrite the seed files under testdata/fuzz")

// relCorpusFiles are regression inputs kept as files, so that a long
// fuzzing run starts from them too. They are built here; run
// `go test -run TestFuzzCorpusFiles -update-fuzz-corpus .` to rewrite them.
// Deep nesting is left to the bad-input table: a 3,000-level seed makes
// every mutation of it slow to decode and stalls the fuzzer's minimizer.
func relCorpusFiles(tb testing.TB) map[string][]any {
	marshal := func(m proto.Message) []byte { // stable bytes: maps sorted
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		require.NoError(tb, err)
		return b
	}
	files := map[string][]any{
		"FuzzInvokeResourceTransform/bad-utf8-property": {relTransformWithBadProperty(), "", true},
		"FuzzInvokeResourceTransform/bad-utf8-type":     {relTransformWithBadType(), "", true},
		"FuzzInvokeResourceTransform/error-hook-bytes":  {marshal(relErrorHookSeeds()[0]), "", true},
		"FuzzInvokeStateMigration/non-json-state":       {marshal(relStateMigrationSeeds()[1]), "", true},
		"FuzzInvokeErrorHook/transform-bytes":           {marshal(relTransformSeeds()[0]), "", true},
		"FuzzInvokeRaw/unknown-token":                   {[]byte("x"), uuid.NameSpaceURL.String(), false},
		"FuzzServerInvoke/bad-utf8-token":               {[]byte{}, "tok" + relBadUTF8, uint8(6)},
		"FuzzServerInvoke/cross-kind":                   {marshal(relTransformSeeds()[0]), "", uint8(4)},
	}
	return files
}

// relEncodeCorpus writes values in the file format of Go's fuzzing corpus.
func relEncodeCorpus(values []any) []byte {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case bool:
			fmt.Fprintf(&b, "bool(%v)\n", v)
		case uint8:
			fmt.Fprintf(&b, "byte(%q)\n", v)
		default:
			panic(fmt.Sprintf("unsupported corpus value %T", v))
		}
	}
	return []byte(b.String())
}

// The seed files under testdata/fuzz are exactly what relCorpusFiles builds.
func TestFuzzCorpusFiles(t *testing.T) {
	t.Parallel()
	files := relCorpusFiles(t)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join("testdata", "fuzz", filepath.FromSlash(name))
		want := relEncodeCorpus(files[name])
		if *relUpdateCorpus {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, want, 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run with -update-fuzz-corpus to create it")
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date; run with -update-fuzz-corpus", path)
		}
	}
}
