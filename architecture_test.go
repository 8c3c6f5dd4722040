package callbacks_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
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
	{"wire", []string{"internal/wire/...", "internal/callsite", "internal/calllog", "internal/changes"}},
	{"core", []string{""}},
	{"monitor", []string{"monitor"}},
	{"registration", []string{"internal/registration", "internal/transformcore"}},
	{"typed", []string{"transforms", "invoketransforms", "hooks", "migrations"}},
	{"program", []string{"program"}},
	{"test support", []string{"monitor/monitortest", "internal/testkit/..."}},
}

// Packages outside the library: applications of it, which may import any
// of it, and the engine side, which plays or reads the engine and which
// the library never imports. The engine side may import its own packages;
// of it, the simulator and the conformance kit (wireOnly) import none of
// the library, so that they speak only the wire, and replay and callbacklog
// import the library's public packages as its users do and, of its internal
// packages, only those internalOf names.
var (
	applications = []string{"examples/...", "integration/...", "bench/...", "cmd/bigpayload", "cmd/soak"}
	wireOnly     = []string{"enginetest/...", "cmd/callbackconform/..."}
	engineSide   = append([]string{"replay", "cmd/callbacklog", "internal/redact"}, wireOnly...)
	// internalOf are the library's internal packages an engine-side
	// package may import: replay says what a call changed with the differ
	// the records of calls use; callbacklog reads those records (their
	// schema) and converts the property maps of Pulumi's log; the
	// scrubbers' table knows a secret as the differ does.
	internalOf = map[string][]string{
		"replay":          {"internal/changes"},
		"cmd/callbacklog": {"internal/calllog", "internal/wire"},
		"internal/redact": {"internal/changes"},
	}
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
	case at < 0 && !matches(pkg, engineSide):
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
		case at < 0 && to >= 0 && matches(pkg, wireOnly):
			problems = append(problems, fmt.Sprintf("%s must speak only the wire, but imports %s (%s layer)", name(pkg), imp, layers[to].name))
		case at < 0 && to >= 0 && matches(rel, []string{"internal/..."}) && !slices.Contains(internalOf[pkg], rel):
			problems = append(problems, fmt.Sprintf("%s (engine side) imports %s, an internal package of the library that internalOf does not give it", name(pkg), imp))
		case at < 0 && to < 0 && !matches(rel, engineSide):
			problems = append(problems, fmt.Sprintf("%s (engine side) imports %s, which is neither the library nor the engine side", name(pkg), imp))
		case at >= 0 && to < 0 && matches(rel, engineSide):
			problems = append(problems, fmt.Sprintf("%s (%s layer) imports %s of the engine side, which the library never imports", name(pkg), layers[at].name, imp))
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
		{"cmd/callbackconform", []string{module + "/replay"}, ""},
		{"replay", []string{module, module + "/enginetest", module + "/internal/changes"}, ""},
		{"replay", []string{module + "/internal/wire"}, "an internal package of the library that internalOf does not give it"},
		{"cmd/callbacklog", []string{module + "/internal/calllog", module + "/transforms"}, ""},
		{"cmd/callbacklog", []string{module + "/internal/changes"}, "internal package of the library"},
		{"cmd/callbacklog", []string{module, module + "/replay"}, ""},
		{"replay", []string{module + "/examples/readme"}, "neither the library nor the engine side"},
		{"program", []string{module + "/enginetest"}, "of the engine side, which the library never imports"},
		{"", []string{module + "/replay"}, "of the engine side, which the library never imports"},
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

// coreModules are the modules whose packages the core may link: the
// protocol (the SDK's generated protos, gRPC, protobuf and what they need),
// uuid, and OpenTelemetry's trace API with its gRPC instrumentation (the
// spans of calls) and what those need. Never the SDK's Go packages, which
// pull in glog, go-git and much more, nor OpenTelemetry's SDK or exporters:
// a program brings those when it traces.
var coreModules = []string{
	"github.com/pulumi/pulumi/sdk/v3", // proto/go only: see coreDepProblem
	"google.golang.org/grpc", "google.golang.org/protobuf", "google.golang.org/genproto/googleapis/rpc",
	"golang.org/x/net", "golang.org/x/sys", "golang.org/x/text",
	"github.com/google/uuid",
	"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/metric",
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc",
	"go.opentelemetry.io/proto/otlp", // the OTLP logs protos only: the records of calls (internal/calllog)
	"go.opentelemetry.io/auto/sdk", "github.com/go-logr/logr", "github.com/go-logr/stdr", "github.com/cespare/xxhash/v2",
}

// coreDepProblem says what is wrong with the core linking package pkg of
// module mod ("" for the standard library), if anything.
func coreDepProblem(pkg, mod string) string {
	switch {
	case mod == "" || mod == module:
		return ""
	case !slices.Contains(coreModules, mod):
		return fmt.Sprintf("the core links %s (module %s), which is not among coreModules", pkg, mod)
	case mod == "github.com/pulumi/pulumi/sdk/v3" && !strings.HasPrefix(pkg, mod+"/proto/go"):
		return fmt.Sprintf("the core links %s: of the Pulumi SDK only the protos (proto/go) are light", pkg)
	}
	return ""
}

// The core stays light: every package it links, directly or not, comes
// from coreModules (a cold build of
// a package that links the SDK's Go packages takes several times as long).
func TestCoreStaysLight(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list the core's dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{if .Module}}{{.Module.Path}}{{end}}", module).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, mod, _ := strings.Cut(line, " ")
		if problem := coreDepProblem(pkg, mod); problem != "" {
			t.Error(problem)
		}
	}
}

// The rule itself, on dependencies the core does not have.
func TestCoreDepProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pkg, mod, want string }{
		{"context", "", ""},
		{"github.com/pulumi/pulumi/sdk/v3/proto/go", "github.com/pulumi/pulumi/sdk/v3", ""},
		{"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin", "github.com/pulumi/pulumi/sdk/v3", "only the protos"},
		{"go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/trace", ""},
		{"go.opentelemetry.io/otel/sdk/trace", "go.opentelemetry.io/otel/sdk", "not among coreModules"},
		{"github.com/golang/glog", "github.com/golang/glog", "not among coreModules"},
	} {
		got := coreDepProblem(tc.pkg, tc.mod)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("coreDepProblem(%q, %q) = %q, want %q", tc.pkg, tc.mod, got, tc.want)
		}
	}
}
