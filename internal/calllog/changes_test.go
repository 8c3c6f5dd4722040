package calllog

import (
	"encoding/json"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// wide bounds keep every change.
var wide = ChangeBounds{Changes: 1 << 20, Text: 1 << 30, Value: 1 << 20}

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

func transformDiff(t *testing.T, before, after map[string]any, b ChangeBounds) ([]Change, int) {
	t.Helper()
	req := marshal(t, &pulumirpc.TransformRequest{Name: "pet", Properties: mustStruct(t, before)})
	res := marshal(t, &pulumirpc.TransformResponse{Properties: mustStruct(t, after)})
	changes, leftOut, err := DiffCall("resource_transform", req, res, b)
	if err != nil {
		t.Fatal(err)
	}
	return changes, leftOut
}

func TestDiffCallProperties(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after map[string]any
		want          []Change
	}{
		{"a tag added",
			map[string]any{"tags": map[string]any{"env": "dev"}},
			map[string]any{"tags": map[string]any{"env": "dev", "team": "platform"}},
			[]Change{{Path: "properties.tags.team", New: `"platform"`}}},
		{"a key that is not an identifier, and a removed one",
			map[string]any{"a.b": 1.0, "gone": true},
			map[string]any{"a.b": 2.5},
			[]Change{{Path: `properties["a.b"]`, Old: "1", New: "2.5"}, {Path: "properties.gone", Old: "true"}}},
		{"a secret inside a list changed",
			map[string]any{"list": []any{"a", secretOf("s3cr3t-one")}},
			map[string]any{"list": []any{"a", secretOf("s3cr3t-two"), "c"}},
			[]Change{{Path: "properties.list[1]", Old: "[secret]", New: "[another secret]"}, {Path: "properties.list[2]", New: `"c"`}}},
		{"a map holding a secret added",
			map[string]any{},
			map[string]any{"db": map[string]any{"password": secretOf("hunter22"), "user": "admin"}},
			[]Change{{Path: "properties.db", New: `{"password": [secret], "user": "admin"}`}}},
		{"a secret holding a map, made plain",
			map[string]any{"cfg": secretOf(map[string]any{"k": "hidden-value"})},
			map[string]any{"cfg": "open"},
			[]Change{{Path: "properties.cfg", Old: "[secret]", New: `"open"`}}},
		{"a value made secret",
			map[string]any{"pw": "plain-pw"},
			map[string]any{"pw": secretOf("plain-pw")},
			[]Change{{Path: "properties.pw", Old: `"plain-pw"`, New: "[secret]"}}},
		{"the same secret, once an output value: no change",
			map[string]any{"pw": outputOf("same", true, true), "n": outputOf(3.0, true, false)},
			map[string]any{"pw": secretOf("same"), "n": 3.0},
			nil},
		{"unknowns: any two are equal, an unknown made known is a change",
			map[string]any{"id": unknownString, "arn": outputOf(nil, false, false), "x": unknownString},
			map[string]any{"id": outputOf(nil, false, true), "arn": unknownString, "x": "known"},
			[]Change{{Path: "properties.x", Old: "[unknown]", New: `"known"`}}},
		{"special values by what names them",
			map[string]any{"code": map[string]any{sigKey: sigAsset, "hash": "h1", "text": "a"}},
			map[string]any{"code": map[string]any{sigKey: sigAsset, "hash": "h2", "text": "b"},
				"ref": map[string]any{sigKey: sigResource, "urn": "urn:pulumi:dev::p::t::n"}},
			[]Change{{Path: "properties.code", Old: "asset(h1)", New: "asset(h2)"}, {Path: "properties.ref", New: "resource(urn:pulumi:dev::p::t::n)"}}},
		{"a value of no known signature: compared as JSON, secrets still hidden",
			map[string]any{"odd": map[string]any{sigKey: "no-such-signature"}, "pw": outputOf("leaky-pw", true, true)},
			map[string]any{"odd": map[string]any{sigKey: "no-such-signature"}, "pw": outputOf("other-pw", true, true), "x": 1.0},
			[]Change{{Path: "properties.pw", Old: "[secret]", New: "[another secret]"}, {Path: "properties.x", New: "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, leftOut := transformDiff(t, tc.before, tc.after, wide)
			if leftOut != 0 || !equalChanges(got, tc.want) {
				t.Errorf("got %+v (%d left out), want %+v", got, leftOut, tc.want)
			}
		})
	}
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

// A deep value is compared and written in time linear in its size, its
// path cut to the bound of a value.
func TestDiffCallDeep(t *testing.T) {
	const depth = 2000
	deep := func(leaf any) map[string]any {
		v := map[string]any{"leaf": leaf}
		for range depth {
			v = map[string]any{"n": v}
		}
		return v
	}
	got, _ := transformDiff(t, deep("a"), deep(secretOf("b")), ChangeBounds{Changes: 8, Text: 1 << 10, Value: 64})
	if len(got) != 1 || got[0].Old != `"a"` || got[0].New != "[secret]" ||
		!strings.HasPrefix(got[0].Path, "properties.n.n.n") || !strings.HasSuffix(got[0].Path, "…") || len(got[0].Path) > 64+len("…") {
		t.Errorf("got %+v", got)
	}
}

func TestDiffCallBounds(t *testing.T) {
	before, after := map[string]any{}, map[string]any{}
	for i := range 100 {
		k := "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i/26)
		after[k] = strings.Repeat("v", 500)
	}
	got, leftOut := transformDiff(t, before, after, ChangeBounds{Changes: 5, Text: 1 << 20, Value: 20})
	if len(got) != 5 || leftOut != 95 {
		t.Fatalf("at most 5 changes: got %d, %d left out", len(got), leftOut)
	}
	if v := got[0].New; len(v) > 20+len("…") || !strings.HasSuffix(v, "…") {
		t.Errorf("a value past its bound: %q", v)
	}
	got, leftOut = transformDiff(t, before, after, ChangeBounds{Changes: 100, Text: 100, Value: 20})
	text := 0
	for _, c := range got {
		text += len(c.Path) + len(c.Old) + len(c.New)
	}
	if text > 100 || len(got)+leftOut != 100 || len(got) == 0 {
		t.Errorf("at most 100 bytes of text: got %d changes, %d bytes, %d left out", len(got), text, leftOut)
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
