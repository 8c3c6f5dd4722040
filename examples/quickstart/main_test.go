package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/langhost/callbacks/hooks"
)

// TestQuickstartOnTheSimulator runs the program the way `go run` does with
// no engine around. simulate itself fails when a transform, hook or retry
// did not happen; the test also pins the lines a reader of the README looks
// for, and that a second run prints exactly the same account.
func TestQuickstartOnTheSimulator(t *testing.T) {
	var first bytes.Buffer
	if err := simulate(t.Context(), &first); err != nil {
		t.Fatalf("simulate: %v\n%s", err, first.String())
	}
	out := first.String()
	for _, want := range []string{
		`transform "tag-resources"         pet                        ok (props replaced)`,
		`hook before_create "audit"        suffix                     ok`,
		`provider create                   suffix                     error: throttled: rate exceeded, try again`,
		`error hook "retry-throttled"      suffix                     asks for a retry`,
		`provider create                   suffix                     attempt 2 id=k3v9x2qa`,
		`invoke transform "label-lookups"  pulumi:pulumi:getResource  added argument requestedBy`,
		`tags (keepers): managed-by=pulumi owner=pets-team project=quickstart stack=dev`,
		`warning  suffix  length 8 is short for a unique suffix; 12 or more is safer  (callback)`,
		`warning  suffix  retrying create due to on-error hook request (1/100)        (engine)`,
		"quickstart: ok (4 resources, 10 callback calls)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n"); n > 60 {
		t.Errorf("the output has %d lines; keep it under 60", n)
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out)
	}

	var second bytes.Buffer
	if err := simulate(t.Context(), &second); err != nil {
		t.Fatalf("second simulate: %v\n%s", err, second.String())
	}
	if second.String() != out {
		t.Errorf("the output differs between runs:\nfirst:\n%s\nsecond:\n%s", out, second.String())
	}
}

// TestRetryThrottled pins which failures the error hook retries.
func TestRetryThrottled(t *testing.T) {
	for _, tc := range []struct {
		errors []string
		want   bool
	}{
		{[]string{"throttled: rate exceeded, try again"}, true},
		{[]string{"429 Too Many Requests"}, true},
		{[]string{"access denied"}, false},
		{[]string{"Throttled", "Throttled", "Throttled", "Throttled"}, true},
		{[]string{"Throttled", "Throttled", "Throttled", "Throttled", "Throttled"}, false}, // five attempts
	} {
		got, err := retryThrottled(t.Context(), errorArgs(tc.errors))
		if err != nil || got != tc.want {
			t.Errorf("retryThrottled(%q) = %t, %v; want %t", tc.errors, got, err, tc.want)
		}
	}
}

func errorArgs(errs []string) *hooks.ErrorArgs {
	return &hooks.ErrorArgs{Name: "suffix", Type: stringType, FailedOperation: hooks.OperationCreate, Errors: errs}
}
