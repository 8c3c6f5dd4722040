package changes

import (
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// wide bounds keep every change.
var wide = Bounds{}

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

// diff compares two property maps under "properties".
func diff(t *testing.T, before, after map[string]any, b Bounds, show bool) ([]Change, int) {
	t.Helper()
	s := New(b, show)
	s.Structs("properties", mustStruct(t, before), mustStruct(t, after))
	return s.Changes()
}

func TestStructs(t *testing.T) {
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
			got, leftOut := diff(t, tc.before, tc.after, wide, false)
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

// A deep value is compared and written in time linear in its size, its
// path cut to the bound of a value.
func TestDeep(t *testing.T) {
	const depth = 2000
	deep := func(leaf any) map[string]any {
		v := map[string]any{"leaf": leaf}
		for range depth {
			v = map[string]any{"n": v}
		}
		return v
	}
	got, _ := diff(t, deep("a"), deep(secretOf("b")), Bounds{Changes: 8, Text: 1 << 10, Value: 64}, false)
	if len(got) != 1 || got[0].Old != `"a"` || got[0].New != "[secret]" ||
		!strings.HasPrefix(got[0].Path, "properties.n.n.n") || !strings.HasSuffix(got[0].Path, "…") || len(got[0].Path) > 64+len("…") {
		t.Errorf("got %+v", got)
	}
}

func TestBounds(t *testing.T) {
	before, after := map[string]any{}, map[string]any{}
	for i := range 100 {
		k := "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("0", i/26)
		after[k] = strings.Repeat("v", 500)
	}
	got, leftOut := diff(t, before, after, Bounds{Changes: 5, Text: 1 << 20, Value: 20}, false)
	if len(got) != 5 || leftOut != 95 {
		t.Fatalf("at most 5 changes: got %d, %d left out", len(got), leftOut)
	}
	if v := got[0].New; len(v) > 20+len("…") || !strings.HasSuffix(v, "…") {
		t.Errorf("a value past its bound: %q", v)
	}
	got, leftOut = diff(t, before, after, Bounds{Changes: 100, Text: 100, Value: 20}, false)
	text := 0
	for _, c := range got {
		text += len(c.Path) + len(c.Old) + len(c.New)
	}
	if text > 100 || len(got)+leftOut != 100 || len(got) == 0 {
		t.Errorf("at most 100 bytes of text: got %d changes, %d bytes, %d left out", len(got), text, leftOut)
	}
	got, leftOut = diff(t, before, after, Bounds{}, false)
	if len(got) != 100 || leftOut != 0 || len(got[0].New) != 502 {
		t.Errorf("zero bounds: got %d changes (the first %d bytes long), %d left out; want all 100, whole", len(got), len(got[0].New), leftOut)
	}
}

// Shown, a secret is written secret(…), and two secrets are compared by
// what they hold, down to the paths inside them.
func TestShowSecrets(t *testing.T) {
	before := map[string]any{
		"pw": secretOf("old-pw"), "cfg": secretOf(map[string]any{"k": "a", "same": 1.0}),
		"token": "plain", "out": outputOf("o1", true, true), "same": outputOf("s", true, true),
	}
	after := map[string]any{
		"pw": secretOf("new-pw"), "cfg": secretOf(map[string]any{"k": "b", "same": 1.0}),
		"token": secretOf("plain"), "out": outputOf("o2", true, true), "same": secretOf("s"),
		"db": map[string]any{"password": secretOf("hunter22")},
	}
	got, _ := diff(t, before, after, wide, true)
	want := []Change{
		{Path: "properties.cfg.k", Old: `"a"`, New: `"b"`},
		{Path: "properties.db", New: `{"password": secret("hunter22")}`},
		{Path: "properties.out", Old: `"o1"`, New: `"o2"`},
		{Path: "properties.pw", Old: `"old-pw"`, New: `"new-pw"`},
		{Path: "properties.token", Old: `"plain"`, New: `secret("plain")`},
	}
	if !equalChanges(got, want) {
		t.Errorf("shown:\n got %+v\nwant %+v", got, want)
	}
	hidden, _ := diff(t, before, after, wide, false)
	for _, c := range hidden {
		for _, secret := range []string{"pw", "o1", "o2", "hunter22", `"a"`} {
			if strings.Contains(c.Old+c.New, secret) {
				t.Errorf("hidden, %+v shows %s", c, secret)
			}
		}
	}
}

func TestStatesSuccessorsOptions(t *testing.T) {
	const urn = "urn:pulumi:dev::p::t::n"
	pw := func(c string) string {
		return `{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"` + c + `"}`
	}
	oldState := `[{"urn":"` + urn + `","outputs":{"size":1,"pw":` + pw("c1") + `}},{"urn":"gone"}]`
	newState := `[{"urn":"new"},{"urn":"` + urn + `","outputs":{"size":2,"pw":` + pw("c2") + `}}]`
	for _, show := range []bool{false, true} {
		s := New(wide, show)
		s.States([]byte(oldState), []byte(newState))
		s.Successors(map[string]string{"a": "x", "b": "y"}, map[string]string{"b": "z", "c": "w"})
		s.Scalar("retry", "true", "true")
		s.Scalar("error", "", `"no"`)
		s.States([]byte("not json"), []byte(`{"x":1}`))
		got, _ := s.Changes()
		pwChange := Change{Path: "state[1].outputs.pw", Old: "[secret]", New: "[another secret]"}
		if show {
			pwChange.Old, pwChange.New = pw("c1"), pw("c2")
		}
		want := []Change{
			{Path: "state[0]", New: `{"urn":"new"}`},
			pwChange,
			{Path: "state[1].outputs.size", Old: "1", New: "2"},
			{Path: "state[1]", Old: `{"urn":"gone"}`},
			{Path: "successors[a]", Old: `"x"`},
			{Path: "successors[b]", Old: `"y"`, New: `"z"`},
			{Path: "successors[c]", New: `"w"`},
			{Path: "error", New: `"no"`},
			{Path: "state", Old: "[not JSON]", New: `{"x":1}`},
		}
		if !equalChanges(got, want) {
			t.Errorf("show %v:\n got %+v\nwant %+v", show, got, want)
		}
	}
	// Options by their JSON form, zero values absent.
	a := &pulumirpc.TransformResourceOptions{Protect: proto.Bool(false), DependsOn: []string{"a"}}
	b := &pulumirpc.TransformResourceOptions{Protect: proto.Bool(true), DependsOn: []string{"a", "b"}}
	s := New(wide, false)
	s.Options("options", a, b)
	s.Options("none", nil, nil)
	got, _ := s.Changes()
	want := []Change{{Path: "options.dependsOn[1]", New: `"b"`}, {Path: "options.protect", New: "true"}}
	if !equalChanges(got, want) {
		t.Errorf("options:\n got %+v\nwant %+v", got, want)
	}
}

func TestClip(t *testing.T) {
	if got := Clip("héllo", 2); got != "h…" {
		t.Errorf("clip on a rune's second byte: got %q", got)
	}
	if got := Clip("hello", 5); got != "hello" {
		t.Errorf("got %q", got)
	}
}
