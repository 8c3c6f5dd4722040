package main

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// browserLimit bounds one run of the browser, so that a hang fails the test
// with what the browser said; it is far beyond what a loaded machine needs.
const browserLimit = 3 * time.Minute

// chromium returns the path of Debian's Chromium, or skips t saying how to
// install it. CI installs it (.ci/run), so under STRICT=1 the skip fails.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not on PATH: the HTML timeline is not checked in a browser; install it with apt-get install -y --no-install-recommends chromium")
	}
	return path
}

// browse loads the HTML file in headless Chromium, with nothing reaching the
// network, and returns the DOM the page's script built and what the browser
// logged (its console included).
func browse(t *testing.T, file string, extra ...string) (dom, logged string) {
	t.Helper()
	return browseWithin(t, browserLimit, file, extra...)
}

// browseWithin is browse with its own bound on the browser's run.
func browseWithin(t *testing.T, limit time.Duration, file string, extra ...string) (dom, logged string) {
	t.Helper()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
	}, extra...)
	args = append(args, "file://"+file)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

var (
	barRE      = regexp.MustCompile(`<button[^>]*class="bar ([^"]*)"[^>]*>`)
	attrRE     = regexp.MustCompile(`data-(seq|outcome|step|answered)="([^"]*)"`)
	renderedRE = regexp.MustCompile(`<body[^>]*data-rendered="(\d+)"`)
	legendRE   = regexp.MustCompile(`<li data-outcome="([^"]*)"`)
)

// checkPage checks the DOM the timeline's script built from recs and the
// provider steps: one bar per call and per step, each call's with its
// number, each step's with its method, each with the class of its outcome,
// those never answered marked so, a legend entry per outcome, and no
// script error.
func checkPage(t *testing.T, dom, logged string, recs, steps []*record) {
	t.Helper()
	if m := regexp.MustCompile(`data-error="([^"]*)"`).FindStringSubmatch(dom); m != nil {
		t.Errorf("the page's script failed: %s", m[1])
	}
	for _, l := range strings.Split(logged, "\n") {
		if strings.Contains(l, "CONSOLE") || strings.Contains(l, "Uncaught") {
			t.Errorf("the browser's console: %s", l)
		}
	}
	m := renderedRE.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's script did not finish (no data-rendered on <body>):\n%.2000s", dom)
	}
	want := len(recs) + len(steps)
	if n, _ := strconv.Atoi(m[1]); n != want {
		t.Errorf("the script counted %d bars, want one per call and step (%d)", n, want)
	}
	bars := barRE.FindAllStringSubmatch(dom, -1)
	if len(bars) != want {
		t.Fatalf("the page has %d bars, want one per call and step (%d)", len(bars), want)
	}
	bySeq := map[int]*record{}
	outcomes := map[string]bool{}
	for _, r := range recs {
		bySeq[r.Seq] = r
		outcomes[r.Outcome] = true
	}
	stepsLeft := map[string]int{}
	for _, r := range steps {
		stepsLeft[r.Step+" "+r.Outcome]++
		outcomes[r.Outcome] = true
	}
	for _, b := range bars {
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllStringSubmatch(b[0], -1) {
			attrs[a[1]] = a[2]
		}
		classes := strings.Fields(b[1])
		if step := attrs["step"]; step != "" {
			k := step + " " + attrs["outcome"]
			if stepsLeft[k] == 0 || !slices.Contains(classes, "step") || classes[0] != "o-"+strings.ReplaceAll(attrs["outcome"], " ", "-") {
				t.Errorf("bar %s is no provider step of the log", b[0])
				continue
			}
			stepsLeft[k]--
			continue
		}
		seq, _ := strconv.Atoi(attrs["seq"])
		r := bySeq[seq]
		if r == nil {
			t.Errorf("bar %s has no call of the log", b[0])
			continue
		}
		want := "o-" + strings.ReplaceAll(r.Outcome, " ", "-")
		if classes[0] != want || attrs["outcome"] != r.Outcome {
			t.Errorf("bar #%d has class %q and outcome %q, want class %q for outcome %q", seq, b[1], attrs["outcome"], want, r.Outcome)
		}
		if marked := slices.Contains(classes, "unanswered") && attrs["answered"] == "false"; marked != r.Pending {
			t.Errorf("bar #%d is marked never answered: %v, want %v", seq, marked, r.Pending)
		}
		delete(bySeq, seq)
	}
	for seq := range bySeq {
		t.Errorf("call #%d has no bar", seq)
	}
	for k, n := range stepsLeft {
		if n > 0 {
			t.Errorf("%d provider step(s) %s have no bar", n, k)
		}
	}
	legend := map[string]bool{}
	for _, l := range legendRE.FindAllStringSubmatch(dom, -1) {
		legend[l[1]] = true
	}
	for o := range outcomes {
		if !legend[o] {
			t.Errorf("the legend has no entry for outcome %q (it has %v)", o, legend)
		}
	}
}

func TestTimelineInABrowser(t *testing.T) {
	chromium(t)
	recs := fixture()
	file := filepath.Join(t.TempDir(), "timeline.html")
	if err := writeHTMLFile(file, "demo.log", fromGRPC, recs, []problem{{Line: 12, Reason: "unexpected end of JSON input"}}, nil); err != nil {
		t.Fatal(err)
	}
	dom, logged := browse(t, file, "--dump-dom")
	checkPage(t, dom, logged, recs, nil)
	if !strings.Contains(dom, "line 12: unexpected end of JSON input") {
		t.Errorf("the page does not name the unreadable line")
	}

	// Selecting a call (as a click does; #call=N does it on load) shows
	// its details, which the script builds: a transform's changes, and a
	// user's string as text, never as markup.
	dom, _ = browse(t, file+"#call=1", "--dump-dom")
	detail := section(dom, `<div id="detail"`)
	for _, want := range []string{"#1 resource transform · stack transform #1", "changed", "properties.prefix", "(absent)", `"tx"`, "options.protect"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the details of call #1 do not show %q:\n%s", want, detail)
		}
	}
	dom, _ = browse(t, file+"#call=7", "--dump-dom")
	detail = section(dom, `<div id="detail"`)
	if !strings.Contains(detail, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(detail, "<script>alert") {
		t.Errorf("the details of call #7 do not show its error as text:\n%s", detail)
	}
	if shots := os.Getenv("CALLBACKLOG_SCREENSHOT"); shots != "" {
		browse(t, file+"#call=1", "--screenshot="+shots, "--window-size=1280,720", "--hide-scrollbars")
	}
}

// section returns dom from the element that starts with open to the end of
// the next closing tag that ends a div at the same depth (the element,
// roughly: enough to look for text in it).
func section(dom, open string) string {
	i := strings.Index(dom, open)
	if i < 0 {
		return ""
	}
	rest := dom[i:]
	depth := 0
	for j := 0; j < len(rest); j++ {
		switch {
		case strings.HasPrefix(rest[j:], "<div"):
			depth++
		case strings.HasPrefix(rest[j:], "</div>"):
			depth--
			if depth == 0 {
				return rest[:j+len("</div>")]
			}
		}
	}
	return rest
}

// TestTimelinesOfRecordedLogsInABrowser renders the timeline of each
// recorded log in testdata/logs and checks what the page's script built.
func TestTimelinesOfRecordedLogsInABrowser(t *testing.T) {
	chromium(t)
	for _, file := range logs(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			recs, problems, d := readLog(f, false, false)
			f.Close()
			page := filepath.Join(t.TempDir(), "timeline.html")
			if code, _, stderr := callbacklog("", "show", "-html", page, file); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			dom, logged := browse(t, page, "--dump-dom")
			checkPage(t, dom, logged, recs, d.Steps)
			if len(problems) != 0 {
				t.Errorf("unreadable lines in a recorded log: %v", problems)
			}
		})
	}
}

var (
	planSectionRE = regexp.MustCompile(`<section class="plan" data-run="([^"]*)">`)
	planRowRE     = regexp.MustCompile(`<tr data-urn="([^"]*)">`)
	planHookRE    = regexp.MustCompile(`<li (?:class="cond" )?data-moment="([^"]*)" data-name="([^"]*)">`)
)

// TestWhatAnUpdateWouldRunInABrowser renders the timeline of a recorded
// `pulumi up` with its preview, with -v, and checks what the page's script
// built of what the preview says an update would run: a section for the
// preview, a row per resource that binds hooks, and its hooks in order;
// then a call's details with its request and answer; then takes a
// screenshot of the page for review, and checks that it is an image of the
// window's size that shows something.
func TestWhatAnUpdateWouldRunInABrowser(t *testing.T) {
	chromium(t)
	file := filepath.Join("testdata", "logs", "planprogram-3.274.1.jsonl")
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, d := readLog(f, false, true)
	f.Close()
	if len(d.Plans) != 1 {
		t.Fatalf("the recorded log has %d plans, want its preview's", len(d.Plans))
	}
	page := filepath.Join(t.TempDir(), "timeline.html")
	if code, _, stderr := callbacklog("", "show", "-v", "-html", page, file); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	dom, logged := browse(t, page, "--dump-dom")
	checkPage(t, dom, logged, recs, d.Steps)
	sections := planSectionRE.FindAllStringSubmatch(dom, -1)
	if len(sections) != 1 || sections[0][1] != d.Plans[0].Label {
		t.Fatalf("the page's would-run sections are %v, want one for %q", sections, d.Plans[0].Label)
	}
	box := dom[strings.Index(dom, sections[0][0]):]
	box = box[:strings.Index(box, "</section>")]
	rows := planRowRE.FindAllStringSubmatchIndex(box, -1)
	if len(rows) != len(d.Plans[0].Resources) {
		t.Fatalf("the section has %d rows, want one per resource that binds hooks (%d):\n%s", len(rows), len(d.Plans[0].Resources), box)
	}
	for i, p := range d.Plans[0].Resources {
		end := len(box)
		if i+1 < len(rows) {
			end = rows[i+1][0]
		}
		row := box[rows[i][0]:end]
		if urn := box[rows[i][2]:rows[i][3]]; urn != p.URN {
			t.Errorf("row %d is of %s, want %s", i, urn, p.URN)
		}
		var got, want []string
		for _, m := range planHookRE.FindAllStringSubmatch(row, -1) {
			got = append(got, m[1]+" "+m[2])
		}
		for _, h := range p.Hooks {
			want = append(want, h.Moment+" "+h.Name)
		}
		equalLists(t, p.Name+"'s hooks on the page", got, want)
		if !strings.Contains(row, oneLine(p.Step)) {
			t.Errorf("%s's row does not say its step %q:\n%s", p.Name, p.Step, row)
		}
	}
	for _, w := range []string{"Deletes: cannot tell: ", "Registered, bound to no resource of this preview: \"orphan\""} {
		if !strings.Contains(box, w) {
			t.Errorf("the section does not say %q:\n%s", w, box)
		}
	}

	// A hook call's details, with -v: its request by property path.
	var hook *record
	for _, r := range recs {
		if r.Kind == "resource hook" && r.Run == "update" {
			hook = r
			break
		}
	}
	if hook == nil {
		t.Fatal("the recorded update called no hook")
	}
	dom, _ = browse(t, page+"#call="+strconv.Itoa(hook.Seq), "--dump-dom")
	detail := section(dom, `<div id="detail"`)
	for _, w := range []string{"#" + strconv.Itoa(hook.Seq) + " resource hook · " + hook.Registration, `data-part="request"`, "urn", hook.URN} {
		if !strings.Contains(detail, w) {
			t.Errorf("the details of hook call #%d do not show %q:\n%s", hook.Seq, w, detail)
		}
	}

	// The screenshot, for review: in the test's directory, or in
	// $CALLBACKLOG_SCREENSHOT_DIR when it is set.
	dir := os.Getenv("CALLBACKLOG_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	shot, err := filepath.Abs(filepath.Join(dir, "preview-and-update.png"))
	if err != nil {
		t.Fatal(err)
	}
	const w, h = 1280, 1600
	browse(t, page+"#call="+strconv.Itoa(hook.Seq), "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", w, h), "--hide-scrollbars")
	t.Logf("the screenshot: %s", shot)
	checkScreenshot(t, shot, w, h)
}

// checkScreenshot checks that the file is a PNG image of w by h pixels
// that is not of one colour.
func checkScreenshot(t *testing.T, file string, w, h int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("the browser wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG image: %v", err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("the screenshot is %dx%d, want the window's %dx%d", b.Dx(), b.Dy(), w, h)
	}
	colours := map[color.RGBA]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			colours[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)] = true
		}
	}
	if len(colours) < 8 {
		t.Errorf("the screenshot has %d colours: the page did not render", len(colours))
	}
}
