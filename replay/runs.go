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
	info     runInfo
	line     int // the line that completed LanguageRuntime/Run, 0 if none
	from, to int
}

// holds reports whether a call completed on line belongs to the run.
func (r *logRun) holds(line int) bool {
	return line > r.from && (r.to == 0 || line <= r.to)
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
// run. A run's calls are those completed after the previous run completed
// and before it does; calls after the last run belong to it. A log with no
// run (one written by a test engine, or cut short) is one run whose
// project and stack come from the first call's URN.
func scanRuns(file string) ([]logRun, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	lines := newLineReader(f)
	var runs []logRun
	var features []pulumirpc.ResourceMonitorFeature
	haveFeatures := false
	for {
		line, _, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		// Members may come in any order (a scrubbed log sorts them), so
		// the whole line is searched, which costs little next to decoding
		// it.
		isRun := bytes.Contains(line, []byte(`"method":"/pulumirpc.LanguageRuntime/Run"`))
		isInfo := !isRun && bytes.Contains(line, []byte(`"method":"/pulumirpc.ResourceMonitor/GetDeploymentInfo"`))
		if !isRun && !isInfo {
			continue
		}
		var e logEntry
		if json.Unmarshal(line, &e) != nil || (e.Progress != "" && e.Progress != "response_completed") {
			continue // Read reports the line
		}
		opts := protojson.UnmarshalOptions{DiscardUnknown: true}
		if isInfo {
			var di pulumirpc.DeploymentInfo
			// A monitor that lists no feature (a hand-written log) is
			// taken to have them all.
			if len(e.Response) > 0 && opts.Unmarshal(e.Response, &di) == nil && !haveFeatures && len(di.GetSupportedFeatures()) > 0 {
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
		if haveFeatures {
			run.info.Features = features
		}
		if n := len(runs); n > 0 {
			run.from = runs[n-1].to
		}
		runs = append(runs, run)
		features, haveFeatures = nil, false
	}
	if len(runs) > 0 {
		runs[len(runs)-1].to = 0
		return runs, nil
	}
	// No run: the project and stack of the first call's resource.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	run := logRun{}
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
	return []logRun{run}, nil
}
