package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// The monitor's methods that register callbacks, as the synthetic logs
// name them.
const (
	stackTransform  = "RegisterStackTransform"
	invokeTransform = "RegisterStackInvokeTransform"
	resourceHook    = "RegisterResourceHook"
	errorHook       = "RegisterErrorHook"
)

// writeSyntheticLog writes the gRPC log (two entries per call, as CLI
// 3.274.1 writes it) of a `pulumi up` of a program that registers a stack
// transform and a before-create hook, then `resources` RandomPets, each
// transformed (the transform adds a "prefix" property and binds the hook)
// and hooked: 2×resources callback calls, in the order the engine makes
// them. Tokens and timestamps are fixed, so the same call writes the same
// bytes.
func writeSyntheticLog(w io.Writer, resources int) error {
	return writeSynthetic(w, synthetic{resources: resources})
}

// synthetic says what writeSynthetic puts in a log.
type synthetic struct {
	resources int
	// oneEntry writes the old form: one entry per call, no progress, a
	// resource's RegisterResource after its callbacks' calls.
	oneEntry bool
	// every adds every other kind: a resource's own transform and state
	// migration on each resource, a stack invoke transform and its call, an
	// error hook and a retry, a registration of a kind this module does not
	// know and its call, a callback in a field of RegisterResource this
	// module does not know and its call, and a call whose payload does not
	// decode.
	every bool
	// secret, if set, is the program's secret: in its configuration, in
	// every resource's inputs, payloads and state. plain is a plain
	// configuration value, in every resource's inputs and payloads too.
	secret, plain string
}

const (
	synthStack   = "urn:pulumi:dev::synth::pulumi:pulumi:Stack::synth-dev"
	synthPetType = "random:index/randomPet:RandomPet"
)

type synthEntry struct {
	Method    string            `json:"method"`
	Request   any               `json:"request,omitempty"`
	Response  any               `json:"response,omitempty"`
	Errors    []string          `json:"errors,omitempty"`
	Metadata  map[string]string `json:"metadata"`
	Progress  string            `json:"progress,omitempty"`
	Timestamp string            `json:"timestamp"`
	Duration  int64             `json:"duration,omitempty"`
}

type synthWriter struct {
	o   synthetic
	w   *bufio.Writer
	enc *json.Encoder
	now time.Time
	err error
}

var (
	serverMeta    = map[string]string{"mode": "server"}
	callbacksMeta = map[string]string{"kind": "callbacks", "mode": "client"}
	languageMeta  = map[string]string{"kind": "language", "mode": "client", "runtime": "go"}
	providerMeta  = map[string]string{"kind": "resource", "mode": "client", "name": "random"}
)

// started writes a request_started entry (nothing in the old form).
func (s *synthWriter) started(method string, req any, meta map[string]string) {
	if s.o.oneEntry {
		return
	}
	ts := s.now.Format(time.RFC3339Nano)
	if meta["mode"] == "server" {
		ts = "0001-01-01T00:00:00Z"
	}
	s.write(synthEntry{Method: method, Request: req, Metadata: meta, Progress: requestStarted, Timestamp: ts})
}

// completed writes a call's completing entry.
func (s *synthWriter) completed(method string, req, res any, errs []string, meta map[string]string) {
	s.now = s.now.Add(1500 * time.Microsecond)
	e := synthEntry{Method: method, Request: req, Response: res, Errors: errs, Metadata: meta,
		Timestamp: s.now.Format(time.RFC3339Nano), Duration: int64(1200 * time.Microsecond)}
	if !s.o.oneEntry {
		e.Progress = "response_completed"
	}
	if meta["mode"] == "server" {
		e.Duration = 1<<63 - 1
	}
	s.write(e)
}

func (s *synthWriter) call(method string, req, res any, errs []string, meta map[string]string) {
	s.started(method, req, meta)
	s.completed(method, req, res, errs, meta)
}

func (s *synthWriter) write(e synthEntry) {
	if s.err == nil {
		s.err = s.enc.Encode(e)
	}
}

// invoke writes a callback call with the given messages (res nil: failed
// with errs).
func (s *synthWriter) invoke(token string, req, res proto.Message, errs []string) {
	s.invokeRaw(token, mustMarshal(req), res, errs)
}

func (s *synthWriter) invokeRaw(token string, req []byte, res proto.Message, errs []string) {
	r := map[string]any{"token": token, "request": req}
	var out any
	if res != nil {
		out = map[string]any{"response": mustMarshal(res)}
	}
	s.call(invokeMethod, r, out, errs, callbacksMeta)
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(err)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// secretJSON is a secret envelope in a protojson body.
func secretJSON(v any) map[string]any {
	return map[string]any{sig.Key: sig.Secret, "value": v}
}

// secretPB is a secret envelope in a protobuf Struct.
func secretPB(v string) *structpb.Value {
	return structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
		sig.Key: structpb.NewStringValue(sig.Secret), "value": structpb.NewStringValue(v),
	}})
}

func writeSynthetic(w io.Writer, o synthetic) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	s := &synthWriter{o: o, w: bw, enc: json.NewEncoder(bw), now: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)}
	s.enc.SetEscapeHTML(false)

	// The language host runs the program with its configuration.
	run := map[string]any{"project": "synth", "stack": "dev", "program": ".", "parallel": 8, "monitorAddress": "127.0.0.1:1"}
	if o.secret != "" {
		run["config"] = map[string]string{"synth:password": o.secret, "synth:region": o.plain}
		run["configSecretKeys"] = []string{"synth:password"}
	}
	s.started(runMethod, run, languageMeta)
	info := map[string]any{"project": "synth", "stack": "dev"}
	if o.secret != "" {
		info["config"], info["configSecretKeys"] = run["config"], run["configSecretKeys"]
	}
	s.call(deploymentInfo, map[string]any{}, info, nil, serverMeta)

	stack := map[string]any{"type": rootStackType, "name": "synth-dev", "object": map[string]any{}}
	s.started(monitorPrefix+registerRes, stack, serverMeta)
	transform := map[string]any{"target": "127.0.0.1:2", "token": "stack-transform", "acceptsByteString": true}
	s.call(monitorPrefix+stackTransform, transform, map[string]any{}, nil, serverMeta)
	hook := map[string]any{"name": "audit", "callback": map[string]any{"target": "127.0.0.1:2", "token": "audit-hook"}}
	s.call(monitorPrefix+resourceHook, hook, map[string]any{}, nil, serverMeta)
	if o.every {
		s.call(monitorPrefix+invokeTransform, map[string]any{"target": "127.0.0.1:2", "token": "invoke-transform"}, map[string]any{}, nil, serverMeta)
		s.call(monitorPrefix+errorHook, map[string]any{"name": "retry", "callback": map[string]any{"target": "127.0.0.1:2", "token": "error-hook"}}, map[string]any{}, nil, serverMeta)
		s.call(monitorPrefix+"RegisterFutureHook", map[string]any{"name": "future", "future": map[string]any{"target": "127.0.0.1:2", "token": "future-hook"}}, map[string]any{}, nil, serverMeta)
	}
	s.completed(monitorPrefix+registerRes, stack, map[string]any{"urn": synthStack}, nil, serverMeta)

	// The provider's configuration.
	if o.secret != "" {
		news := map[string]any{"password": secretJSON(o.secret), "region": o.plain, "version": "4.16.0"}
		s.call("/pulumirpc.ResourceProvider/CheckConfig", map[string]any{"urn": "urn:pulumi:dev::synth::pulumi:providers:random::default", "news": news, "olds": map[string]any{}}, map[string]any{"inputs": news}, nil, providerMeta)
		s.call("/pulumirpc.ResourceProvider/Configure", map[string]any{"args": news, "variables": map[string]string{"random:config:password": o.secret}}, map[string]any{}, nil, providerMeta)
	}

	if o.every {
		args := &structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue("x")}}
		if o.secret != "" {
			args.Fields["password"] = secretPB(o.secret)
		}
		s.invoke("invoke-transform", &pulumirpc.TransformInvokeRequest{Token: "random:index/getPet:getPet", Args: args},
			&pulumirpc.TransformInvokeResponse{Args: args}, nil)
		s.invokeRaw("future-hook", []byte("\x0a\x06future"+o.secret), &pulumirpc.ResourceHookResponse{}, nil)
		// A payload that is not a TransformRequest, holding the secret.
		s.invokeRaw("stack-transform", []byte("\xff\xff\xff"+o.secret), nil, []string{"rpc error: code = InvalidArgument desc = bad request"})
	}

	for i := range o.resources {
		name := "pet-" + strconv.Itoa(i)
		urn := "urn:pulumi:dev::synth::" + synthPetType + "::" + name
		object := map[string]any{"length": 2}
		props := &structpb.Struct{Fields: map[string]*structpb.Value{"length": structpb.NewNumberValue(2)}}
		if o.secret != "" {
			object["password"] = secretJSON(o.secret)
			props.Fields["password"] = secretPB(o.secret)
		}
		if o.plain != "" {
			object["region"] = o.plain
			props.Fields["region"] = structpb.NewStringValue(o.plain)
		}
		reg := map[string]any{"type": synthPetType, "name": name, "parent": synthStack, "custom": true, "object": object}
		if o.every {
			reg["transforms"] = []any{map[string]any{"target": "127.0.0.1:2", "token": "own-transform-" + name}}
			reg["stateMigrations"] = []any{map[string]any{"target": "127.0.0.1:2", "token": "migration-" + name}}
			if i == 0 {
				reg["replacementHooks"] = []any{map[string]any{"target": "127.0.0.1:2", "token": "future-field"}}
			}
		}
		s.started(monitorPrefix+registerRes, reg, serverMeta)

		// The resource's own transform runs first, then the stack's.
		if o.every {
			s.invoke("own-transform-"+name, &pulumirpc.TransformRequest{Type: synthPetType, Name: name, Custom: true, Parent: synthStack, Properties: props},
				&pulumirpc.TransformResponse{Properties: props}, nil)
		}
		out := proto.Clone(props).(*structpb.Struct)
		out.Fields["prefix"] = structpb.NewStringValue("tx")
		s.invoke("stack-transform",
			&pulumirpc.TransformRequest{Type: synthPetType, Name: name, Custom: true, Parent: synthStack, Properties: props, Options: &pulumirpc.TransformResourceOptions{}},
			&pulumirpc.TransformResponse{Properties: out, Options: &pulumirpc.TransformResourceOptions{
				Hooks: &pulumirpc.RegisterResourceRequest_ResourceHooksBinding{BeforeCreate: []string{"audit"}},
			}}, nil)
		if o.every && o.secret == "" {
			old := fmt.Sprintf(`[{"urn":%q,"type":%q,"custom":true,"id":"x","inputs":{"length":2}}]`, urn, synthPetType)
			s.invoke("migration-"+name, &pulumirpc.StateMigrationRequest{Urn: urn, OldState: []byte(old)},
				&pulumirpc.StateMigrationResponse{}, nil)
		}
		if o.every && o.secret != "" {
			old := fmt.Sprintf(`[{"urn":%q,"type":%q,"custom":true,"id":"x","inputs":{"pw":{%q:%q,"plaintext":%q}},"outputs":{"pw":{%q:%q,"ciphertext":%q}}}]`,
				urn, synthPetType, sig.Key, sig.Secret, strconv.Quote(o.secret), sig.Key, sig.Secret, o.secret)
			s.invoke("migration-"+name, &pulumirpc.StateMigrationRequest{Urn: urn, OldState: []byte(old)},
				&pulumirpc.StateMigrationResponse{NewState: []byte(old)}, nil)
		}
		if o.every && i == 0 {
			s.invoke("future-field", &pulumirpc.ResourceHookRequest{Urn: urn}, &pulumirpc.ResourceHookResponse{}, nil)
		}
		s.invoke("audit-hook", &pulumirpc.ResourceHookRequest{Urn: urn, Name: name, Type: synthPetType, NewInputs: out}, &pulumirpc.ResourceHookResponse{}, nil)
		if o.every && i == 0 {
			s.invoke("error-hook", &pulumirpc.ErrorHookRequest{Urn: urn, Name: name, Type: synthPetType, NewInputs: out, FailedOperation: "create",
				Errors: []string{"throttled"}}, &pulumirpc.ErrorHookResponse{Retry: true}, nil)
		}
		created := map[string]any{"id": name, "properties": map[string]any{"length": 2, "prefix": "tx", "id": name}}
		s.call("/pulumirpc.ResourceProvider/Create", map[string]any{"urn": urn, "properties": object}, created, nil, providerMeta)
		s.completed(monitorPrefix+registerRes, reg, map[string]any{"urn": urn, "id": name, "object": created["properties"]}, nil, serverMeta)
	}
	s.completed(runMethod, run, map[string]any{}, nil, languageMeta)
	if s.err != nil {
		return s.err
	}
	return bw.Flush()
}
