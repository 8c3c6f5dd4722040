// Command peers measures this module's callback server against its peers on
// the one call a resource transform costs the engine: a unary
// Callbacks.Invoke carrying a serialized TransformRequest, answered by an
// identity transform with a TransformResponse.
//
// The targets, all in this repository:
//
//   - proto: bench/peers/proto, a bare protobuf round trip (proto.Unmarshal
//     the request, proto.Marshal a response with the same properties and
//     options), the baseline of the ratios;
//   - ours: bench/ours, this module's server with the typed transforms API;
//   - gosdk: bench/peers/gosdk, the Pulumi Go SDK's server under pulumi.Run
//     and ctx.RegisterResourceTransform;
//   - nodesdk: bench/peers/nodesdk/target.js, the Node.js SDK's server
//     (the @pulumi/pulumi of testdata/nodejs) under
//     pulumi.runtime.registerResourceTransform. Left out, saying why, when
//     node or testdata/nodejs/node_modules is missing.
//
// Three more run when named in -targets: ours-unread (bench/ours -unread, whose
// transform sends the properties back without reading them), ours-traced
// (bench/ours -trace, which records a span for every call) and splice
// (bench/peers/proto -splice, which copies the request's serialized
// properties and options into the response: the transport alone). -program
// adds any other program that follows the same contract.
//
// The driver builds the Go targets with go build into a temporary folder,
// and plays the engine to each target: a ResourceMonitor and Engine of its
// own on 127.0.0.1, named to the program by the variables pulumi.Run reads
// (PULUMI_MONITOR, PULUMI_ENGINE, PULUMI_PROJECT, ...). It takes the callback
// the program registers with RegisterStackTransform, calls it over one
// gRPC connection, as the engine does, and holds the program's
// SignalAndWaitForShutdown open until the run is over.
//
// The requests are the small (349 B), medium (3.5 KB) and large (1 MiB)
// TransformRequests of internal/testkit/benchdata. For each size every
// target first gets an unreported warm-up at concurrency 4; then, for each
// concurrency, each target gets a window of closed-loop calls, and the
// windows repeat for a number of rounds, the targets' order rotating each
// round, so that the machine's noise falls on all of them alike. p50 and
// p99 are taken over the calls of all rounds; calls/s is the calls answered
// over the windows' summed wall time; CPU is the target process's CPU time
// in the windows per call answered (Linux only), which moves far less than
// latency on a busy machine. Every response is checked after its window: it
// must decode as a TransformResponse holding the request's properties and
// options.
//
// The output is one Markdown table with ratios taken within the run: each
// target's p50 and CPU time against the baseline's (-baseline, proto unless
// told), and ours' calls/s against each target's. Progress goes to stderr.
// The exit status is 1 if any call failed, any response failed its check or
// any target did not exit cleanly when released, and 2 if the run could not
// be made.
//
//	go run ./bench/peers        # the default run: about 4 minutes on 2 cores
//	go run ./bench/peers -targets proto,ours -sizes medium -conc 16 -window 300ms -rounds 1
//	go run ./bench/peers -targets splice,ours-unread,ours -baseline splice -conc 1 -rounds 5
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
)

// config is what a run measures, and how.
type config struct {
	targets      []string  // of peers
	programs     []command // more targets: other programs that follow the contract
	baseline     string    // the target the p50 and CPU ratios are taken against
	sizes        []string
	concs        []int
	window       time.Duration // of one target at one size and concurrency, per round
	rounds       int
	warmup       time.Duration // per target and size, at concurrency warmupConc
	callTimeout  time.Duration
	startTimeout time.Duration // for a target to register its transform
}

// warmupConc is the concurrency of the warm-up.
const warmupConc = 4

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	r, err := run(ctx, cfg, os.Stderr)
	if r != nil {
		r.write(os.Stdout)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	case r.failed() > 0 || len(r.problems) > 0:
		os.Exit(1)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	cfg := config{}
	targets := fs.String("targets", "proto,ours,gosdk,nodesdk", "comma-separated targets: "+names())
	sizes := fs.String("sizes", strings.Join(benchdata.Sizes, ","), "comma-separated request sizes: "+strings.Join(benchdata.Sizes, ", "))
	concs := fs.String("conc", "1,4,16", "comma-separated numbers of calls in flight")
	fs.StringVar(&cfg.baseline, "baseline", "proto", "the target whose p50 and CPU time the others' are divided by")
	fs.Func("program", "`NAME=COMMAND`: one more target, a program that follows the contract (an older build of bench/ours, say); repeatable", func(v string) error {
		name, line, _ := strings.Cut(v, "=")
		argv := strings.Fields(line)
		if name == "" || len(argv) == 0 || slices.Contains(strings.Split(names(), ", "), name) {
			return fmt.Errorf("want NAME=COMMAND, NAME not one of %s", names())
		}
		if strings.ContainsRune(argv[0], filepath.Separator) {
			abs, err := filepath.Abs(argv[0])
			if err != nil {
				return err
			}
			argv[0] = abs
		}
		cfg.programs = append(cfg.programs, command{name: name, argv: argv})
		return nil
	})
	fs.DurationVar(&cfg.window, "window", time.Second, "how long each target is called at one size and concurrency, per round")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds of windows, the targets' order rotating each round")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unreported calls per target and size before measuring, at concurrency 4")
	fs.DurationVar(&cfg.callTimeout, "call-timeout", time.Minute, "deadline of one call")
	fs.DurationVar(&cfg.startTimeout, "start-timeout", 2*time.Minute, "how long a target may take to register its transform")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.targets = split(*targets)
	for _, t := range cfg.targets {
		if !slices.Contains(strings.Split(names(), ", "), t) {
			return cfg, fmt.Errorf("no target %q (want some of %s)", t, names())
		}
	}
	cfg.sizes = split(*sizes)
	for _, s := range cfg.sizes {
		if !slices.Contains(benchdata.Sizes, s) {
			return cfg, fmt.Errorf("no size %q (want some of %s)", s, strings.Join(benchdata.Sizes, ", "))
		}
	}
	for _, c := range split(*concs) {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("-conc: %q is not a positive number", c)
		}
		cfg.concs = append(cfg.concs, n)
	}
	switch {
	case len(cfg.targets)+len(cfg.programs) == 0 || len(cfg.sizes) == 0 || len(cfg.concs) == 0:
		return cfg, fmt.Errorf("-targets or -program, -sizes and -conc need one value at least")
	case cfg.window <= 0 || cfg.rounds < 1 || cfg.warmup < 0:
		return cfg, fmt.Errorf("-window and -rounds must be positive, -warmup not negative")
	}
	return cfg, nil
}

func names() string {
	var ns []string
	for _, p := range peers {
		ns = append(ns, p.name)
	}
	return strings.Join(ns, ", ")
}

func split(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// run builds and starts the targets, measures them as cfg says, stops them
// and returns what it measured, writing progress and notes to progress.
func run(ctx context.Context, cfg config, progress io.Writer) (*report, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	bin, err := os.MkdirTemp("", "peers-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bin)

	fmt.Fprintf(progress, "building the targets in %s\n", bin)
	cmds, notes, err := commands(ctx, root, bin, cfg.targets)
	if err != nil {
		return nil, err
	}
	cmds = append(cmds, cfg.programs...)
	for _, n := range notes {
		fmt.Fprintln(progress, n)
	}
	if len(cmds) == 0 {
		return nil, fmt.Errorf("no target to measure")
	}
	r := newReport(cfg, cmds, notes)
	var targets []*target
	defer func() {
		for _, t := range targets {
			if err := t.stop(); err != nil {
				r.problems = append(r.problems, err.Error())
			}
		}
	}()
	for _, c := range cmds {
		t, err := start(c, root, cfg.startTimeout)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "started %s\n", c.name)
		targets = append(targets, t)
	}

	began := time.Now()
	for _, size := range cfg.sizes {
		p := newPayload(size)
		for _, t := range targets {
			t.window(ctx, p, warmupConc, cfg.warmup, cfg.callTimeout, r.cell(r.warmups, t.name, size, warmupConc))
		}
		for _, conc := range cfg.concs {
			for round := range cfg.rounds {
				for i := range targets {
					t := targets[(i+round)%len(targets)]
					t.window(ctx, p, conc, cfg.window, cfg.callTimeout, r.cell(r.cells, t.name, size, conc))
				}
			}
			fmt.Fprintf(progress, "%-6s c=%-2d %s\n", size, conc, r.progress(size, conc))
		}
		if ctx.Err() != nil {
			break
		}
	}
	r.elapsed = time.Since(began)
	return r, ctx.Err()
}

// errNoModule is the error of a driver run outside the module.
var errNoModule = errors.New("run it inside the module github.com/langhost/callbacks")

// moduleRoot returns the folder of this module, which the go command finds
// from the working directory.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Path}} {{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("%w: go list -m: %w", errNoModule, err)
	}
	path, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if path != "github.com/langhost/callbacks" || dir == "" {
		return "", fmt.Errorf("%w (the go command is in %q)", errNoModule, path)
	}
	return dir, nil
}
