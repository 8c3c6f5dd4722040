package callsite

import (
	"runtime"
	"strings"
	"testing"
)

// A site names its file as -trimpath would, never by the directory the
// program was built in.
func TestSiteHidesTheBuildDirectory(t *testing.T) {
	site := Site() // this test file is outside the library's code
	if want := "github.com/langhost/callbacks/internal/callsite/callsite_test.go:"; !strings.HasPrefix(site, want) {
		t.Errorf("Site() = %q, want it to start with %q", site, want)
	}
	tests := []struct {
		name string
		f    runtime.Frame
		want string
	}{
		{"a package", runtime.Frame{File: "/home/me/src/shop/infra/tags.go", Function: "example.com/shop/infra.Tag"}, "example.com/shop/infra/tags.go"},
		{"a method", runtime.Frame{File: "/home/me/src/shop/infra/tags.go", Function: "example.com/shop/infra.(*Stack).Tag.func1"}, "example.com/shop/infra/tags.go"},
		{"package main", runtime.Frame{File: "/home/me/src/shop/main.go", Function: "main.main.func1"}, "main.go"},
		{"an external test package", runtime.Frame{File: "/home/me/src/shop/infra/tags_test.go", Function: "example.com/shop/infra_test.TestTag"}, "example.com/shop/infra/tags_test.go"},
		{"trimmed already", runtime.Frame{File: "example.com/shop/main.go", Function: "main.main"}, "example.com/shop/main.go"},
	}
	for _, tt := range tests {
		if got := fileOf(tt.f); got != tt.want {
			t.Errorf("%s: fileOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
