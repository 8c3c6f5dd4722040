package replay

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/changes"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// stamping is a program whose stack transform stamps each custom resource:
// tags.deployedAt and the ids of two items take a new value from stamp on
// every call, tags.team is team. It registers a pet for each name.
type stamping struct {
	stamp func() string
	team  string
	names []string
}

func (s stamping) program() pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		if _, err := transforms.RegisterStack(ctx.Context(), mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if !a.Custom {
				return nil, nil
			}
			return a.WithProperties(func(p resource.PropertyMap) {
				p["tags"] = resource.NewProperty(resource.PropertyMap{
					"deployedAt": resource.NewProperty(s.stamp()),
					"team":       resource.NewProperty(s.team),
				})
				item := func(name string) resource.PropertyValue {
					return resource.NewProperty(resource.PropertyMap{"id": resource.NewProperty(s.stamp()), "name": resource.NewProperty(name)})
				}
				p["items"] = resource.NewProperty([]resource.PropertyValue{item("a"), item("b")})
			}), nil
		}); err != nil {
			return err
		}
		for _, name := range s.names {
			var pet pulumi.CustomResourceState
			if err := ctx.RegisterResource(petType, name, pulumi.Map{"length": pulumi.Int(2)}, &pet); err != nil {
				return err
			}
		}
		return nil
	}
}

// clock returns times a minute apart from start, one a call: a stand-in
// for the wall clock whose values differ between a recording and a replay
// whatever the machine's speed.
func clock(start time.Time) func() string {
	var n atomic.Int64
	return func() string { return start.Add(time.Duration(n.Add(1)) * time.Minute).Format(time.RFC3339) }
}

var (
	recordedDay = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	replayDay   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
)

// stampScript calls the stack transform for each name, as the engine does.
func stampScript(names ...string) []recorded {
	props, _ := structpb.NewStruct(map[string]any{"length": 2})
	var s []recorded
	for _, name := range names {
		s = append(s, recorded{regKey{Method: "RegisterStackTransform", Kind: callbacks.KindResourceTransform, Order: 1},
			&pulumirpc.TransformRequest{Type: petType, Name: name, Custom: true, Parent: stackURN, Properties: props,
				Options: &pulumirpc.TransformResourceOptions{}}})
	}
	return s
}

func recordStamped(t *testing.T) string {
	t.Helper()
	return recordLog(t, testInfo, stamping{stamp: clock(recordedDay), team: "infra", names: []string{"pet"}}.program(), stampScript("pet"))
}

func joined(lines []string) string { return strings.Join(lines, "\n") }

func TestIgnorePathsPassesValuesThatChangeOnEveryRun(t *testing.T) {
	log := recordStamped(t)
	now := func(team string) pulumi.RunFunc {
		return stamping{stamp: clock(replayDay), team: team, names: []string{"pet"}}.program()
	}

	t.Run("without it the stamps fail", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, now("infra"))
		if len(ft.errors) != 1 {
			t.Fatalf("want the transform's one call to differ:\n%s", ft.report())
		}
		for _, want := range []string{`properties.tags.deployedAt: "2026-11-28T12:01:00Z" → "2026-11-29T12:01:00Z"`,
			"properties.items[0].id:", "properties.items[1].id:"} {
			if !strings.Contains(ft.errors[0], want) {
				t.Errorf("the difference does not say %q:\n%s", want, ft.report())
			}
		}
	})

	for _, tc := range []struct {
		name    string
		paths   []string
		ignored []string // substrings of the log of ignored differences
	}{
		{"exact paths and an index wildcard", []string{"properties.tags.deployedAt", "properties.items[*].id"}, []string{
			`properties.tags.deployedAt: "2026-11-28T12:01:00Z" → "2026-11-29T12:01:00Z" (by "properties.tags.deployedAt")`,
			`properties.items[0].id: "2026-11-28T12:02:00Z" → "2026-11-29T12:02:00Z" (by "properties.items[*].id")`,
			`properties.items[1].id: "2026-11-28T12:03:00Z" → "2026-11-29T12:03:00Z" (by "properties.items[*].id")`,
		}},
		{"a key wildcard and a subtree", []string{"properties.tags.*", "properties.items"}, []string{
			`(by "properties.tags.*")`, `properties.items[1].id: "2026-11-28T12:03:00Z" → "2026-11-29T12:03:00Z" (by "properties.items")`,
		}},
		{"quoted keys and a wildcard first", []string{`properties["tags"]["deployedAt"]`, `*.items[*]["id"]`}, []string{
			`(by "properties[\"tags\"][\"deployedAt\"]")`, `(by "*.items[*][\"id\"]")`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			Run(ft, log, now("infra"), IgnorePaths(tc.paths...))
			if len(ft.errors) > 0 {
				t.Fatalf("the ignored differences fail the replay:\n%s", ft.report())
			}
			logs := joined(ft.logs)
			if !strings.Contains(logs, "differences ignored (IgnorePaths)") {
				t.Errorf("the ignored differences are not logged:\n%s", ft.report())
			}
			for _, want := range tc.ignored {
				if !strings.Contains(logs, want) {
					t.Errorf("no log says %q:\n%s", want, ft.report())
				}
			}
		})
	}

	t.Run("an index ignores that index only", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, now("infra"), IgnorePaths("properties.tags.deployedAt", "properties.items[0].id"))
		if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], "properties.items[1].id:") ||
			strings.Contains(ft.errors[0], "items[0]") || strings.Contains(ft.errors[0], "deployedAt") {
			t.Fatalf("want the second item's id, and only it, to fail:\n%s", ft.report())
		}
	})

	t.Run("other differences still fail", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, now("platform"), IgnorePaths("properties.tags.deployedAt", "properties.items[*].id"))
		if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], `properties.tags.team: "infra" → "platform"`) ||
			strings.Contains(ft.errors[0], "deployedAt") {
			t.Fatalf("want the team, and only it, to fail:\n%s", ft.report())
		}
		if !strings.Contains(joined(ft.logs), `(by "properties.tags.deployedAt")`) {
			t.Errorf("the stamp, ignored, is not logged:\n%s", ft.report())
		}
	})
}

func TestIgnorePathsReportsAPathThatNamesNothing(t *testing.T) {
	log := recordStamped(t)
	ft := &fakeT{TB: t}
	Run(ft, log, stamping{stamp: clock(replayDay), team: "infra", names: []string{"pet"}}.program(),
		IgnorePaths("properties.tags.deployedAt", "properties.items[*].id",
			"properties.tag.deployedAt", // misspelt
			"properties.tags.team",      // never differs, but names a value
			"properties.items[2].id"))   // there are two items
	if len(ft.errors) != 2 {
		t.Fatalf("want the two paths that name nothing reported:\n%s", ft.report())
	}
	for i, p := range []string{"properties.tag.deployedAt", "properties.items[2].id"} {
		if !strings.Contains(ft.errors[i], `IgnorePaths("`+p+`") names no value in any answer of the 1 call(s) compared`) {
			t.Errorf("error %d does not report %q:\n%s", i, p, ft.report())
		}
	}
}

func TestIgnorePathsRefusesABadPath(t *testing.T) {
	log := recordStamped(t)
	for _, tc := range []struct{ path, want string }{
		{"", "the path is empty"},
		{"properties.", `ends with "."`},
		{"properties..tags", "a name is missing before '.'"},
		{"[0]", "a name is missing before '['"},
		{"properties.tags[", `a "[" is not closed`},
		{"properties[]", `"[]" is empty`},
		{`properties["tags]`, "a quoted key is not closed"},
		{`properties["tags"`, `not followed by "]"`},
		{`properties["tags"]x`, `'x' after "]"`},
		{"properties.ta*gs", `"ta*gs" is not a name`},
		{"properties[99999999999999999999999]", "too large"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var ran atomic.Bool
			ft := &fakeT{TB: t}
			Run(ft, log, func(*pulumi.Context) error { ran.Store(true); return nil }, IgnorePaths("properties.tags.team", tc.path))
			if ran.Load() {
				t.Errorf("the program ran despite a bad path")
			}
			if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], "IgnorePaths(") || !strings.Contains(ft.errors[0], tc.want) {
				t.Errorf("want one error saying %q:\n%s", tc.want, ft.report())
			}
		})
	}
	t.Run("nil option", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, stamping{stamp: clock(replayDay), names: []string{"pet"}}.program(), nil)
		if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], "nil Option") {
			t.Errorf("want a nil option refused:\n%s", ft.report())
		}
	})
}

// TestIgnoredDifferencesAreNotUpdated: in update mode, a call whose every
// difference is ignored keeps its recorded answer.
func TestIgnoredDifferencesAreNotUpdated(t *testing.T) {
	log := recordStamped(t)
	before, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envUpdate, "1")
	program := stamping{stamp: clock(replayDay), team: "infra", names: []string{"pet"}}.program()
	ft := &fakeT{TB: t}
	Run(ft, log, program, IgnorePaths("properties.tags.deployedAt", "properties.items[*].id"))
	if len(ft.errors) > 0 {
		t.Fatalf("update mode failed:\n%s", ft.report())
	}
	after, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("a call whose differences are all ignored was rewritten")
	}
	// Without the paths, the stamps are today's answers.
	ft = &fakeT{TB: t}
	Run(ft, log, program)
	if after, err = os.ReadFile(log); err != nil {
		t.Fatal(err)
	}
	if len(ft.errors) > 0 || bytes.Equal(before, after) {
		t.Errorf("without IgnorePaths the answer is not updated:\n%s", ft.report())
	}
}

func TestParsePath(t *testing.T) {
	key := func(s string) segment { return segment{kind: segKey, text: s} }
	index := func(s string) segment { return segment{kind: segIndex, text: s} }
	anyOne := segment{kind: segAny}
	for _, tc := range []struct {
		path string
		want []segment
	}{
		{"retry", []segment{key("retry")}},
		{"properties.tags.team", []segment{key("properties"), key("tags"), key("team")}},
		{`properties["a.b"].c`, []segment{key("properties"), key("a.b"), key("c")}},
		{`properties["say \"hi\""]`, []segment{key("properties"), key(`say "hi"`)}},
		{"properties.items[007].id", []segment{key("properties"), key("items"), index("7"), key("id")}},
		{"properties.tags.*", []segment{key("properties"), key("tags"), anyOne}},
		{"properties.items[*].id", []segment{key("properties"), key("items"), anyOne, key("id")}},
		{`properties["*"]`, []segment{key("properties"), key("*")}},
		{"state[0].outputs.x", []segment{key("state"), index("0"), key("outputs"), key("x")}},
		{"successors[urn:pulumi:dev::p::t:m:T::a]b]", []segment{key("successors"), key("urn:pulumi:dev::p::t:m:T::a]b")}},
		{"options.hooks[0][1]", []segment{key("options"), key("hooks"), index("0"), index("1")}},
	} {
		got, err := parsePath(tc.path)
		if err != nil {
			t.Errorf("parsePath(%q): %v", tc.path, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("parsePath(%q) = %v, want %v", tc.path, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parsePath(%q) = %v, want %v", tc.path, got, tc.want)
				break
			}
		}
	}

	// Each path the differ prints parses, and a pattern of it covers it.
	var printed []string
	s := changes.New(changes.Bounds{}, false)
	a, _ := structpb.NewStruct(map[string]any{"a.b": 1, "tags": map[string]any{"x y": "1"}, "list": []any{1, map[string]any{"k": 1}}})
	b, _ := structpb.NewStruct(map[string]any{"a.b": 2, "tags": map[string]any{"x y": "2"}, "list": []any{2, map[string]any{"k": 2}}})
	s.Structs("properties", a, b)
	s.Successors(map[string]string{"urn:pulumi:dev::p::t:m:T::x": "a"}, map[string]string{"urn:pulumi:dev::p::t:m:T::x": "b"})
	found, _ := s.Changes()
	for _, ch := range found {
		printed = append(printed, ch.Path)
	}
	if len(printed) != 5 {
		t.Fatalf("the differ printed %v, want 5 paths", printed)
	}
	for _, p := range printed {
		segs, err := parsePath(p)
		if err != nil {
			t.Errorf("the printed path %q does not parse: %v", p, err)
			continue
		}
		if !(&pattern{segs: segs}).covers(segs) {
			t.Errorf("%q does not cover itself", p)
		}
	}
}

func TestPatternCovers(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"properties.tags", "properties.tags.team", true},
		{"properties.tags", "properties.tags", true},
		{"properties.tags.team", "properties.tags", false},
		{"properties.tags", "properties.tagsx", false},
		{"properties.*", "properties.items[0]", true},
		{"properties.items[*]", "properties.items[3].id", true},
		{"properties.items[*]", "properties.items.x", true},
		{"properties.items[1]", "properties.items[0].id", false},
		{`properties["tags"]`, "properties.tags.team", true},
		{`properties["0"]`, "properties[0]", false},
		{"args.x", "properties.x", false},
	} {
		p, err1 := parsePath(tc.pattern)
		c, err2 := parsePath(tc.path)
		if err1 != nil || err2 != nil {
			t.Fatalf("%q, %q: %v %v", tc.pattern, tc.path, err1, err2)
		}
		if got := (&pattern{segs: p}).covers(c); got != tc.want {
			t.Errorf("%q covers %q: %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func TestPresent(t *testing.T) {
	tree := map[string]any{
		"properties": map[string]any{
			"tags":     map[string]any{"team": "infra"},
			"items":    []any{map[string]any{"id": "a"}},
			"password": map[string]any{sig.Key: sig.Secret, "value": map[string]any{"inner": 1}},
			"out":      map[string]any{sig.Key: sig.OutputValue, "value": map[string]any{"inner": 1}},
		},
	}
	for path, want := range map[string]bool{
		"properties.tags.team":      true,
		"properties.tags.*":         true,
		"properties.*.team":         true,
		"properties.items[0].id":    true,
		"properties.items[*].id":    true,
		"properties.items[1].id":    false,
		"properties.items.id":       false,
		"properties.tag":            false,
		"properties.password":       true,
		"properties.password.inner": false, // a secret has no parts
		"properties.out.inner":      true,  // an output value is what it holds
	} {
		segs, err := parsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := present(segs, tree); got != want {
			t.Errorf("present(%q) = %v, want %v", path, got, want)
		}
	}
}
