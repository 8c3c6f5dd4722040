package integration_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/integration/clitest"
)

// The simulator plays the release of the CLI on PATH (newTwin), so these
// tests hold it to each engine the suite runs under.

// TestSimulatorMatchesTheEngine runs programs/trace, whose every callback
// reports under its resource, through the same commands on the real CLI and
// on the simulator of package enginetest: a preview and an update that
// create a pet and a string (each create throttled once and retried by the
// error hook), a preview and an update that change the pet and drop the
// string, a destroy without the program (refused: delete hooks) and one
// with it. After each command it compares what the user sees: whether the
// command failed, the lines under each resource in the Diagnostics (so
// which callbacks ran for which resource, in order, and what they were
// given, and the engine's own warnings and errors), and the state (URNs,
// types and inputs).
func TestSimulatorMatchesTheEngine(t *testing.T) {
	t.Parallel()
	tw := newTwin(t, "trace", "github.com/langhost/callbacks/integration/programs/trace", "a", "b")

	tw.preview(t, "preview of the creates")
	tw.up(t, "the creates")

	tw.setConfig(t, "length", "3")
	tw.setConfig(t, "drop", "true")
	tw.preview(t, "preview of the update and the delete")
	tw.up(t, "the update and the delete")

	tw.destroy(t, "destroy without the program", false)
	tw.destroy(t, "destroy --run-program", true)
}

// TestSimulatorMatchesTheEngineOnPanics compares the engines as
// TestSimulatorMatchesTheEngine does, on programs/panics.
func TestSimulatorMatchesTheEngineOnPanics(t *testing.T) {
	t.Parallel()
	const pkg = "github.com/langhost/callbacks/integration/programs/panics"

	t.Run("transform", func(t *testing.T) {
		t.Parallel()
		tw := newTwin(t, "panics", pkg, "pet")
		tw.setConfig(t, "panic", "transform")
		// The program fails (its RegisterResource fails, it reports the
		// error and exits): the engine's deploymentExecutor.Execute
		// returns as soon as the source iterator reports that, before
		// reportExecResult("failed"), so neither shows "update failed".
		tw.up(t, "a panicking transform")
	})

	t.Run("hook", func(t *testing.T) {
		t.Parallel()
		tw := newTwin(t, "panics", pkg, "pet")
		tw.setConfig(t, "panic", "hook")
		tw.up(t, "a panicking hook")
	})
}

// twin is one program on both engines: a stack under the real CLI (with the
// stand-in provider throttling each first create), and the simulator,
// started afresh for each command with the stack's configuration and the
// state its last update left.
type twin struct {
	project string
	engine  string   // the release of the CLI, which the simulator plays
	names   []string // the resources whose diagnostics are compared, besides the stack
	cli     *clitest.Stack
	bin     string
	config  map[string]string
	state   *enginetest.State
}

func newTwin(t *testing.T, project, pkg string, names ...string) *twin {
	t.Helper()
	return &twin{
		project: project,
		engine:  clitest.EngineVersion(t),
		names:   append(names, project+"-dev"),
		cli:     newStack(t, project, pkg, throttle),
		bin:     builds.Program(t, pkg),
		config:  map[string]string{},
	}
}

func (tw *twin) setConfig(t *testing.T, key, value string) {
	t.Helper()
	tw.cli.SetConfig(key, value)
	tw.config[tw.project+":"+key] = value
}

func (tw *twin) preview(t *testing.T, what string) {
	t.Helper()
	tw.compare(t, what, tw.cli.Preview(), []*enginetest.Result{tw.simulate(t, true, enginetest.DryRun(true))})
}

func (tw *twin) up(t *testing.T, what string) {
	t.Helper()
	cli := tw.cli.Up()
	res := tw.simulate(t, true)
	tw.compare(t, what, cli, []*enginetest.Result{res})
	tw.compareStates(t, what, res.State)
}

// destroy compares `pulumi destroy`. With the program, the CLI runs it
// twice, a preview pass and then the destroy, and so does the simulator.
func (tw *twin) destroy(t *testing.T, what string, runProgram bool) {
	t.Helper()
	var cli *clitest.Result
	var sims []*enginetest.Result
	if runProgram {
		cli = tw.cli.Destroy("--run-program")
		sims = append(sims, tw.simulate(t, true, enginetest.Destroy(true), enginetest.DryRun(true)))
	} else {
		cli = tw.cli.Destroy()
	}
	res := tw.simulate(t, runProgram, enginetest.Destroy(runProgram))
	tw.compare(t, what, cli, append(sims, res))
	tw.compareStates(t, what, res.State)
}

// simulate runs a deployment on the simulator, with the program or without
// (a destroy), and returns its result. One that is not a preview becomes
// the state of the next.
func (tw *twin) simulate(t *testing.T, runProgram bool, opts ...enginetest.Option) *enginetest.Result {
	t.Helper()
	opts = append([]enginetest.Option{
		enginetest.WithProject(tw.project), enginetest.WithStack("dev"),
		enginetest.WithConfig(tw.config), enginetest.WithProvider(simulatedRandom()),
		enginetest.EngineVersion(tw.engine),
	}, opts...)
	if tw.state != nil {
		opts = append(opts, enginetest.WithState(tw.state))
	}
	eng := enginetest.New(t, opts...)
	var res *enginetest.Result
	var err error
	if runProgram {
		res, err = eng.RunCommand(context.Background(), exec.Command(tw.bin))
	} else {
		res, err = eng.Wait(context.Background())
	}
	require.NoError(t, err)
	if !eng.DryRun() {
		tw.state = res.State
	}
	return res
}

// simulatedRandom plays the stand-in random provider with its
// RANDOM_THROTTLE_FIRST_CREATE setting: the first attempt of each create
// fails with the same error, and a RandomString has one more output than
// inputs. The IDs differ; nothing compared shows them.
func simulatedRandom() *enginetest.FakeProvider {
	return &enginetest.FakeProvider{
		OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
			if !req.Preview && req.Attempt == 1 {
				return nil, fmt.Errorf("throttled: too many requests for %s, try again", req.Name)
			}
			outputs := proto.CloneOf(req.Inputs)
			if req.Type == stringType {
				outputs.Fields["result"] = structpb.NewStringValue("0123456789ab")
			}
			return &enginetest.CreateResponse{ID: req.Name + "-id", Outputs: outputs}, nil
		},
	}
}

// compare compares one CLI command with the simulator's runs of it.
func (tw *twin) compare(t *testing.T, what string, cli *clitest.Result, sims []*enginetest.Result) {
	t.Helper()
	failed := false
	lines, early := map[string][]string{}, map[string][]string{}
	for _, res := range sims {
		failed = failed || res.Failed
		for name, l := range tw.diagnostics(res, false) {
			lines[name] = append(lines[name], l...)
		}
		for name, l := range tw.diagnostics(res, true) {
			early[name] = append(early[name], l...)
		}
	}
	require.NoError(t, cli.Err, "%s", cli)
	same := assert.Equal(t, cli.ExitCode != 0, failed, "%s: failed (CLI, then simulator)", what)
	for _, name := range tw.names {
		// What the program logs once the deployment has failed races the
		// CLI's end: the simulator waits for it, the CLI shows it only if
		// it comes first (on a busy machine it may not).
		if got := cli.Diagnostics(name); !slices.Equal(got, lines[name]) && slices.Equal(got, early[name]) {
			t.Logf("%s: the CLI ended before it showed what the program logged after the deployment failed", what)
			continue
		}
		same = assert.Equal(t, cli.Diagnostics(name), lines[name], "%s: the diagnostics under %s (CLI, then simulator)", what, name) && same
	}
	if !same {
		t.Logf("%s on the CLI:\n%s", what, cli)
	}
}

// diagnostics shows the simulator's diagnostics as the CLI prints them: by
// resource name (the stack's for those of no resource), one line per line
// of the message, "warning: " or "error: " before the first, debug
// messages left out. With early, it leaves out too what the program logged
// after the deployment failed ("update failed" or "preview failed").
func (tw *twin) diagnostics(res *enginetest.Result, early bool) map[string][]string {
	lines := map[string][]string{}
	over := false
	for _, d := range res.Diagnostics {
		if d.URN == "" && d.Severity == "error" && !d.FromProgram && (d.Message == "update failed" || d.Message == "preview failed") {
			over = true
		}
		if d.Severity == "debug" || early && over && d.FromProgram {
			continue
		}
		name := tw.project + "-dev"
		if d.URN != "" {
			name = enginetest.URNName(d.URN)
		}
		msg := d.Message
		if d.Severity != "info" {
			msg = d.Severity + ": " + msg
		}
		for _, line := range strings.Split(msg, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				lines[name] = append(lines[name], line)
			}
		}
	}
	return lines
}

// compareStates compares the CLI's state with the simulator's: URNs, types
// and inputs. Both engines list resources in the order their steps
// complete, and the Go SDK registers resources concurrently, so the order
// of independent resources changes from run to run: they are compared
// sorted by URN.
func (tw *twin) compareStates(t *testing.T, what string, sim *enginetest.State) {
	t.Helper()
	type resource struct {
		URN, Type string
		Inputs    map[string]any
	}
	var want, got []resource
	for _, r := range tw.cli.Export().Resources {
		want = append(want, resource{r.URN, r.Type, nilIfEmpty(r.Inputs)})
	}
	for _, r := range sim.Resources {
		got = append(got, resource{r.URN, r.Type, nilIfEmpty(r.Inputs.AsMap())})
	}
	byURN := func(a, b resource) int { return strings.Compare(a.URN, b.URN) }
	slices.SortFunc(want, byURN)
	slices.SortFunc(got, byURN)
	assert.Equal(t, want, got, "%s: the state afterwards (CLI, then simulator)", what)
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}
