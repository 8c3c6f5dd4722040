package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// largePageLimit bounds one run of the browser on the large page, so that a
// hang fails the test: the page took Chromium over a minute on the shared
// 2-core machine under load, and this is far beyond that.
const largePageLimit = 20 * time.Minute

var rowRE = regexp.MustCompile(`<div class="row" role="listitem" data-urn="([^"]*)">`)

// TestLargeTimelineInABrowser loads the timeline of a scaleLog of 10,000
// resources (the account of the log made directly: reading the log takes
// long under the race detector) in headless Chromium: every row and bar is
// there, and with a filter applied, only the rows and bars it keeps. How
// long the browser took is logged, never judged.
func TestLargeTimelineInABrowser(t *testing.T) {
	chromium(t)
	const n = 10000
	load := func(t *testing.T, recs []*record, d *deployment) (dom string) {
		page := filepath.Join(t.TempDir(), "up.html")
		if err := writeHTMLFile(page, "up.jsonl", fromGRPC, recs, nil, d); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(page)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		dom, logged := browseWithin(t, largePageLimit, page, "--dump-dom")
		t.Logf("Chromium loaded the page of %d rows, %d bars and %d MiB in %v", 2*len(groups(recs)), len(recs)+len(d.Steps),
			fi.Size()>>20, time.Since(began).Round(time.Millisecond))
		checkPage(t, dom, logged, recs, d.Steps)
		return dom
	}
	rows := func(dom string) map[string]int {
		out := map[string]int{}
		for _, m := range rowRE.FindAllStringSubmatch(dom, -1) {
			out[m[1]]++
		}
		return out
	}

	t.Run("whole", func(t *testing.T) {
		recs, d := scaleAccount(n)
		got := rows(load(t, recs, d))
		if len(got) != n {
			t.Errorf("the page has rows for %d resources, want %d", len(got), n)
		}
		for i := range n {
			if got[scaleURN(i)] != 2 { // one in each run
				t.Errorf("resource %s has %d rows, want 2", scaleName(i), got[scaleURN(i)])
				break
			}
		}
	})

	t.Run("filtered", func(t *testing.T) {
		recs, d := scaleAccount(n)
		f := filter{resources: multi{"pet-0042?"}, kinds: multi{"resource-hook", "provider-step"}}
		recs = f.apply(recs, d)
		if len(recs) != 10 || len(d.Steps) != 50 {
			t.Fatalf("the filter kept %d calls and %d steps, want 10 hooks and 50 steps", len(recs), len(d.Steps))
		}
		got := rows(load(t, recs, d))
		want := map[string]int{}
		for i := 420; i < 430; i++ {
			want[scaleURN(i)] = 2
		}
		if !maps.Equal(got, want) {
			t.Errorf("the filtered page has rows %v, want %v", got, want)
		}
	})
}
