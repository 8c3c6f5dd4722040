package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFilterKeeps(t *testing.T) {
	pet := &record{URN: "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::db", Type: "random:index/randomPet:RandomPet",
		Name: "db", Kind: "resource hook", Outcome: "refused", Run: "update"}
	invoke := &record{Kind: "invoke transform", Outcome: "changed", Run: "preview"}
	for _, c := range []struct {
		name      string
		flags     []string
		pet, invk bool
	}{
		{"nothing given keeps all", nil, true, true},
		{"a name", []string{"-resource", "db"}, true, false},
		{"a glob across the type's slash", []string{"-resource", "random:*Pet*"}, true, false},
		{"a URN glob", []string{"-resource", "urn:pulumi:dev::*::db"}, true, false},
		{"a glob that matches a part only", []string{"-resource", "d"}, false, false},
		{"a kind with a dash", []string{"-kind", "resource-hook"}, true, false},
		{"either of two kinds", []string{"-kind", "invoke_transform,resource hook"}, true, true},
		{"an outcome", []string{"-outcome", "Refused"}, true, false},
		{"a run", []string{"-run", "preview"}, false, true},
		{"all flags must keep it", []string{"-resource", "db", "-outcome", "changed"}, false, false},
		{"a flag given twice", []string{"-outcome", "refused", "-outcome", "changed"}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f filter
			fs := newFlags("show", nil)
			f.flags(fs)
			if err := fs.Parse(c.flags); err != nil {
				t.Fatal(err)
			}
			got := f.apply([]*record{pet, invoke}, &deployment{})
			if slices.Contains(got, pet) != c.pet || slices.Contains(got, invoke) != c.invk {
				t.Errorf("%v keeps the hook %v and the invoke transform %v, want %v and %v (%s)",
					c.flags, slices.Contains(got, pet), slices.Contains(got, invoke), c.pet, c.invk, f.String())
			}
		})
	}
}

// TestShowFilters runs show with filters on a recorded log: every view
// holds only what they keep, steps included, and the account says it is
// filtered; a filter that keeps nothing says so and prints no account.
func TestShowFilters(t *testing.T) {
	log := filepath.Join("testdata", "logs", "errorhook.jsonl")
	var out, errs bytes.Buffer
	if code := run([]string{"show", "-kind", "error-hook,provider-step", log}, nil, &out, &errs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	text := out.String()
	for _, want := range []string{"(only kind error-hook or provider-step)", "retry-throttled", "provider step  Create"} {
		if !strings.Contains(text, want) {
			t.Errorf("the filtered account has no %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "stack transform") {
		t.Errorf("the filtered account shows a transform:\n%s", text)
	}

	out.Reset()
	if code := run([]string{"show", "-json", "-outcome", "retry", log}, nil, &out, &errs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	calls := 0
	for line := range strings.Lines(out.String()) {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if _, ok := v["deployment"]; ok {
			continue
		}
		calls++
		if v["outcome"] != "retry" {
			t.Errorf("-outcome retry printed %s", line)
		}
	}
	if calls != 1 {
		t.Errorf("-outcome retry printed %d calls, want the error hook's one:\n%s", calls, out.String())
	}

	html := filepath.Join(t.TempDir(), "t.html")
	out.Reset()
	if code := run([]string{"show", "-html", html, "-kind", "error-hook", log}, nil, &out, &errs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("retry-throttled")) || bytes.Contains(page, []byte("stack transform #1")) {
		t.Errorf("the filtered timeline does not hold just the error hook")
	}

	out.Reset()
	errs.Reset()
	if code := run([]string{"show", "-run", "preview", log}, nil, &out, &errs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if out.Len() != 0 || !strings.Contains(errs.String(), "no call matches run preview") {
		t.Errorf("a filter that keeps nothing printed %q and said %q", out.String(), errs.String())
	}
}
