package main

import (
	"bytes"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// TestLanghostOnTheSimulator runs the program the way `go run` does with no
// engine around: two runs, the second dropping old-pet. run itself fails when
// the transform did not apply, the raw hook did not run for old-pet, or ran
// before the program signalled.
func TestLanghostOnTheSimulator(t *testing.T) {
	t.Setenv("PULUMI_MONITOR", "") // not under `pulumi up`, even if the test is

	var out bytes.Buffer
	if err := run(t.Context(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	_, run2, ok := strings.Cut(got, "Run 2")
	if !ok {
		t.Fatalf("no second run in the output:\n%s", got)
	}
	// In the second run the delete, the raw hook's message and the hook
	// call come after the signal, in that order.
	order := []string{
		"program signals it is done",
		"step delete                        old-pet",
		"message from a callback            old-pet  info: farewell, old-pet (id old-pet-id, 3 words)",
		`hook after_delete "farewell"       old-pet  ok`,
		"monitor.Finish returned",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(run2[at:], want)
		if i < 0 {
			t.Fatalf("the second run lacks %q after %q:\n%s", want, run2[:at], got)
		}
		at += i + len(want)
	}
	if !strings.Contains(got, "langhost: ok (2 runs, 4 callback calls)") {
		t.Errorf("unexpected summary:\n%s", got)
	}
}

func TestKeepOld(t *testing.T) {
	for _, tc := range []struct {
		config map[string]string
		want   bool
	}{
		{nil, true},
		{map[string]string{"langhost:keepOld": "false"}, false},
		{map[string]string{"langhost:keepOld": "true"}, true},
		{map[string]string{"langhost:keepOld": "maybe"}, true},
		{map[string]string{"other:keepOld": "false"}, true},
	} {
		info := &pulumirpc.DeploymentInfo{Project: "langhost", Config: tc.config}
		if got := keepOld(info); got != tc.want {
			t.Errorf("keepOld(%v) = %t, want %t", tc.config, got, tc.want)
		}
	}
}
