package main

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestVerdictNeedsAPassingMustClause: a run concludes "pass" only when a
// MUST clause passed and none failed or went unrun.
func TestVerdictNeedsAPassingMustClause(t *testing.T) {
	t.Parallel()
	row := func(level, verdict string) reportRow {
		return reportRow{Clause: "c", Level: level, Kind: "k", Verdict: verdict}
	}
	for _, tc := range []struct {
		name string
		rows []reportRow
		want int
	}{
		{"no rows", nil, exitCantRun},
		{"only SHOULD clauses", []reportRow{row(should, pass), row(should, fail)}, exitCantRun},
		{"every MUST row n/a", []reportRow{row(must, na), row(should, pass)}, exitCantRun},
		{"a MUST row not run", []reportRow{row(must, pass), row(must, skipped)}, exitCantRun},
		{"a MUST row failed", []reportRow{row(must, pass), row(must, skipped), row(must, fail)}, exitFail},
		{"every MUST row passed", []reportRow{row(must, pass), row(must, na), row(should, fail)}, exitPass},
	} {
		if got, why := verdict(tc.rows); got != tc.want {
			t.Errorf("%s: exit %d (%s), want %d", tc.name, got, why, tc.want)
		}
	}
}

// TestResultCountsClauses: the result line counts clauses, a clause being
// as good as its worst row, and the rows separately.
func TestResultCountsClauses(t *testing.T) {
	t.Parallel()
	r := func(clause, level, verdict string) reportRow {
		return reportRow{Clause: clause, Level: level, Kind: "k", Verdict: verdict}
	}
	for _, tc := range []struct {
		name string
		rows []reportRow
		want string
	}{
		{"passed", []reportRow{r("a", must, pass), r("a", must, pass), r("a", must, na), r("b", should, pass), r("b", should, fail), r("c", should, na)},
			"every MUST clause passed; 1 of 3 clauses passed, 1 failed, 1 n/a (6 rows)"},
		{"failed", []reportRow{r("a", must, fail), r("a", must, fail), r("b", must, pass), r("c", should, skipped)},
			"1 MUST clause failed (a k, a k); 1 of 3 clauses passed, 1 failed, 1 not run (4 rows)"},
	} {
		if _, got := verdict(tc.rows); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestRowsOnlyForTheKindsAClauseAppliesTo: a clause about values sent back
// has no row for hooks, which send none back; the others have a row for
// every kind.
func TestRowsOnlyForTheKindsAClauseAppliesTo(t *testing.T) {
	t.Parallel()
	var checkers []*checker
	for _, k := range kindOrder {
		checkers = append(checkers, &checker{cb: registered{Kind: k}, k: kinds[k]})
	}
	got := map[string][]string{}
	for _, r := range rows(nil, nil, checkers, func(clause) bool { return true }) {
		got[r.Clause] = append(got[r.Clause], r.Kind)
	}
	for clause, want := range map[string][]string{
		"round-trip/properties":   {kindResourceTransform, kindInvokeTransform},
		"round-trip/options":      {kindResourceTransform, kindInvokeTransform},
		"round-trip/byte-strings": {kindResourceTransform, kindInvokeTransform},
		"round-trip/value-shapes": {kindResourceTransform, kindInvokeTransform, kindStateMigration},
		"migration/local-rules":   {kindStateMigration},
		"request/every-field":     kindOrder,
		"no-stack-trace":          kindOrder,
	} {
		if !slices.Equal(got[clause], want) {
			t.Errorf("%s: rows for %v, want %v", clause, got[clause], want)
		}
	}
}

// TestStaysUpIsNotRunWhenTheServerDied: a server that died before the bad
// inputs were all sent did not stay up; it was not checked.
func TestStaysUpIsNotRunWhenTheServerDied(t *testing.T) {
	t.Parallel()
	all := func(string) bool { return true }
	c := &checker{target: &target{dead: "resource-transform concurrency/1000"}, upAfter: []string{"no-options"}}
	if r := c.stayedUp(all); r.verdict != skipped || !strings.Contains(r.evidence, "concurrency/1000") {
		t.Errorf("dead server: %s %q, want %s naming when it died", r.verdict, r.evidence, skipped)
	}
	c = &checker{target: &target{}}
	if r := c.stayedUp(func(id string) bool { return id == "deadline" }); r.verdict != na {
		t.Errorf("no bad input selected: %s %q, want %s", r.verdict, r.evidence, na)
	}
	c = &checker{target: &target{}, upAfter: []string{"no-options", "unknown-token", "bad-payload", "invalid-utf8", "deep-nesting"}}
	if r := c.stayedUp(all); r.verdict != pass {
		t.Errorf("every bad input survived: %s %q, want %s", r.verdict, r.evidence, pass)
	}
	if r := (&checker{}).noStackTrace(); r.verdict != na {
		t.Errorf("no error message: %s %q, want %s", r.verdict, r.evidence, na)
	}
}

// TestJSONReportKeepsItsFieldNames: the -json report is read by other
// programs, so its keys stay as they were when its types were exported.
func TestJSONReportKeepsItsFieldNames(t *testing.T) {
	t.Parallel()
	// Every field set, so that omitempty hides none.
	rep := report{
		Program: []string{"prog"},
		Callbacks: []registered{{Kind: kindStateMigration, Name: "n", Target: "t", Token: "k", AcceptsByteString: true,
			URN: "u", Type: "ty", Parent: "p"}},
		Rows: []reportRow{{Clause: "c", Level: must, Kind: "k", Verdict: pass, Evidence: "e", Runs: map[string]int{pass: 1},
			Inputs: []wireInput{{Callback: "cb", Input: "in", Size: 1, Hex: "00"}}}},
		ProgramExit: "exited 0", Result: "r", Exit: 1, Error: "err",
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		m, _ := v.(map[string]any)
		return slices.Sorted(maps.Keys(m))
	}
	firstRow := got["rows"].([]any)[0].(map[string]any)
	for _, tc := range []struct {
		what string
		got  []string
		want []string
	}{
		{"report", keys(got), []string{"callbacks", "error", "exit", "program", "programExit", "result", "rows"}},
		{"callback", keys(got["callbacks"].([]any)[0]), []string{"acceptsByteString", "kind", "name", "parent", "target", "token", "type", "urn"}},
		{"row", keys(firstRow), []string{"clause", "evidence", "inputs", "kind", "level", "runs", "verdict"}},
		{"input", keys(firstRow["inputs"].([]any)[0]), []string{"callback", "hex", "input", "size"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("the %s's JSON keys: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// TestChangesMustArriveExactly feeds the judge the answers of lossy servers
// to the resource transform's change request.
func TestChangesMustArriveExactly(t *testing.T) {
	t.Parallel()
	c := &checker{cb: registered{Kind: kindResourceTransform}, k: kinds[kindResourceTransform]}
	req := c.changeRequest(true).(*pulumirpc.TransformRequest)
	// What a conforming server sends.
	good := func() *pulumirpc.TransformResponse {
		props := proto.Clone(req.Properties).(*structpb.Struct)
		props.Fields[changeKey] = structpb.NewStringValue(changeValue)
		opts := proto.Clone(req.Options).(*pulumirpc.TransformResourceOptions)
		opts.RetainOnDelete = boolp(true)
		return &pulumirpc.TransformResponse{Properties: props, Options: opts}
	}
	judge := func(res *pulumirpc.TransformResponse) changeVerdict {
		return c.judgeChange(req, mustMarshal(res), nil)
	}
	if v := judge(good()); v.missing != "" || len(v.changes)+len(v.shapes)+len(v.unknown) > 0 {
		t.Fatalf("the exact answer was judged %+v", v)
	}
	for _, tc := range []struct {
		name  string
		lose  func(*pulumirpc.TransformResponse)
		field func(changeVerdict) []string
		want  string
	}{
		{"BOM stripped", func(r *pulumirpc.TransformResponse) {
			r.Properties.Fields["bom"] = structpb.NewStringValue(strings.TrimPrefix(bomString, "\ufeff"))
		}, func(v changeVerdict) []string { return v.shapes }, `bom: sent "\ufeffstarts`},
		{"-0 to 0", func(r *pulumirpc.TransformResponse) {
			r.Properties.Fields["negativeZero"] = structpb.NewNumberValue(0)
		}, func(v changeVerdict) []string { return v.shapes }, "negativeZero: sent -0, got 0"},
		{"2^53+2 rounded", func(r *pulumirpc.TransformResponse) {
			r.Properties.Fields["twoTo53Next"] = structpb.NewNumberValue(math.Nextafter(1<<53+2, 0))
		}, func(v changeVerdict) []string { return v.shapes }, "twoTo53Next"},
		{"unknown fields dropped", func(r *pulumirpc.TransformResponse) {
			r.Options.ProtoReflect().SetUnknown(nil)
		}, func(v changeVerdict) []string { return v.unknown }, "TransformResourceOptions: the unknown fields"},
		{"nested unknown fields dropped", func(r *pulumirpc.TransformResponse) {
			r.Options.CustomTimeouts.ProtoReflect().SetUnknown(nil)
		}, func(v changeVerdict) []string { return v.unknown }, "custom_timeouts: the unknown fields"},
		{"the added property dropped", func(r *pulumirpc.TransformResponse) {
			delete(r.Properties.Fields, changeKey)
		}, func(v changeVerdict) []string { return v.changes }, changeKey + " dropped"},
		{"the changed option not sent", func(r *pulumirpc.TransformResponse) {
			r.Options.RetainOnDelete = boolp(false)
		}, func(v changeVerdict) []string { return v.changes }, "retain_on_delete changed"},
		{"an answer of {}", func(r *pulumirpc.TransformResponse) {
			*r = pulumirpc.TransformResponse{}
		}, func(v changeVerdict) []string { return []string{v.missing} }, "neither properties nor options"},
	} {
		res := good()
		tc.lose(res)
		if got := strings.Join(tc.field(judge(res)), "; "); !strings.Contains(got, tc.want) {
			t.Errorf("%s: judged %q, want it to name %q", tc.name, got, tc.want)
		}
	}
}

// TestMigrationNumbersAreExact: a migration's state is compared number by
// number as text, so a JSON decoder that rounds or drops -0 is caught.
func TestMigrationNumbersAreExact(t *testing.T) {
	t.Parallel()
	c := &checker{cb: registered{Kind: kindStateMigration, URN: "urn:pulumi:conform::kit::conform:index:Migrated::migrated",
		Type: "conform:index:Migrated"}, k: kinds[kindStateMigration]}
	req := c.changeRequest(false)
	want := c.migrationState(migrationChanged)
	for _, tc := range []struct{ name, from, to, names string }{
		{"exact", "", "", ""},
		{"2^53+1 rounded", "9007199254740993", "9007199254740992", "twoTo53Next: sent 9007199254740993, got 9007199254740992"},
		{"-0 to 0", `"negativeZero":-0`, `"negativeZero":0`, "negativeZero: sent -0, got 0"},
		{"written as 1.0", `"conformVersion":2`, `"conformVersion":2.0`, ""},
	} {
		state := strings.Replace(string(want), tc.from, tc.to, 1)
		v := c.judgeChange(req, mustMarshal(&pulumirpc.StateMigrationResponse{NewState: []byte(state)}), nil)
		got := strings.Join(append(v.shapes, v.changes...), "; ")
		if v.missing != "" || (tc.names == "") != (got == "") || !strings.Contains(got, tc.names) {
			t.Errorf("%s: judged %q (missing %q), want %q", tc.name, got, v.missing, tc.names)
		}
	}
}

// TestProtosAreTheSDKs: -protos writes a descriptor set that resolves on
// its own and holds every message a raw server needs.
func TestProtosAreTheSDKs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := writeProtos(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, protoSetName))
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatalf("the set does not resolve on its own: %v", err)
	}
	for _, name := range []string{"pulumirpc.Callbacks", "pulumirpc.ResourceMonitor", "pulumirpc.CallbackInvokeRequest",
		"pulumirpc.TransformRequest", "pulumirpc.TransformInvokeResponse", "pulumirpc.ResourceHookRequest",
		"pulumirpc.ErrorHookResponse", "pulumirpc.StateMigrationRequest", "pulumirpc.StateMigrationResponse"} {
		if _, err := files.FindDescriptorByName(protoreflect.FullName(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil || !strings.Contains(string(readme), "pulumi/callback.proto") {
		t.Errorf("README.md: %v %q", err, readme)
	}
}
