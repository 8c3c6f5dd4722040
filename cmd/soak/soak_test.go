package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// A short soak of each kind passes, and a soak whose function fails is
// reported as failed. Each caller makes a minimum number of calls, so that
// the verdicts do not depend on how many fit in the duration. The runs are
// sequential on purpose: each counts the process's goroutines before and
// after, which parallel runs would skew.
func TestRunShortSoak(t *testing.T) {
	cases := []struct {
		name      string
		cfg       config
		wantFail  string // substring of check's error; "" for a passing run
		wantSetup bool   // run itself must refuse the config
	}{
		{name: "raw", cfg: config{Duration: time.Second, Conc: 4, Payload: 1024, Kind: "raw", MinCalls: 20}},
		{name: "transform", cfg: config{Duration: time.Second, Conc: 4, Payload: 1024, Kind: "transform", MinCalls: 20}},
		{name: "empty raw payload", cfg: config{Duration: 200 * time.Millisecond, Conc: 2, Payload: 0, Kind: "raw", MinCalls: 20}},
		{name: "failing function", cfg: config{Duration: 200 * time.Millisecond, Conc: 2, Payload: 16, Kind: "raw", FailEvery: 5, MinCalls: 5},
			wantFail: "calls failed"},
		{name: "unknown kind", cfg: config{Duration: time.Second, Conc: 1, Kind: "nope"}, wantSetup: true},
		{name: "no callers", cfg: config{Duration: time.Second, Kind: "raw"}, wantSetup: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rep, err := run(ctx, tc.cfg)
			if tc.wantSetup {
				if err == nil {
					t.Fatalf("run accepted %+v", tc.cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			var out bytes.Buffer
			rep.print(&out)
			t.Logf("\n%s", out.String())

			err = rep.check()
			if tc.wantFail == "" {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				if rep.P50 <= 0 || rep.P50 > rep.P99 || rep.P99 > rep.Max {
					t.Errorf("latencies p50 %v, p99 %v, max %v are not ordered", rep.P50, rep.P99, rep.Max)
				}
				if !strings.Contains(out.String(), "errors:      0\n") {
					t.Errorf("the report does not show zero errors")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantFail) {
				t.Fatalf("check: got %v, want an error containing %q", err, tc.wantFail)
			}
			if rep.Errors == 0 || rep.FirstError == nil {
				t.Errorf("errors %d, first %v: the failures were not counted", rep.Errors, rep.FirstError)
			}
		})
	}
}
