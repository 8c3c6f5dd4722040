package calllog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// wide bounds keep every change.
var wide = ChangeBounds{}

// The signatures of Pulumi's property values.
const (
	sigKey, sigSecret, sigOutput, sigByteString = sig.Key, sig.Secret, sig.OutputValue, sig.ByteString
)

func secretOf(v any) map[string]any { return map[string]any{sigKey: sigSecret, "value": v} }

func outputOf(v any, known, secret bool) map[string]any {
	o := map[string]any{sigKey: sigOutput, "secret": secret}
	if known {
		o["value"] = v
	}
	return o
}

const unknownString = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func equalChanges(a, b []Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDiffCallOptionsAndKinds(t *testing.T) {
	req := marshal(t, &pulumirpc.TransformRequest{Properties: mustStruct(t, map[string]any{"x": 1.0}),
		Options: &pulumirpc.TransformResourceOptions{DependsOn: []string{"a"}}})
	res := marshal(t, &pulumirpc.TransformResponse{Options: &pulumirpc.TransformResourceOptions{Protect: proto.Bool(true), DependsOn: []string{"a", "b"}}})
	got, _, err := DiffCall("resource_transform", req, res, wide)
	if err != nil {
		t.Fatal(err)
	}
	// The answer leaves the properties out: they are the request's.
	want := []Change{{Path: "options.dependsOn[1]", New: `"b"`}, {Path: "options.protect", New: "true"}}
	if !equalChanges(got, want) {
		t.Errorf("options: got %+v, want %+v", got, want)
	}

	got, _, err = DiffCall("resource_transform", req, nil, wide)
	if err != nil || len(got) != 0 {
		t.Errorf("an empty answer: got %+v, %v; want no change", got, err)
	}

	ireq := marshal(t, &pulumirpc.TransformInvokeRequest{Token: "aws:index/getRegion:getRegion", Args: mustStruct(t, map[string]any{"region": "us-east-1"})})
	ires := marshal(t, &pulumirpc.TransformInvokeResponse{Args: mustStruct(t, map[string]any{"region": "eu-west-1"})})
	got, _, err = DiffCall("invoke_transform", ireq, ires, wide)
	if want := []Change{{Path: "args.region", Old: `"us-east-1"`, New: `"eu-west-1"`}}; err != nil || !equalChanges(got, want) {
		t.Errorf("invoke transform: got %+v, %v; want %+v", got, err, want)
	}

	const urn = "urn:pulumi:dev::p::t::n"
	oldState := `[{"urn":"` + urn + `","outputs":{"size":1,"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"c1"}}},{"urn":"gone"}]`
	newState := `[{"urn":"` + urn + `","outputs":{"size":2,"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"c2"}}}]`
	mreq := marshal(t, &pulumirpc.StateMigrationRequest{Urn: urn, OldState: []byte(oldState)})
	mres := marshal(t, &pulumirpc.StateMigrationResponse{NewState: []byte(newState), Successors: map[string]string{"old": urn}})
	got, _, err = DiffCall("state_migration", mreq, mres, wide)
	want = []Change{
		{Path: "state[0].outputs.pw", Old: "[secret]", New: "[another secret]"},
		{Path: "state[0].outputs.size", Old: "1", New: "2"},
		{Path: "state[1]", Old: `{"urn":"gone"}`},
		{Path: "successors[old]", New: `"` + urn + `"`},
	}
	if err != nil || !equalChanges(got, want) {
		t.Errorf("migration: got %+v, %v; want %+v", got, err, want)
	}

	if _, _, err := DiffCall("resource_transform", []byte{0xff, 0xff}, nil, wide); err == nil {
		t.Error("a request that does not decode: no error")
	}
	if got, _, err := DiffCall("resource_hook", req, res, wide); err != nil || got != nil {
		t.Errorf("a hook changes nothing the records say: got %+v, %v", got, err)
	}
}

func TestPayloadJSON(t *testing.T) {
	req := marshal(t, &pulumirpc.TransformRequest{Name: "pet", Properties: mustStruct(t, map[string]any{
		"pw": secretOf("hunter22"), "list": []any{outputOf("out-secret", true, true), outputOf(nil, false, true), "plain"},
	})})
	text, err := PayloadJSON("resource_transform", true, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hunter22", "out-secret"} {
		if strings.Contains(text, s) {
			t.Errorf("the request's JSON holds the secret %q: %s", s, text)
		}
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	props := v["properties"].(map[string]any)
	if pw := props["pw"].(map[string]any); pw[sigKey] != sigSecret || pw["value"] != "[secret]" {
		t.Errorf("the secret is %v", pw)
	}
	if l := props["list"].([]any); l[2] != "plain" || l[1].(map[string]any)["secret"] != true {
		t.Errorf("the list is %v", l)
	}

	mreq := marshal(t, &pulumirpc.StateMigrationRequest{OldState: []byte(
		`[{"urn":"u","outputs":{"pw":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"state-secret\""}}}]`)})
	text, err = PayloadJSON("state_migration", true, mreq)
	if err != nil || strings.Contains(text, "state-secret") || !strings.Contains(text, `"oldState":[{`) {
		t.Errorf("the migration's request: %s, %v", text, err)
	}
}
