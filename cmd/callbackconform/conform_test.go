package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The packages the kit must not import: the module's server and its typed
// packages. The kit speaks only the wire.
var serverPackages = []string{
	"github.com/langhost/callbacks",
	"github.com/langhost/callbacks/transforms",
	"github.com/langhost/callbacks/invoketransforms",
	"github.com/langhost/callbacks/hooks",
	"github.com/langhost/callbacks/migrations",
	"github.com/langhost/callbacks/monitor",
}

func TestKitSpeaksOnlyTheWire(t *testing.T) {
	t.Parallel()
	goTool := needGo(t)
	for _, pkg := range []string{".", "../../enginetest"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, d := range deps {
			for _, banned := range serverPackages {
				if d == banned {
					t.Errorf("%s imports %s", pkg, d)
				}
			}
		}
		if len(deps) < 10 {
			t.Errorf("go list -deps %s listed only %v", pkg, deps)
		}
	}
}

func needGo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not installed")
	}
	return p
}

// buildFlags are the flags pulumi-language-go builds programs with, which
// the kit and its fixtures are built with too: the dependencies are then
// compiled once for them and for the examples' tests, which build the same
// way, instead of once more without -trimpath.
var buildFlags = []string{"-trimpath", "-ldflags", "-w -s"}

// buildFixture returns the fixture program built from testdata/name.
func buildFixture(t *testing.T, name string) string {
	t.Helper()
	needGo(t)
	dir, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// kitBinary is the kit, built without the race detector: the fixtures'
// runs send gigabytes through the gRPC client, which the race detector
// slows tenfold. TestKitInProcess runs the kit under it.
func kitBinary() (string, error) {
	dir, err := binaries()
	return filepath.Join(dir, "callbackconform"), err
}

// binaries builds the kit and its fixtures once, in one go command: on a
// cold build cache, go commands run side by side each compile the
// dependencies they share (the Pulumi SDK, gRPC) for themselves.
var binaries = sync.OnceValues(func() (string, error) {
	built.Store(true)
	dir, err := os.MkdirTemp("", "callbackconform")
	if err != nil {
		return "", err
	}
	args := append(append([]string{"build"}, buildFlags...), "-o", dir+string(filepath.Separator), ".", "./testdata/module", "./testdata/gosdk")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if built.Load() {
		if dir, err := binaries(); err == nil {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

var built atomic.Bool

// runKit runs the kit binary with args (its flags, then the program after
// "--", or the program alone) and returns its exit status and its report,
// as written by -json.
func runKit(t *testing.T, args ...string) (int, *report) {
	t.Helper()
	needGo(t)
	bin, err := kitBinary()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.json")
	if !slices.Contains(args, "--") {
		args = append([]string{"--"}, args...)
	}
	cmd := exec.Command(bin, append([]string{"-json", out}, args...)...)
	dieWithParent(cmd)
	table, err := cmd.Output()
	code := 0
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		code = xe.ExitCode()
	case err != nil:
		t.Fatalf("running the kit: %v", err)
	}
	t.Logf("exit %d\n%s", code, table)
	return code, readReport(t, out, code)
}

func readReport(t *testing.T, path string, code int) *report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the JSON report: %v", err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("decoding the JSON report: %v", err)
	}
	if rep.Exit != code {
		t.Errorf("the report says exit %d, the kit exited %d", rep.Exit, code)
	}
	return &rep
}

// TestKitInProcess runs the kit in the test binary (under the race
// detector in CI) on the module, with the clauses that move little data.
func TestKitInProcess(t *testing.T) {
	t.Parallel()
	bin := buildFixture(t, "module")
	out := filepath.Join(t.TempDir(), "report.json")
	const pattern = "every-field|round-trip|changes|no-options|unknown|bad-payload|invalid-utf8|deadline|cancellation|local-rules|stays-up|no-stack"
	var table strings.Builder
	code := run(context.Background(), []string{"-json", out, "-run", pattern, "--", bin}, &table, io.Discard)
	t.Logf("exit %d\n%s", code, table.String())
	rep := readReport(t, out, code)
	if code != exitPass {
		t.Errorf("exit %d, want %d", code, exitPass)
	}
	if want := rowsOf(regexp.MustCompile(pattern)); len(rep.Rows) != want {
		t.Errorf("-run selected %d rows, want %d", len(rep.Rows), want)
	}
	// Every callback has a name, a stack transform its registration's.
	for _, cb := range rep.Callbacks {
		if cb.Name == "" {
			t.Errorf("%s at %s has no name", cb.Kind, cb.Token)
		}
		if cb.Kind == kindResourceTransform && cb.Name != "RegisterStackTransform#1" {
			t.Errorf("the resource transform is named %q, want RegisterStackTransform#1", cb.Name)
		}
	}
}

// rowsOf counts the rows of a report whose clauses the pattern selects
// (every clause if nil): one per kind each clause applies to.
func rowsOf(re *regexp.Regexp) int {
	n := 0
	for _, cl := range contract {
		if re != nil && !re.MatchString(cl.ID) {
			continue
		}
		for _, k := range kindOrder {
			if cl.appliesTo(k) {
				n++
			}
		}
	}
	return n
}

// clausesBut is a -run pattern that selects every clause of the contract but
// the ones named.
func clausesBut(but ...string) string {
	var ids []string
	for _, c := range contract {
		if !slices.Contains(but, c.ID) {
			ids = append(ids, regexp.QuoteMeta(c.ID))
		}
	}
	return "^(" + strings.Join(ids, "|") + ")$"
}

func row(t *testing.T, rep *report, clause, kind string) reportRow {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Clause == clause && r.Kind == kind {
			return r
		}
	}
	t.Fatalf("no row for %s %s", clause, kind)
	return reportRow{}
}

// expect checks a row's verdict and that its evidence mentions want.
func expect(t *testing.T, rep *report, clause, kind, verdict, want string) {
	t.Helper()
	r := row(t, rep, clause, kind)
	if r.Verdict != verdict || !strings.Contains(r.Evidence, want) {
		t.Errorf("%s %s: %s %q, want %s mentioning %q", clause, kind, r.Verdict, r.Evidence, verdict, want)
	}
}

// timedOnTheWall reports a row whose verdict rests on time measured on the
// wall clock, which the kit falls back to where it cannot read the
// server's CPU time: a busy machine stretches it, so the tests do not hold
// such a row to a verdict.
func timedOnTheWall(r reportRow) bool {
	return strings.Contains(r.Evidence, "wall time:")
}

func TestModulePassesEveryClause(t *testing.T) {
	t.Parallel()
	code, rep := runKit(t, buildFixture(t, "module"))
	if code != exitPass {
		t.Errorf("exit %d, want %d", code, exitPass)
	}
	if want := rowsOf(nil); len(rep.Rows) != want {
		t.Errorf("%d rows, want %d", len(rep.Rows), want)
	}
	for _, r := range rep.Rows {
		if r.Verdict != pass && !timedOnTheWall(r) {
			t.Errorf("%s %s: %s (%s), want %s", r.Clause, r.Kind, r.Verdict, r.Evidence, pass)
		}
	}
	if want := fmt.Sprintf("every MUST clause passed; %d of %d clauses passed (%d rows)", len(contract), len(contract), rowsOf(nil)); rep.Result != want && !slices.ContainsFunc(rep.Rows, timedOnTheWall) {
		t.Errorf("result %q, want %q", rep.Result, want)
	}
	// Every bad input is in the report, byte for byte: the payload that
	// does not decode is the envelope of the callback's token and 0a 05 61.
	for _, k := range kindOrder {
		r := row(t, rep, "bad-payload", k)
		if len(r.Inputs) != 1 {
			t.Errorf("bad-payload %s: %d inputs in the report, want 1", k, len(r.Inputs))
			continue
		}
		b, err := hex.DecodeString(r.Inputs[0].Hex)
		if err != nil || len(b) != r.Inputs[0].Size || !bytes.HasSuffix(b, []byte{0x12, 0x03, 0x0a, 0x05, 0x61}) {
			t.Errorf("bad-payload %s: input %q (%d bytes) is not the envelope of 0a 05 61", k, r.Inputs[0].Hex, r.Inputs[0].Size)
		}
		if r := row(t, rep, "deep-nesting", k); len(r.Inputs) < 2 {
			t.Errorf("deep-nesting %s: %d inputs in the report, want both depths", k, len(r.Inputs))
		}
	}
}

// TestGoSDK pins the Go SDK's known defects: each verdict below is a defect
// of the SDK that CONFORMANCE.md explains.
func TestGoSDK(t *testing.T) {
	t.Parallel()
	code, rep := runKit(t, buildFixture(t, "gosdk"))
	if code != exitFail {
		t.Errorf("exit %d, want %d: a MUST clause fails", code, exitFail)
	}
	// A request without options panics, with the stack on the wire.
	expect(t, rep, "request/no-options", kindResourceTransform, fail, "panicked")
	expect(t, rep, "no-stack-trace", kindResourceTransform, fail, "goroutine")
	// Option fields are dropped, unknown ones too, also from a changed
	// result.
	expect(t, rep, "round-trip/options", kindResourceTransform, fail, "deleted_with dropped")
	expect(t, rep, "round-trip/options", kindInvokeTransform, fail, "plugin_checksums dropped")
	expect(t, rep, "result/changes", kindResourceTransform, fail, "deleted_with dropped")
	expect(t, rep, "round-trip/unknown-fields", kindResourceTransform, fail, "TransformResourceOptions: the unknown fields")
	expect(t, rep, "round-trip/unknown-fields", kindInvokeTransform, fail, "TransformInvokeOptions: the unknown fields")
	// Output values lose their dependencies; resource references their id.
	expect(t, rep, "round-trip/properties", kindResourceTransform, fail, "output: sent")
	// Migrations send whatever the function returns.
	expect(t, rep, "migration/local-rules", kindStateMigration, fail, "0 of")
	// Unknown for an unknown token and for a payload that does not decode.
	for _, k := range kindOrder {
		expect(t, rep, "unknown-token", k, fail, "Unknown")
		expect(t, rep, "bad-payload", k, fail, "Unknown")
		// What works.
		for _, cl := range []string{"concurrency/1000", "deadline", "cancellation", "payload/5MiB", "payload/64MiB", "stays-up", "invalid-utf8", "payload/300MiB"} {
			expect(t, rep, cl, k, pass, "")
		}
	}
	for _, k := range []string{kindResourceHook, kindErrorHook, kindStateMigration} {
		expect(t, rep, "result/changes", k, pass, "")
		expect(t, rep, "round-trip/unknown-fields", k, pass, "")
	}
	for _, k := range []string{kindResourceTransform, kindInvokeTransform, kindStateMigration} {
		expect(t, rep, "round-trip/value-shapes", k, pass, "")
	}
	expect(t, rep, "round-trip/byte-strings", kindResourceTransform, pass, "")
}

func TestNodeSDK(t *testing.T) {
	t.Parallel()
	dir := nodeFixture(t, "../../testdata/nodejs", "@pulumi/pulumi/cmd/run/index.js")
	runner := filepath.Join(dir, "node_modules/@pulumi/pulumi/cmd/run")
	// Every clause but resources/no-growth, whose verdict the test does not
	// pin (the module's run holds the clause): its 3,000 calls were a fifth
	// of the Node.js server's work, which is the whole cost of this test.
	const unpinned = "resources/no-growth"
	code, rep := runKit(t, "-run", clausesBut(unpinned), "--",
		"node", runner, "--monitor=${PULUMI_MONITOR}", "--engine=${PULUMI_ENGINE}", filepath.Join(dir, "conform.js"))
	if code != exitFail {
		t.Errorf("exit %d, want %d: a MUST clause fails", code, exitFail)
	}
	if want := rowsOf(regexp.MustCompile(clausesBut(unpinned))); len(rep.Rows) != want {
		t.Errorf("%d rows, want %d: every clause but %s", len(rep.Rows), want, unpinned)
	}
	// Option fields are dropped, or added where none were sent; unknown
	// ones are dropped.
	expect(t, rep, "round-trip/options", kindResourceTransform, fail, "providers dropped")
	expect(t, rep, "request/no-options", kindResourceTransform, fail, "protect added")
	expect(t, rep, "round-trip/unknown-fields", kindResourceTransform, fail, "the unknown fields")
	// A reference to a component comes back as a plain string.
	expect(t, rep, "round-trip/properties", kindResourceTransform, fail, "componentRef")
	// Byte strings are not accepted at all.
	expect(t, rep, "round-trip/byte-strings", kindResourceTransform, na, "without accepts_byte_string")
	// No state migrations at this version.
	expect(t, rep, "result/changes", kindStateMigration, na, "registered no state-migration")
	for _, k := range []string{kindResourceTransform, kindInvokeTransform, kindResourceHook, kindErrorHook} {
		expect(t, rep, "unknown-token", k, fail, "InvalidArgument")
		expect(t, rep, "invalid-utf8", k, fail, "")
		expect(t, rep, "deep-nesting", k, fail, "Maximum call stack size exceeded")
		for _, cl := range []string{"concurrency/1000", "deadline", "cancellation", "payload/5MiB", "payload/64MiB", "stays-up"} {
			expect(t, rep, cl, k, pass, "")
		}
	}
	for _, k := range []string{kindResourceHook, kindErrorHook} {
		expect(t, rep, "result/changes", k, pass, "")
	}
	// The hooks take 300 MiB; the server dies when the first transform has
	// to send 300 MiB back (the invoke transform, in the last phase's
	// order), and the other is not run.
	expect(t, rep, "payload/300MiB", kindResourceHook, pass, "")
	expect(t, rep, "payload/300MiB", kindErrorHook, pass, "")
	expect(t, rep, "payload/300MiB", kindInvokeTransform, fail, "Unavailable")
	expect(t, rep, "payload/300MiB", kindResourceTransform, skipped, "payload/300MiB")
}

// nodeFixture returns the absolute path of a Node.js fixture directory,
// skipping the test when node or the fixture's packages (file, under
// node_modules) are missing.
func nodeFixture(t *testing.T, rel, file string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: install Node.js with npm, then run ./test.sh, which runs npm ci in the Node.js fixtures")
	}
	dir, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", file)); err != nil {
		t.Skipf("the packages of %s are not installed: run npm ci there, or ./test.sh, which does", rel)
	}
	return dir
}

// protoSet is the kit's descriptor set, written once by the kit binary
// (callbackconform -protos DIR), for the raw JavaScript fixture.
var protoSet = sync.OnceValues(func() (string, error) {
	bin, err := kitBinary()
	if err != nil {
		return "", err
	}
	dir, err := binaries()
	if err != nil {
		return "", err
	}
	protos := filepath.Join(dir, "protos")
	if out, err := exec.Command(bin, "-protos", protos).CombinedOutput(); err != nil {
		return "", fmt.Errorf("callbackconform -protos: %v\n%s", err, out)
	}
	return filepath.Join(protos, protoSetName), nil
})

// rawJS returns the command that runs the raw JavaScript fixture.
func rawJS(t *testing.T) []string {
	t.Helper()
	dir := nodeFixture(t, "../../testdata/rawjs", "@grpc/grpc-js/package.json")
	set, err := protoSet()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"node", "--stack-size=6000", filepath.Join(dir, "server.js"), set}
}

// TestRawJavaScript runs the kit on a callbacks server written from
// CONFORMANCE.md in JavaScript over raw gRPC, with no Pulumi SDK: it passes
// every clause but the one about checking migrations' results, which it
// does not do. The two clauses that cost the most (3,000 calls, and 300
// MiB each way) are left to the module's run and to CONFORMANCE.md's
// measured run, where the server passes them too.
func TestRawJavaScript(t *testing.T) {
	t.Parallel()
	code, rep := runKit(t, append([]string{"-run", clausesBut("resources/no-growth", "payload/300MiB"), "--"}, rawJS(t)...)...)
	if code != exitPass {
		t.Errorf("exit %d, want %d", code, exitPass)
	}
	for _, r := range rep.Rows {
		want := pass
		if r.Clause == "migration/local-rules" && r.Kind == kindStateMigration {
			want = fail
		}
		if r.Verdict != want && !timedOnTheWall(r) {
			t.Errorf("%s %s: %s (%s), want %s", r.Clause, r.Kind, r.Verdict, r.Evidence, want)
		}
	}
}

// TestRawJavaScriptLossy switches on, one at a time, the faults of a lossy
// server in the raw JavaScript fixture: the kit fails each, naming what was
// lost.
func TestRawJavaScriptLossy(t *testing.T) {
	t.Parallel()
	prog := rawJS(t)
	for _, tc := range []struct {
		fault string
		// rows are the clause and kinds that fail, and what their evidence
		// names.
		clause string
		kinds  []string
		names  string
	}{
		{"bom", "round-trip/value-shapes", []string{kindResourceTransform, kindInvokeTransform},
			`bom: sent "\ufeffstarts with a byte order mark", got "starts with a byte order mark"`},
		{"negzero", "round-trip/value-shapes", []string{kindResourceTransform, kindInvokeTransform}, "negativeZero: sent -0, got 0"},
		{"json", "round-trip/value-shapes", []string{kindStateMigration}, "twoTo53Next: sent 9007199254740993, got 9007199254740992"},
		{"unknown", "round-trip/unknown-fields", []string{kindResourceTransform, kindInvokeTransform}, "the unknown fields (cab204"},
		{"empty", "result/changes", kindOrder, "the function's result was lost"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"-run", "^(result/changes|round-trip/value-shapes|round-trip/unknown-fields)$", "--",
				"env", "CONFORM_LOSSY=" + tc.fault}, prog...)
			code, rep := runKit(t, args...)
			if code != exitFail {
				t.Errorf("exit %d, want %d", code, exitFail)
			}
			for _, k := range tc.kinds {
				expect(t, rep, tc.clause, k, fail, tc.names)
			}
		})
	}
}

func TestProgramThatRegistersNothingCannotBeChecked(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	code, rep := runKit(t, "sh", "-c", "exit 0")
	if code != exitCantRun {
		t.Errorf("exit %d, want %d", code, exitCantRun)
	}
	if code != exitCantRun || !strings.Contains(rep.Error, "before calling SignalAndWaitForShutdown") {
		t.Errorf("exit %d (%s), want %d", code, rep.Error, exitCantRun)
	}
	code, rep = runKit(t, "sh", "-c", "echo broken >&2; exit 3")
	if code != exitCantRun || !strings.Contains(rep.Error, "non-zero exit code: 3") || !strings.Contains(rep.Error, "broken") {
		t.Errorf("exit %d (%s), want %d with the program's exit and stderr", code, rep.Error, exitCantRun)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"-run", "("},
		{"-no-such-flag", "--", "true"},
	} {
		var out, errs strings.Builder
		if code := run(context.Background(), args, &out, &errs); code != exitCantRun {
			t.Errorf("callbackconform %q: exit %d, want %d", args, code, exitCantRun)
		}
		if errs.Len() == 0 {
			t.Errorf("callbackconform %q: nothing on stderr", args)
		}
	}
}
