package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/langhost/callbacks/cmd/callbacklog/testdata/sdkprogram/secret"
	"github.com/langhost/callbacks/integration/clitest"
)

// builds holds the programs and the provider the real-engine tests run,
// built once for all of them.
var builds clitest.Builds

func TestMain(m *testing.M) {
	code := m.Run()
	if err := builds.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "removing the built binaries:", err)
	}
	os.Exit(code)
}

const (
	providerPkg = "github.com/langhost/callbacks/integration/providers/random"
	programs    = "github.com/langhost/callbacks/integration/programs/"
	// throttle makes the stand-in provider fail the first create of every
	// resource with an error that says it was throttled.
	throttle = "RANDOM_THROTTLE_FIRST_CREATE=1"
)

// project is a stack's project running the program pkg with the stand-in
// random provider, its engine logging gRPC to log when log is not "".
func project(t *testing.T, name, pkg, log string, env ...string) clitest.Project {
	if log != "" {
		env = append(env, "PULUMI_DEBUG_GRPC="+log)
	}
	return clitest.Project{
		Name:      name,
		Program:   builds.Program(t, pkg),
		Providers: map[string]string{"random": builds.Provider(t, providerPkg, "random")},
		Env:       env,
	}
}

// recordUp runs `pulumi up` of the program pkg under the real CLI with
// PULUMI_DEBUG_GRPC set, and returns the log's path.
func recordUp(t *testing.T, name, pkg string, env ...string) string {
	t.Helper()
	clitest.RequireCLI(t)
	log := filepath.Join(t.TempDir(), name+".log")
	s := clitest.NewStack(t, project(t, name, pkg, log, env...))
	s.Up().MustSucceed(t)
	keep(t, log)
	return log
}

// keep copies a recorded log into $CALLBACKLOG_RECORD_DIR when it is set,
// to be scrubbed (callbacklog scrub) into testdata/logs.
func keep(t *testing.T, log string) {
	t.Helper()
	dir := os.Getenv("CALLBACKLOG_RECORD_DIR")
	if dir == "" {
		return
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(log)), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// shape is a call as the real-engine tests check it: what the account says,
// without the times.
func shape(r *record) string {
	return fmt.Sprintf("%s: %s %s %s", r.Name, r.Kind, r.Registration, r.Outcome)
}

func shapes(recs []*record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = shape(r)
	}
	return out
}

// stackType is the type of the stack's own resource.
const stackType = "pulumi:pulumi:Stack"

// resources leaves out the calls about the stack's own resource: under
// either release a stack transform may see it, depending on whether the
// program's registration of the transform or the stack's registration
// reaches the engine first.
func resources(recs []*record) []*record {
	var out []*record
	for _, r := range recs {
		if r.Type != stackType {
			out = append(out, r)
		}
	}
	return out
}

// readFile reads a log as the command does, and fails t on any line it could
// not read: a real log has none.
func readFile(t *testing.T, path string, secrets bool) []*record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, problems, _ := readLog(f, secrets, false)
	for _, p := range problems {
		t.Errorf("%s line %d: %s", filepath.Base(path), p.Line, p.Reason)
	}
	return recs
}

// readDeployment reads what a log says around its calls, as the command
// does.
func readDeployment(t *testing.T, path string) *deployment {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, _, d := readLog(f, false, false)
	return d
}

// showText runs `callbacklog show` on path and returns what it printed,
// failing t unless it exits 0.
func showText(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"show"}, args...), nil, &stdout, &stderr); code != exitOK {
		t.Fatalf("callbacklog show %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func equalLists(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestAccountOfARealErrorHookRetry(t *testing.T) {
	t.Parallel()
	log := recordUp(t, "errorhook", programs+"errorhook", throttle)
	recs := resources(readFile(t, log, false))
	equalLists(t, "the calls", shapes(recs), []string{
		"token: resource transform stack transform #1 changed",
		"token: error hook retry-throttled retry",
	})
	if len(recs) == 2 {
		hook := recs[1]
		if hook.Op != "create" || hook.Attempt != 1 || !strings.Contains(hook.Message, "throttled") {
			t.Errorf("the error hook's call: operation %q, attempt %d, error seen %q; want create, 1, the provider's throttling", hook.Op, hook.Attempt, hook.Message)
		}
		if !strings.Contains(strings.Join(changePaths(recs[0]), " "), "options.hooks") {
			t.Errorf("the transform that attached the error hook changed %v, want the hooks option", changePaths(recs[0]))
		}
	}
	text := showText(t, log)
	for _, want := range []string{
		"random:index/randomString:RandomString \"token\"",
		"retry-throttled",
		"create failed (attempt 1): ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the account has no %q:\n%s", want, text)
		}
	}
}

func changePaths(r *record) []string {
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.Path)
	}
	return out
}

func TestAccountOfRealHooks(t *testing.T) {
	t.Parallel()
	log := recordUp(t, "hooks", programs+"hooks")
	recs := resources(readFile(t, log, false))
	got := shapes(recs)
	if len(got) < 3 || got[0] != "pet: resource transform stack transform #1 changed" {
		t.Fatalf("the calls of the hooks program:\n  %s\nwant the stack transform that attaches the hooks first, then the hooks", strings.Join(got, "\n  "))
	}
	names := map[string]bool{}
	for _, r := range recs[1:] {
		if r.Kind != "resource hook" || r.Name != "pet" {
			t.Errorf("call #%d: %s, want a resource hook on the pet", r.Seq, shape(r))
		}
		names[r.Registration] = true
	}
	for _, h := range []string{"before-create", "after-create"} {
		if !names[h] {
			t.Errorf("no call of the hook %s in %v", h, got)
		}
	}
}

func TestAccountOfAPlainGoSDKProgram(t *testing.T) {
	t.Parallel()
	log := recordUp(t, "sdkprogram", "./testdata/sdkprogram")
	all := readFile(t, log, false)
	recs := resources(all)
	// The SDK registers the two resources concurrently: their calls may
	// come in either order.
	got := shapes(recs)
	slices.Sort(got)
	equalLists(t, "the calls", got, []string{
		"pet: resource transform stack transform #1 changed",
		"token: resource transform stack transform #1 unchanged",
	})
	if i := slices.IndexFunc(recs, func(r *record) bool { return r.Name == "pet" }); i >= 0 {
		var prefix bool
		for _, c := range recs[i].Changes {
			prefix = prefix || (c.Path == "properties.prefix" && c.New == `"sdk"`)
		}
		if !prefix {
			t.Errorf("the pet's transform changed %+v, want properties.prefix → \"sdk\"", recs[i].Changes)
		}
	}

	// The pet's keepers hold a secret: no form of the account prints it
	// unless asked to.
	html := filepath.Join(t.TempDir(), "timeline.html")
	for name, out := range map[string]string{
		"text": showText(t, log),
		"json": showText(t, "-json", log),
	} {
		if strings.Contains(out, secret.Value) {
			t.Errorf("the %s account prints the secret:\n%s", name, out)
		}
		if !strings.Contains(out, "[secret]") {
			t.Errorf("the %s account does not say where the secret is:\n%s", name, out)
		}
	}
	showText(t, "-html", html, log)
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte(secret.Value)) {
		t.Errorf("the HTML timeline holds the secret")
	}
	if !strings.Contains(showText(t, "-secrets", log), secret.Value) {
		t.Errorf("with -secrets, the account does not show the secret the pet's transform saw")
	}

	// callbacklog scrub leaves no trace of it, and the scrubbed log gives
	// the same account.
	var scrubbed, stderr bytes.Buffer
	if code := run([]string{"scrub", log}, nil, &scrubbed, &stderr); code != exitOK {
		t.Fatalf("callbacklog scrub: exit %d: %s", code, stderr.String())
	}
	if bytes.Contains(scrubbed.Bytes(), []byte(secret.Value)) {
		t.Errorf("the scrubbed log holds the secret")
	}
	clean := filepath.Join(t.TempDir(), "scrubbed.log")
	if err := os.WriteFile(clean, scrubbed.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	after := readFile(t, clean, true)
	equalLists(t, "the calls of the scrubbed log", shapes(after), shapes(all))
	for _, r := range after {
		for _, c := range r.Changes {
			if strings.Contains(c.Old+c.New, secret.Value) {
				t.Errorf("the scrubbed log's %s still shows the secret", c.Path)
			}
		}
	}

	// The timeline of a real log, in a real browser.
	if _, err := exec.LookPath("chromium"); err == nil {
		dom, logged := browse(t, html, "--dump-dom")
		checkPage(t, dom, logged, all, readDeployment(t, log).Steps)
	}
}

func TestAccountOfARealMigration(t *testing.T) {
	t.Parallel()
	clitest.RequireCLI(t)
	out, err := exec.Command("pulumi", "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "migrations.log")
	if strings.HasPrefix(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), "3.260.") {
		// 3.260.0 runs no state migration, and the program registers none
		// with it: the log of its first deployment, which registers an
		// error hook that nothing calls, holds no callback call.
		s := clitest.NewStack(t, project(t, "migrations", programs+"migrations", log))
		s.Up().MustSucceed(t)
		equalLists(t, "the calls", shapes(readFile(t, log, false)), nil)
		if text := showText(t, log); !strings.Contains(text, "no callback calls") {
			t.Errorf("the account of a log without callback calls:\n%s", text)
		}
		return
	}
	s := clitest.NewStack(t, project(t, "migrations", programs+"migrations", ""))
	s.Up().MustSucceed(t)
	s.SetConfig("migrations:stage", "v1")
	s.SetProject(project(t, "migrations", programs+"migrations", log))
	s.Up().MustSucceed(t)
	keep(t, log)
	recs := readFile(t, log, false)
	equalLists(t, "the calls", shapes(recs), []string{"pet: state migration migration #1 migrated"})
	if len(recs) == 1 {
		paths := strings.Join(changePaths(recs[0]), " ")
		if !strings.Contains(paths, "team") || !strings.Contains(paths, "owner") {
			t.Errorf("the migration's changes are %v, want the keeper owner renamed team", paths)
		}
	}
}

func TestAccountOfARealRefusalAndRetry(t *testing.T) {
	t.Parallel()
	log := recordUp(t, "traced", programs+"traced", throttle)
	recs := resources(readFile(t, log, false))
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource transform stack transform #1 unchanged",
		"pet: resource hook audit refused",
		"pet: error hook retry retry",
	})
	if len(recs) == 3 {
		if recs[1].Message != "audit trail unavailable" {
			t.Errorf("the hook's refusal is %q, want the hook's error", recs[1].Message)
		}
		if recs[2].Attempt != 1 || !strings.Contains(recs[2].Message, "throttled") {
			t.Errorf("the error hook saw attempt %d and %q, want the first attempt's throttling", recs[2].Attempt, recs[2].Message)
		}
	}
	text := showText(t, log)
	for _, want := range []string{"refused: audit trail unavailable", "create failed (attempt 1): "} {
		if !strings.Contains(text, want) {
			t.Errorf("the account has no %q:\n%s", want, text)
		}
	}
}

// TestAccountOfManyResources records the teams program, whose library binds
// a transform and two hooks to every team's pets, and checks the account of
// every resource, and the timeline of all of them in a browser.
//
// The first team is the one resource whose calls the engine leaves open:
// NewTeam registers the team, which the SDK sends on a goroutine of its own,
// and then the stack transform, which it sends at once; whichever reaches the
// engine first decides whether the first team passes through the transform.
// Every later registration starts after the transform's registration has
// returned, so the engine applies the transform to it.
func TestAccountOfManyResources(t *testing.T) {
	t.Parallel()
	log := recordUp(t, "teams", programs+"teams")
	all := readFile(t, log, false)
	recs := resources(all)
	gs := groups(recs)
	teams := map[string]bool{}
	member := regexp.MustCompile(`^team\d+-(pet|cat)$`)
	for _, g := range gs {
		var got []string
		for _, r := range g.Calls {
			got = append(got, fmt.Sprintf("%s %s %s", r.Kind, r.Registration, r.Outcome))
		}
		switch {
		case g.Type == "teams:index:Team":
			teams[g.Name] = true
			equalLists(t, g.Name, got, []string{"resource transform stack transform #1 unchanged"})
		case member.MatchString(g.Name):
			equalLists(t, g.Name, got, []string{
				"resource transform stack transform #1 changed",
				"resource hook teams-naming ok",
				"resource hook teams-audit ok",
			})
		case g.Name == "loose":
			equalLists(t, g.Name, got, []string{"resource transform stack transform #1 unchanged"})
		default:
			t.Errorf("calls about %s %s, which the program does not create: %v", g.Type, g.Name, got)
		}
	}
	// Every team but the first, each with its two pets, and the loose pet;
	// the first team too when its registration reached the engine after the
	// transform's.
	want := 19*3 + 2 + 1
	if teams["team0"] {
		want++
	}
	for i := 1; i < 20; i++ {
		if name := fmt.Sprintf("team%d", i); !teams[name] {
			t.Errorf("the account has no transform call for %s, registered after the stack transform", name)
		}
	}
	if len(gs) != want {
		t.Errorf("the account has %d resources, want %d (the first team seen by the transform: %v)", len(gs), want, teams["team0"])
	}
	html := filepath.Join(t.TempDir(), "teams.html")
	showText(t, "-html", html, log)
	if _, err := exec.LookPath("chromium"); err == nil {
		dom, logged := browse(t, html, "--dump-dom")
		checkPage(t, dom, logged, all, readDeployment(t, log).Steps)
		if shots := os.Getenv("CALLBACKLOG_SCREENSHOT"); shots != "" {
			browse(t, html, "--screenshot="+shots, "--window-size=1280,1400", "--hide-scrollbars")
		}
	}
}

// TestAccountOfARealInvokeTransform records a plain Go SDK program whose
// invoke transform rewrites the argument of an invoke: the account shows
// it with the stack-wide calls, with the invoke's token and the change.
func TestAccountOfARealInvokeTransform(t *testing.T) {
	t.Parallel()
	log := recordUp(t, "invokeprogram", "./testdata/invokeprogram")
	recs := readFile(t, log, false)
	equalLists(t, "the calls", shapes(recs), []string{": invoke transform stack invoke transform #1 changed"})
	if len(recs) == 1 {
		r := recs[0]
		want := []change{{Path: "args.urn", Old: `"urn:placeholder"`, New: `"urn:pulumi:dev::invokeprogram::pulumi:pulumi:Stack::invokeprogram-dev"`}}
		if r.Invoke != "pulumi:pulumi:getResource" || r.URN != "" || fmt.Sprint(r.Changes) != fmt.Sprint(want) {
			t.Errorf("the invoke transform's call: invoke %q, URN %q, changes %v; want pulumi:pulumi:getResource, none, %v", r.Invoke, r.URN, r.Changes, want)
		}
	}
	if text := showText(t, log); !strings.Contains(text, "stack-wide (about no resource)") || !strings.Contains(text, "invoke pulumi:pulumi:getResource") {
		t.Errorf("the account does not show the invoke transform with the stack-wide calls:\n%s", text)
	}
}
