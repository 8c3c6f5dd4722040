package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
)

// logRun is one run of the program in a log: what the engine told it, and
// the log lines of its callback calls, (from, to], to 0 for the rest of
// the log.
type logRun struct {
	info      runInfo
	line      int // the line that completed LanguageRuntime/Run, 0 if none
	from, to  int
	resources []resEntry // the resources the run registered or read
}

// holds reports whether a call completed on line belongs to the run.
func (r *logRun) holds(line int) bool {
	return line > r.from && (r.to == 0 || line <= r.to)
}

// name names the run in messages: the preview or the update, and the log
// line of its LanguageRuntime/Run.
func (r *logRun) name() string {
	if r.line == 0 {
		return "the run"
	}
	what := "update"
	if r.info.DryRun {
		what = "preview"
	}
	return fmt.Sprintf("the %s (LanguageRuntime/Run, log line %d)", what, r.line)
}

// logFacts is what scanRuns learns of the log as a whole, so that Run can
// refuse a file it cannot replay before the program runs.
type logFacts struct {
	lines     int  // lines that are not blank
	entries   bool // a line is a JSON object with a method, as the engine writes them
	invokes   bool // a line names /pulumirpc.Callbacks/Invoke
	truncated int  // the last line, cut short inside its entry; 0 if none
}

// logEntry is the part of a log entry scanRuns reads.
type logEntry struct {
	Method   string          `json:"method"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
	Progress string          `json:"progress"`
}

// scanRuns reads the runs of the program from a log: each
// LanguageRuntime/Run the engine made, with the monitor's features of that
// run and the resources it registered. A run's calls and resources are
// those of the entries after the previous run completed and before it
// does; those after the last run belong to it. A run is
// taken from the entry that completes it, or, when the log ends before
// that entry (cut short), from the entry that started it, which carries
// the same request. A log with no run (one written by a test engine) is
// one run whose project and stack come from the first call's URN.
func scanRuns(file string) ([]logRun, logFacts, error) {
	var facts logFacts
	f, err := os.Open(file)
	if err != nil {
		return nil, facts, err
	}
	defer func() { _ = f.Close() }()
	lines := newLineReader(f)
	var runs []logRun
	var features []pulumirpc.ResourceMonitorFeature
	haveFeatures := false
	var started *logRun // a run whose completing entry has not come yet
	add := func(run logRun) {
		if haveFeatures {
			run.info.Features = features
		}
		if n := len(runs); n > 0 {
			run.from = runs[n-1].to
		}
		runs = append(runs, run)
		features, haveFeatures = nil, false
	}
	opts := protojson.UnmarshalOptions{DiscardUnknown: true}
	var resources []resEntry
	for {
		line, ended, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, facts, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		facts.lines++
		if !ended && !json.Valid(line) {
			facts.truncated = lines.line
		}
		if !facts.entries && bytes.Contains(line, []byte(`"method"`)) {
			var h header
			facts.entries = json.Unmarshal(line, &h) == nil && h.Method != ""
		}
		// Members may come in any order (a scrubbed log sorts them), so
		// the whole line is searched, which costs little next to decoding
		// it.
		isRun := bytes.Contains(line, []byte(`"method":"/pulumirpc.LanguageRuntime/Run"`))
		isInfo := !isRun && bytes.Contains(line, []byte(`"method":"/pulumirpc.ResourceMonitor/GetDeploymentInfo"`))
		facts.invokes = facts.invokes || !isRun && !isInfo && bytes.Contains(line, []byte(invokeMethod))
		if !isRun && !isInfo {
			if e, ok := resourceEntry(lines.line, line); ok {
				resources = append(resources, e)
			}
			continue
		}
		var e logEntry
		if json.Unmarshal(line, &e) != nil {
			continue // Read reports the line
		}
		if isInfo {
			var di pulumirpc.DeploymentInfo
			// A monitor that lists no feature (a hand-written log) is
			// taken to have them all.
			if e.Progress != requestStarted && len(e.Response) > 0 && opts.Unmarshal(e.Response, &di) == nil && !haveFeatures && len(di.GetSupportedFeatures()) > 0 {
				features, haveFeatures = di.GetSupportedFeatures(), true
			}
			continue
		}
		var req pulumirpc.RunRequest
		if opts.Unmarshal(e.Request, &req) != nil {
			continue
		}
		run := logRun{line: lines.line, to: lines.line, info: runInfo{
			Project: req.GetProject(), Stack: req.GetStack(), Organization: req.GetOrganization(),
			Config: req.GetConfig(), ConfigSecretKeys: req.GetConfigSecretKeys(),
			DryRun: req.GetDryRun(), Parallel: req.GetParallel(),
			RootDirectory: req.GetInfo().GetRootDirectory(),
		}}
		switch e.Progress {
		case requestStarted:
			if started != nil {
				// Another run starts before the last one completed (two
				// logs written into one file): the last one ends here.
				started.to = lines.line - 1
				add(*started)
			}
			started = &run
		case "", "response_completed":
			started = nil
			add(run)
		}
	}
	if started != nil {
		// The log ends before the run does: its calls are the rest.
		add(*started)
	}
	if len(runs) > 0 {
		runs[len(runs)-1].to = 0
		for _, e := range resources {
			for i := range runs {
				if runs[i].holds(e.line) {
					runs[i].resources = append(runs[i].resources, e)
					break
				}
			}
		}
		return runs, facts, nil
	}
	// No run: the project and stack of the first call's resource.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, facts, err
	}
	run := logRun{resources: resources}
	for c, err := range Read(f) {
		if err == nil && c.URN != "" && resource.URN(c.URN).IsValid() {
			run.info.Project, run.info.Stack = string(c.URN.Project()), string(c.URN.Stack())
			break
		}
	}
	if haveFeatures {
		run.info.Features = features
	}
	if run.info.Project == "" {
		run.info.Project, run.info.Stack = "project", "stack"
	}
	return []logRun{run}, facts, nil
}
