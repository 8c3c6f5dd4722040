package callbacks_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/langhost/callbacks"

// layers are the library's layers, lowest first, as ARCHITECTURE.md
// draws them. A package may import packages of its own layer and of the
// layers below it, never of a layer above. A path ending in "/..." stands
// for every package under it.
var layers = []struct {
	name string
	pkgs []string
}{
	{"wire", []string{"internal/wire/..."}},
	{"core", []string{""}},
	{"monitor", []string{"monitor"}},
	{"registration", []string{"internal/registration", "internal/transformcore"}},
	{"typed", []string{"transforms", "invoketransforms", "hooks", "migrations"}},
	{"program", []string{"program"}},
	{"test support", []string{"monitor/monitortest", "internal/testkit/..."}},
}

// Packages outside the library: applications of it, which may import any
// of it, and the engine's side of the protocol, which imports none of it,
// so that it speaks only the wire.
var (
	applications = []string{"examples/...", "integration/...", "bench/...", "cmd/bigpayload", "cmd/soak"}
	wireOnly     = []string{"enginetest/...", "cmd/callbackconform/..."}
)

func matches(rel string, patterns []string) bool {
	for _, p := range patterns {
		if under, ok := strings.CutSuffix(p, "/..."); ok && (rel == under || strings.HasPrefix(rel, under+"/")) || rel == p {
			return true
		}
	}
	return false
}

// layerOf returns the index of the layer of the module's package rel
// (its path inside the module), or -1 if it is in none.
func layerOf(rel string) int {
	for i, l := range layers {
		if matches(rel, l.pkgs) {
			return i
		}
	}
	return -1
}

// The library's imports run one way, down the layers, and every package of
// the module is placed: a new one must be given its layer here and in
// ARCHITECTURE.md.
func TestImportsRunDownTheLayers(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the module's packages")
	}
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		for _, problem := range importProblems(pkg, fields[1:]) {
			t.Error(problem)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// importProblems says what is wrong with the imports of the module's
// package pkg (a path inside the module).
func importProblems(pkg string, imports []string) []string {
	var problems []string
	name := func(rel string) string { return strings.TrimSuffix(module+"/"+rel, "/") }
	at := layerOf(pkg)
	switch {
	case at < 0 && matches(pkg, applications):
		return nil
	case at < 0 && !matches(pkg, wireOnly):
		return []string{fmt.Sprintf("%s is in no layer: place it in architecture_test.go and ARCHITECTURE.md", name(pkg))}
	}
	for _, imp := range imports {
		rel, ours := strings.CutPrefix(imp, module)
		if !ours || rel != "" && rel[0] != '/' {
			continue
		}
		rel = strings.TrimPrefix(rel, "/")
		to := layerOf(rel)
		switch {
		case at < 0 && to >= 0:
			problems = append(problems, fmt.Sprintf("%s must speak only the wire, but imports %s (%s layer)", name(pkg), imp, layers[to].name))
		case at >= 0 && to > at:
			problems = append(problems, fmt.Sprintf("%s (%s layer) imports %s of the %s layer above it", name(pkg), layers[at].name, imp, layers[to].name))
		case at >= 0 && to < 0:
			problems = append(problems, fmt.Sprintf("%s (%s layer) imports %s, which is not part of the library", name(pkg), layers[at].name, imp))
		}
	}
	return problems
}

// The rule itself, on imports the module does not have.
func TestImportProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pkg     string
		imports []string
		want    string // a part of the one problem expected; "" for none
	}{
		{"", []string{module + "/internal/wire", "google.golang.org/grpc"}, ""},
		{"", []string{module + "/monitor"}, "imports github.com/langhost/callbacks/monitor of the monitor layer above it"},
		{"internal/wire", []string{module}, "(wire layer) imports github.com/langhost/callbacks of the core layer"},
		{"hooks", []string{module + "/transforms", module + "/internal/registration"}, ""},
		{"transforms", []string{module + "/program"}, "of the program layer above it"},
		{"program", []string{module + "/internal/testkit/wiretest"}, "of the test support layer above it"},
		{"monitor", []string{module + "/examples/readme"}, "which is not part of the library"},
		{"enginetest", []string{module + "/enginetest/internal/x", "google.golang.org/grpc"}, ""},
		{"enginetest", []string{module + "/internal/wire"}, "must speak only the wire"},
		{"examples/readme", []string{module + "/program"}, ""},
		{"newpkg", nil, "is in no layer"},
	} {
		got := importProblems(tc.pkg, tc.imports)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%q importing %v: got %q, want no problem", tc.pkg, tc.imports, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%q importing %v: got %q, want one problem with %q", tc.pkg, tc.imports, got, tc.want)
		}
	}
}
