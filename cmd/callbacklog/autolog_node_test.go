package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/langhost/callbacks/integration/clitest"
)

// nodeRunner is a Pulumi "binary" that runs a Node.js program with the
// Node.js SDK's own runner, given what the Go language host passes a
// program in its environment: a Node.js program under the real CLI with no
// Node.js language host.
const nodeRunner = `#!/bin/sh
dry=
if [ "$PULUMI_DRY_RUN" = "true" ]; then dry=--dry-run; fi
exec node %s --monitor="$PULUMI_MONITOR" --engine="$PULUMI_ENGINE" \
	--project="$PULUMI_PROJECT" --stack="$PULUMI_STACK" --organization="$PULUMI_ORGANIZATION" \
	--parallel="${PULUMI_PARALLEL:-16}" --pwd="$PWD" $dry %s
`

// nodeProgram writes a runner of the Node.js program file of
// testdata/nodejs and returns its path, skipping t when node or the SDK's
// packages are not installed.
func nodeProgram(t *testing.T, file string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: install Node.js with npm, then run npm ci in testdata/nodejs")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "nodejs"))
	if err != nil {
		t.Fatal(err)
	}
	runner := filepath.Join(dir, "node_modules", "@pulumi", "pulumi", "cmd", "run")
	if _, err := os.Stat(filepath.Join(runner, "index.js")); err != nil {
		t.Skip("the Node.js SDK is not installed in testdata/nodejs: run npm ci there")
	}
	script := filepath.Join(t.TempDir(), "run-node-program")
	body := fmt.Sprintf(nodeRunner, shellQuote(runner), shellQuote(filepath.Join(dir, file)))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestAutoLogOfARealNodeJSProgram runs a Node.js program with a stack
// transform and two resource hooks under the real CLI and reads its
// automatic log: the calls are told from the engine's lines alone (the
// Node.js SDK writes no records of its calls), the transform with what it
// changed and the hooks by their names, and the account says what those
// lines cannot tell.
func TestAutoLogOfARealNodeJSProgram(t *testing.T) {
	t.Parallel()
	clitest.RequireCLI(t)
	script := nodeProgram(t, "autolog.js")
	p := clitest.Project{
		Name:      "nodeprogram",
		Program:   script,
		Providers: map[string]string{"random": builds.Provider(t, providerPkg, "random")},
	}
	log, _ := decryptedUpOf(t, p, nil)
	recs := resources(readAuto(t, log, false))
	equalLists(t, "the calls", shapes(recs), []string{
		"pet: resource transform transform changed",
		"pet: resource hook node-before-create ok",
		"pet: resource hook node-after-create ok",
	})
	if len(recs) == 3 {
		// The Node.js SDK answers with options the transform did not set
		// (protect: false, ...), which the account shows as changed options.
		got := recs[0].Changes
		if !slices.ContainsFunc(got, func(c change) bool { return c.Path == "properties.prefix" && c.New == `"node"` }) ||
			slices.ContainsFunc(got, func(c change) bool { return c.Path != "properties.prefix" && !strings.HasPrefix(c.Path, "options.") }) {
			t.Errorf("the transform changed %+v, want properties.prefix → \"node\" and options only besides", got)
		}
		for _, r := range recs[1:] {
			if r.URN != "urn:pulumi:dev::nodeprogram::random:index/randomPet:RandomPet::pet" || r.NoDuration {
				t.Errorf("the hook call %s: URN %q, duration given %v", shape(r), r.URN, !r.NoDuration)
			}
		}
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, info := readAutoLog(f, false); info.moduleCalls != 0 || info.origin().Text != fromAuto.Text {
		t.Errorf("%d calls from the module's records, source %q; want none, from the engine's lines alone", info.moduleCalls, info.origin().Text)
	}
	text := showText(t, log)
	for _, want := range append([]string{
		"source        Pulumi's automatic log (pulumi logs decrypt)",
		"cannot tell",
		"node-before-create",
		"node-after-create",
	}, fromAuto.Cannot...) {
		if !strings.Contains(text, want) {
			t.Errorf("the account has no %q:\n%s", want, text)
		}
	}
}
