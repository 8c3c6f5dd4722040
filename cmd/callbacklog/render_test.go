package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with the current output")

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/callbacklog -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the output differs from %s (run go test ./cmd/callbacklog -update to accept it):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first lines where want and got part, with a little
// context: enough to see what changed in an account.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 12; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			shown++
		}
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

// fixture is a deployment with one call of every kind and outcome, written
// by hand: the rendering is tested on it without a log.
func fixture() []*record {
	t0 := time.Date(2026, 11, 28, 3, 25, 22, 0, time.UTC)
	pet := "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"
	tok := "urn:pulumi:dev::demo::random:index/randomString:RandomString::token"
	return []*record{
		{Seq: 1, Line: 23, Kind: "resource transform", Registration: "stack transform #1", Method: "RegisterStackTransform",
			URN: pet, Type: "random:index/randomPet:RandomPet", Name: "pet", Outcome: "changed",
			Changes: []change{{Path: "properties.prefix", Old: absent, New: `"tx"`}, {Path: "options.protect", Old: "false", New: "true"}, {Path: "properties.password", Old: "[secret]", New: "[secret]"}},
			Start:   t0, Duration: 1914894},
		{Seq: 2, Line: 25, Kind: "resource transform", Registration: "transform #1 of the resource", Method: "RegisterResource",
			URN: tok, Type: "random:index/randomString:RandomString", Name: "token", Outcome: "unchanged",
			Start: t0.Add(2 * time.Millisecond), Duration: 412000},
		{Seq: 3, Line: 40, Kind: "resource hook", Registration: "before-create", Method: "RegisterResourceHook", HookName: "before-create",
			URN: pet, Type: "random:index/randomPet:RandomPet", Name: "pet", Outcome: "refused",
			Message: "pets need an owner tag\n(see the policy)", Start: t0.Add(28 * time.Millisecond), Duration: 1748017},
		{Seq: 4, Line: 44, Kind: "error hook", Registration: "retry-throttled", Method: "RegisterErrorHook", HookName: "retry-throttled",
			URN: tok, Type: "random:index/randomString:RandomString", Name: "token", Outcome: "retry",
			Op: "create", Attempt: 1, Message: "throttled: too many requests for token, try again",
			Start: t0.Add(31 * time.Millisecond), Duration: 2294799},
		{Seq: 5, Line: 52, Kind: "error hook", Registration: "retry-throttled", Method: "RegisterErrorHook", HookName: "retry-throttled",
			URN: tok, Type: "random:index/randomString:RandomString", Name: "token", Outcome: "no retry",
			Op: "create", Attempt: 4, Message: "throttled again \x1b[31mred\x1b[0m",
			Start: t0.Add(1200 * time.Millisecond), Duration: 880},
		{Seq: 6, Line: 60, Kind: "state migration", Registration: "migration #1", Method: "RegisterResource",
			URN: pet, Type: "random:index/randomPet:RandomPet", Name: "pet", Outcome: "migrated",
			Changes: []change{{Path: "state[0].outputs.keepers.team", Old: absent, New: `"infra"`}, {Path: "state[0].outputs.keepers.owner", Old: `"infra"`, New: absent}},
			Start:   t0.Add(1300 * time.Millisecond), Duration: 2 * time.Second},
		{Seq: 7, Line: 70, Kind: "invoke transform", Registration: "stack invoke transform #1", Method: "RegisterStackInvokeTransform",
			Invoke: "aws:index/getRegion:getRegion", Outcome: "failed", Err: "rpc error: code = Unknown desc = <script>alert(1)</script>",
			Start: t0.Add(3400 * time.Millisecond), Duration: 120 * time.Microsecond},
	}
}

func TestTextAccountOfEveryKind(t *testing.T) {
	var b bytes.Buffer
	if err := writeText(&b, "demo.log", fromGRPC, fixture(), []problem{{Line: 12, Reason: "unexpected end of JSON input"}}, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "fixture.txt", b.Bytes())
}

func TestJSONOfEveryKind(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, fromGRPC, fixture(), []problem{{Line: 12, Reason: "unexpected end of JSON input"}}, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "fixture.jsonl", b.Bytes())
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(fixture())+1 {
		t.Fatalf("got %d lines, want one per call and one per unreadable line (%d):\n%s", len(lines), len(fixture())+1, b.String())
	}
	for i, l := range lines[:len(lines)-1] {
		var c struct {
			Seq        int    `json:"seq"`
			Kind       string `json:"kind"`
			Outcome    string `json:"outcome"`
			DurationNs int64  `json:"durationNs"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if want := fixture()[i]; c.Seq != want.Seq || c.Kind != want.Kind || c.Outcome != want.Outcome || c.DurationNs != int64(want.Duration) {
			t.Errorf("line %d: got %+v, want seq %d kind %q outcome %q durationNs %d", i+1, c, want.Seq, want.Kind, want.Outcome, want.Duration)
		}
	}
}

func TestHTMLEscapesTheLog(t *testing.T) {
	var b bytes.Buffer
	if err := writeHTML(&b, "demo<b>.log", fromGRPC, fixture(), nil, nil); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script>alert(1)", "demo<b>.log", "\x1b"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	for _, external := range []string{"http://", "https://", "src=", "@import", "url("} {
		if strings.Contains(page, external) {
			t.Errorf("the page refers to something outside itself (%q): it must work offline", external)
		}
	}
}
