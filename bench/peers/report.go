package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// key names a cell: a target at a size and concurrency.
type key struct {
	target, size string
	conc         int
}

// report is what a run measured.
type report struct {
	cfg      config
	targets  []string // measured, in the order of peers
	notes    []string // on targets left out
	problems []string // of targets that did not exit cleanly
	versions []string // of the Go toolchain and the peers' SDKs
	cells    map[key]*cell
	warmups  map[key]*cell
	elapsed  time.Duration // of the measuring
}

func newReport(cfg config, cmds []command, notes []string) *report {
	r := &report{cfg: cfg, notes: notes, cells: map[key]*cell{}, warmups: map[key]*cell{}}
	for _, c := range cmds {
		r.targets = append(r.targets, c.name)
	}
	r.versions = append(r.versions, fmt.Sprintf("%s %s/%s, %d CPUs", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU()))
	for _, c := range cmds {
		switch c.name {
		case "gosdk":
			r.versions = append(r.versions, "gosdk on sdk/v3 "+goSDKVersion())
		case "nodesdk":
			r.versions = append(r.versions, "nodesdk on @pulumi/pulumi "+nodeSDKVersion(c))
		}
	}
	return r
}

// goSDKVersion returns the version of the Go SDK this module requires,
// which the gosdk target is built with.
func goSDKVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "github.com/pulumi/pulumi/sdk/v3" {
				return m.Version
			}
		}
	}
	return "?"
}

// nodeSDKVersion returns the versions of @pulumi/pulumi and Node.js that
// the nodesdk command runs.
func nodeSDKVersion(c command) string {
	sdk := "?"
	for _, e := range c.env {
		if dir, ok := strings.CutPrefix(e, "NODE_PATH="); ok {
			var pkg struct{ Version string }
			if b, err := os.ReadFile(filepath.Join(dir, "@pulumi/pulumi/package.json")); err == nil && json.Unmarshal(b, &pkg) == nil {
				sdk = pkg.Version
			}
		}
	}
	node, err := exec.Command(c.argv[0], "--version").Output()
	if err != nil {
		return sdk
	}
	return sdk + " on node " + strings.TrimSpace(string(node))
}

// cell returns the cell of m for the target, size and concurrency, made
// on first use.
func (r *report) cell(m map[key]*cell, target, size string, conc int) *cell {
	k := key{target, size, conc}
	if m[k] == nil {
		m[k] = &cell{}
	}
	return m[k]
}

// failed counts the calls that failed or failed their check, warm-ups
// included.
func (r *report) failed() int {
	n := 0
	for _, m := range []map[key]*cell{r.cells, r.warmups} {
		for _, c := range m {
			n += c.failed
		}
	}
	return n
}

// progress is one line on a size and concurrency, once measured.
func (r *report) progress(size string, conc int) string {
	var parts []string
	for _, t := range r.targets {
		c := r.cells[key{t, size, conc}]
		part := fmt.Sprintf("%s %s/s p50 %s µs max %s µs", t, group(c.perSecond()), micros(c.p(0.5)), micros(c.p(1)))
		if c.failed > 0 {
			part += fmt.Sprintf(" (%d FAILED)", c.failed)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// write prints the table and what failed.
func (r *report) write(w io.Writer) {
	cfg := r.cfg
	fmt.Fprintf(w, "Identity resource transform, unary Invoke over 127.0.0.1; %s.\n", strings.Join(r.versions, "; "))
	fmt.Fprintf(w, "Windows of %v × %d rounds, targets interleaved; warm-up %v at c=%d. Measuring took %.0f s.\n",
		cfg.window, cfg.rounds, cfg.warmup, warmupConc, r.elapsed.Seconds())
	fmt.Fprintln(w)
	base := cfg.baseline
	fmt.Fprintf(w, "| size | c | target | calls | calls/s | p50 µs | p99 µs | CPU µs/call | p50 ÷ %s's | CPU ÷ %s's | ours' calls/s ÷ target's |\n", base, base)
	fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, size := range cfg.sizes {
		for _, conc := range cfg.concs {
			b := r.cells[key{base, size, conc}]
			ours := r.cells[key{"ours", size, conc}]
			for _, t := range r.targets {
				c := r.cells[key{t, size, conc}]
				if c == nil {
					continue
				}
				cpu, cpuKnown := c.cpuPerCall()
				p50, cpuRatio, thr := "–", "–", "–"
				if b != nil && t != base {
					p50 = ratio(c.p(0.5).Seconds(), b.p(0.5).Seconds())
					if bcpu, ok := b.cpuPerCall(); ok && cpuKnown {
						cpuRatio = ratio(cpu.Seconds(), bcpu.Seconds())
					}
				}
				if ours != nil && t != "ours" {
					thr = ratio(ours.perSecond(), c.perSecond())
				}
				cpuCell := "–"
				if cpuKnown {
					cpuCell = micros1(cpu)
				}
				fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", size, conc, t,
					group(float64(c.calls)), group(c.perSecond()), micros(c.p(0.5)), micros(c.p(0.99)), cpuCell, p50, cpuRatio, thr)
			}
		}
	}
	fmt.Fprintln(w)
	for _, n := range r.notes {
		fmt.Fprintln(w, n)
	}
	calls := 0
	for _, m := range []map[key]*cell{r.cells, r.warmups} {
		for _, c := range m {
			calls += c.calls
		}
	}
	for _, p := range r.problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
	if r.failed() == 0 {
		fmt.Fprintf(w, "%s calls, warm-ups included: every one answered and verified.\n", group(float64(calls)))
		return
	}
	fmt.Fprintf(w, "%s calls, warm-ups included: %d FAILED:\n", group(float64(calls)), r.failed())
	for _, part := range []struct {
		label string
		cells map[key]*cell
	}{{"warm-up", r.warmups}, {"c=", r.cells}} {
		for _, k := range slices.SortedFunc(maps.Keys(part.cells), compareKeys) {
			for msg, n := range part.cells[k].failures {
				label := part.label
				if label == "c=" {
					label += fmt.Sprint(k.conc)
				}
				fmt.Fprintf(w, "  %s %s %s: %d× %s\n", k.target, k.size, label, n, msg)
			}
		}
	}
}

func compareKeys(a, b key) int {
	return cmp.Or(strings.Compare(a.target, b.target), strings.Compare(a.size, b.size), cmp.Compare(a.conc, b.conc))
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func micros(d time.Duration) string { return group(float64(d.Microseconds())) }

// micros1 writes durations under a millisecond to a tenth of a microsecond.
func micros1(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.1f", float64(d.Nanoseconds())/1e3)
	}
	return micros(d)
}

// group writes a number rounded to a whole one, with thousands separated
// by commas.
func group(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
