package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/migrations"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// fakeT records what Run reports instead of failing the test.
type fakeT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
	logs   []string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func (f *fakeT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.TB.Fatalf("replay called Fatalf: "+format, args...)
}

// report is everything the fake T was told, for failure messages.
func (f *fakeT) report() string {
	return "errors:\n" + strings.Join(f.errors, "\n") + "\nlogs:\n" + strings.Join(f.logs, "\n")
}

const petType = "random:index/randomPet:RandomPet"

var testInfo = runInfo{Project: "proj", Stack: "dev", Organization: "org", Parallel: 4}

const stackURN = "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev"

func urnOf(name string) resource.URN {
	return resource.URN("urn:pulumi:dev::proj::" + petType + "::" + name)
}

// behaviour is what the test program's functions do.
type behaviour struct {
	prefix      string // the stack transform's "prefix" property
	refuse      string // the name of the resource the hook refuses
	retries     int    // the error hook retries while Attempt() is below this
	team        string // the migration's new keeper
	noHook      bool   // register no hook "audit"
	extraHook   bool   // register a hook "unused" as well
	failProgram bool
}

// testProgram is a program with a stack transform, a hook, an error hook
// and a state migration, on two pets.
func testProgram(b behaviour) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		if b.failProgram {
			return errors.New("the program gave up")
		}
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		c := ctx.Context()
		if _, err := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			if !a.Custom {
				return nil, nil
			}
			return a.WithProperties(func(p resource.PropertyMap) { p["prefix"] = resource.NewProperty(b.prefix) }), nil
		}); err != nil {
			return err
		}
		binding := &transforms.HooksBinding{}
		if !b.noHook {
			audit, err := hooks.Register(c, mon, "audit", func(_ context.Context, a *hooks.Args) error {
				if a.Name == b.refuse {
					return errors.New("no " + a.Name + " today")
				}
				return nil
			})
			if err != nil {
				return err
			}
			binding.BeforeCreate = []transforms.HookRef{audit}
		}
		if b.extraHook {
			if _, err := hooks.Register(c, mon, "unused", func(context.Context, *hooks.Args) error { return nil }); err != nil {
				return err
			}
		}
		retry, err := hooks.RegisterErrorHook(c, mon, "retry", func(_ context.Context, a *hooks.ErrorArgs) (bool, error) {
			return a.Attempt() < b.retries, nil
		})
		if err != nil {
			return err
		}
		binding.OnError = []transforms.HookRef{retry}
		migrate, err := program.Migrations(ctx, func(_ context.Context, a *migrations.Args) (*migrations.Result, error) {
			rs, err := a.Resources()
			if err != nil {
				return nil, err
			}
			inputs, _ := rs[0]["inputs"].(map[string]any)
			inputs["team"] = b.team
			state, err := json.Marshal(rs)
			return &migrations.Result{NewState: state}, err
		})
		if err != nil {
			return err
		}
		for _, name := range []string{"pet", "bad"} {
			var pet pulumi.CustomResourceState
			if err := ctx.RegisterResource(petType, name, pulumi.Map{"length": pulumi.Int(2)}, &pet,
				program.Hooks(binding), migrate); err != nil {
				return err
			}
		}
		return nil
	}
}

// testScript is what the recording engine calls for each pet: the stack
// transform, the hook, the error hook (after one failure) and the
// migration.
func testScript() []recorded {
	var s []recorded
	props, _ := structpb.NewStruct(map[string]any{"length": 2})
	for _, name := range []string{"pet", "bad"} {
		urn := string(urnOf(name))
		old, _ := json.Marshal([]map[string]any{{"urn": urn, "custom": true, "type": petType, "id": name + "-id",
			"inputs": map[string]any{"length": 2}, "outputs": map[string]any{"length": 2}}})
		s = append(s,
			recorded{regKey{Method: "RegisterStackTransform", Kind: callbacks.KindResourceTransform, Order: 1},
				&pulumirpc.TransformRequest{Type: petType, Name: name, Custom: true, Parent: stackURN, Properties: props,
					Options: &pulumirpc.TransformResourceOptions{}}},
			recorded{regKey{Method: "RegisterResource", Kind: callbacks.KindStateMigration, Order: 1, Resource: urnOf(name)},
				&pulumirpc.StateMigrationRequest{Urn: urn, OldState: old}},
			recorded{regKey{Method: "RegisterResourceHook", Kind: callbacks.KindResourceHook, Name: "audit"},
				&pulumirpc.ResourceHookRequest{Urn: urn, Name: name, Type: petType, NewInputs: props}},
			recorded{regKey{Method: "RegisterErrorHook", Kind: callbacks.KindErrorHook, Name: "retry"},
				&pulumirpc.ErrorHookRequest{Urn: urn, Name: name, Type: petType, FailedOperation: "create",
					Errors: []string{"throttled"}, NewInputs: props}},
		)
	}
	return s
}

var recordedWith = behaviour{prefix: "tx", refuse: "bad", retries: 3, team: "infra"}

func TestReplayOfTheSameProgramFindsNoDifference(t *testing.T) {
	log := recordLog(t, testInfo, testProgram(recordedWith), testScript())
	ft := &fakeT{TB: t}
	Run(ft, log, testProgram(recordedWith))
	if len(ft.errors) > 0 {
		t.Fatalf("the same program, replayed, differs:\n%s", ft.report())
	}
	for _, l := range ft.logs {
		if strings.Contains(l, "never called") {
			t.Errorf("a registration reported uncalled, but the script calls each: %s", l)
		}
	}
}

func TestReplayNamesWhatChanged(t *testing.T) {
	log := recordLog(t, testInfo, testProgram(recordedWith), testScript())
	for _, tc := range []struct {
		name string
		now  behaviour
		want []string // one substring of an error per call that changed
	}{
		{"transform", behaviour{prefix: "ty", refuse: "bad", retries: 3, team: "infra"}, []string{
			"call 1 (log line 21), resource transform, stack transform #1, for " + string(urnOf("pet")) + ": the answer differs from the recording:\n\t" + `properties.prefix: "tx" → "ty"`,
			"call 5 (log line 29), resource transform, stack transform #1, for " + string(urnOf("bad")) + ": the answer differs from the recording:\n\t" + `properties.prefix: "tx" → "ty"`,
		}},
		{"hook refusal", behaviour{prefix: "tx", refuse: "pet", retries: 3, team: "infra"}, []string{
			`resource hook, audit, for ` + string(urnOf("pet")) + ": the answer differs from the recording:\n\trefusal: (absent) → \"no pet today\"",
			`resource hook, audit, for ` + string(urnOf("bad")) + ": the answer differs from the recording:\n\trefusal: \"no bad today\" → (absent)",
		}},
		{"error hook", behaviour{prefix: "tx", refuse: "bad", retries: 1, team: "infra"}, []string{
			`error hook, retry, for ` + string(urnOf("pet")) + ": the answer differs from the recording:\n\tretry: true → false",
			`error hook, retry, for ` + string(urnOf("bad")) + ": the answer differs from the recording:\n\tretry: true → false",
		}},
		{"migration", behaviour{prefix: "tx", refuse: "bad", retries: 3, team: "platform"}, []string{
			"state migration, migration #1, for " + string(urnOf("pet")) + ": the answer differs from the recording:\n\tstate[0].inputs.team: \"infra\" → \"platform\"",
			"state migration, migration #1, for " + string(urnOf("bad")) + ": the answer differs from the recording:\n\tstate[0].inputs.team: \"infra\" → \"platform\"",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			Run(ft, log, testProgram(tc.now))
			if len(ft.errors) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(ft.errors), len(tc.want), ft.report())
			}
			for _, want := range tc.want {
				found := false
				for _, e := range ft.errors {
					found = found || strings.Contains(e, want)
				}
				if !found {
					t.Errorf("no error says %q:\n%s", want, ft.report())
				}
			}
		})
	}
}

func TestReplayReportsUnmatchedCallsAndUncalledRegistrations(t *testing.T) {
	log := recordLog(t, testInfo, testProgram(recordedWith), testScript())
	ft := &fakeT{TB: t}
	Run(ft, log, testProgram(behaviour{prefix: "tx", refuse: "bad", retries: 3, team: "infra", noHook: true, extraHook: true}))
	unmatched := 0
	for _, e := range ft.errors {
		if strings.Contains(e, "resource hook, audit,") && strings.Contains(e, "nothing is registered now in its place") {
			unmatched++
		}
	}
	if unmatched != 2 || len(ft.errors) != 2 {
		t.Errorf("want the two calls of hook \"audit\" reported unmatched, and nothing else:\n%s", ft.report())
	}
	uncalled := false
	for _, l := range ft.logs {
		uncalled = uncalled || strings.Contains(l, "the program registers unused (resource hook), which the log never called")
	}
	if !uncalled {
		t.Errorf("the hook \"unused\" is not reported as never called:\n%s", ft.report())
	}
}

func TestUpdateRewritesTheAnswersThenReplayPasses(t *testing.T) {
	log := recordLog(t, testInfo, testProgram(recordedWith), testScript())
	before, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	changed := behaviour{prefix: "ty", refuse: "pet", retries: 1, team: "platform"}

	t.Setenv(envUpdate, "1")
	ft := &fakeT{TB: t}
	Run(ft, log, testProgram(changed))
	if len(ft.errors) > 0 {
		t.Fatalf("update mode failed:\n%s", ft.report())
	}
	after, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(envUpdate, "")
	ft = &fakeT{TB: t}
	Run(ft, log, testProgram(changed))
	if len(ft.errors) > 0 {
		t.Fatalf("after the update, the program still differs:\n%s", ft.report())
	}

	// Only the completing entries of the calls changed, and each of them.
	bl, al := bytes.Split(before, []byte("\n")), bytes.Split(after, []byte("\n"))
	if len(bl) != len(al) {
		t.Fatalf("the update changed the number of lines: %d → %d", len(bl), len(al))
	}
	rewritten := 0
	for i := range bl {
		if bytes.Equal(bl[i], al[i]) {
			continue
		}
		rewritten++
		var a, b map[string]json.RawMessage
		if json.Unmarshal(bl[i], &b) != nil || json.Unmarshal(al[i], &a) != nil {
			t.Fatalf("line %d is no longer JSON: %s", i+1, al[i])
		}
		if string(b["method"]) != `"/pulumirpc.Callbacks/Invoke"` || string(b["progress"]) != `"response_completed"` {
			t.Errorf("line %d, not a call's completing entry, changed:\n%s\n%s", i+1, bl[i], al[i])
		}
		for k := range b {
			if k != "response" && k != "errors" && string(a[k]) != string(b[k]) {
				t.Errorf("line %d: %q changed", i+1, k)
			}
		}
	}
	// Every call but the hook's for "bad" (refused then, allowed now with
	// a different answer, so also rewritten): 8 calls, all answers changed.
	if rewritten != 8 {
		t.Errorf("%d lines rewritten, want the 8 calls' completing entries", rewritten)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := recordLog(t, testInfo, testProgram(recordedWith), testScript())
	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := bytes.SplitAfter(goodBytes, []byte("\n"))
	corrupt := bytes.Join(append(append([][]byte{}, lines[:3]...), append([][]byte{[]byte("{not json\n")}, lines[3:]...)...), nil)
	for _, tc := range []struct {
		name, file string
		program    pulumi.RunFunc
		want       string
	}{
		{"missing file", filepath.Join(dir, "nope.jsonl"), testProgram(recordedWith), "no such file"},
		{"empty log", write("empty.jsonl", nil), testProgram(recordedWith), "is empty"},
		{"corrupt line", write("corrupt.jsonl", corrupt), testProgram(recordedWith), "log line 4"},
		{"failing program", good, testProgram(behaviour{failProgram: true}), "the program gave up"},
		{"panicking program", good, func(*pulumi.Context) error { panic("lost") }, "panic: lost"},
		{"nil program", good, nil, "nil program"},
		{"program without callbacks", good, func(*pulumi.Context) error { return nil },
			"nothing is registered now in its place (the program registers no callback at all)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			Run(ft, tc.file, tc.program)
			found := false
			for _, e := range ft.errors {
				found = found || strings.Contains(e, tc.want)
			}
			if !found {
				t.Errorf("no error says %q:\n%s", tc.want, ft.report())
			}
		})
	}
}

// TestAnUnreadableLogFails: a file whose reading fails (here a directory)
// fails the test, naming the file and the error, before anything is read.
func TestAnUnreadableLogFails(t *testing.T) {
	dir := t.TempDir()
	ft := &fakeT{TB: t}
	Run(ft, dir, testProgram(recordedWith))
	if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], dir+": replay: reading the log after line 0") {
		t.Errorf("reading a directory does not fail the replay once, naming it:\n%s", ft.report())
	}
}

// TestALogOfTwoRunsReplaysEachAgainstARunOfItsOwn joins the logs of a
// preview and an update, whose transform answers differently in a
// preview: each run's calls are replayed against a run of the program
// with that run's dry-run flag.
func TestALogOfTwoRunsReplaysEachAgainstARunOfItsOwn(t *testing.T) {
	byDryRun := func(ctx *pulumi.Context) error {
		b := recordedWith
		if ctx.DryRun() {
			b.prefix = "preview"
		}
		return testProgram(b)(ctx)
	}
	preview := testInfo
	preview.DryRun = true
	var joined []byte
	for _, info := range []runInfo{preview, testInfo} {
		b, err := os.ReadFile(recordLog(t, info, byDryRun, testScript()))
		if err != nil {
			t.Fatal(err)
		}
		joined = append(joined, b...)
	}
	log := filepath.Join(t.TempDir(), "joined.jsonl")
	if err := os.WriteFile(log, joined, 0o600); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{TB: t}
	Run(ft, log, byDryRun)
	if len(ft.errors) > 0 {
		t.Fatalf("a preview and an update, replayed run by run, differ:\n%s", ft.report())
	}
	// One program for both runs would answer the preview's calls as an
	// update: each transform call of the preview differs.
	ft = &fakeT{TB: t}
	Run(ft, log, testProgram(recordedWith))
	if len(ft.errors) != 2 {
		t.Fatalf("want the preview's two transform calls to differ:\n%s", ft.report())
	}
}

// TestOtherFormsOfTheLog replays the log without its LanguageRuntime/Run
// entries (the project and stack then come from the calls' URNs), and in
// the older form of one entry per call, with no progress.
func TestOtherFormsOfTheLog(t *testing.T) {
	b, err := os.ReadFile(recordLog(t, testInfo, testProgram(recordedWith), testScript()))
	if err != nil {
		t.Fatal(err)
	}
	var noRun, oneEntry []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.Contains(line, []byte("LanguageRuntime/Run")) {
			noRun = append(noRun, line...)
		}
		if !bytes.Contains(line, []byte(`"progress":"request_started"`)) {
			oneEntry = append(oneEntry, bytes.Replace(line, []byte(`"progress":"response_completed",`), nil, 1)...)
		}
	}
	for name, content := range map[string][]byte{"no run": noRun, "one entry per call": oneEntry} {
		t.Run(name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log.jsonl")
			if err := os.WriteFile(log, content, 0o600); err != nil {
				t.Fatal(err)
			}
			ft := &fakeT{TB: t}
			Run(ft, log, testProgram(recordedWith))
			if len(ft.errors) > 0 {
				t.Fatalf("replay differs:\n%s", ft.report())
			}
			ft = &fakeT{TB: t}
			Run(ft, log, testProgram(behaviour{prefix: "ty", refuse: "bad", retries: 3, team: "infra"}))
			if len(ft.errors) != 2 {
				t.Fatalf("want the two transform calls to differ:\n%s", ft.report())
			}
		})
	}
}
