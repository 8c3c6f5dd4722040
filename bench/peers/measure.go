package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/internal/testkit/benchdata"
)

// payload is one size's TransformRequest: the bytes sent, and the request
// every response must give back the properties and options of.
type payload struct {
	size string
	req  *pulumirpc.TransformRequest
	wire []byte
}

func newPayload(size string) payload {
	req := benchdata.TransformRequest(size)
	return payload{size: size, req: req, wire: benchdata.Marshal(req)}
}

// cell is what the windows of one target, size and concurrency measured.
type cell struct {
	latencies []time.Duration // of the calls that were answered
	wall      time.Duration   // the windows', each until its last call returned
	calls     int             // made
	verified  int             // answered with the request's properties and options
	cpu       time.Duration   // the target process's CPU time in the windows
	cpuKnown  bool            // whether cpu was read
	failed    int             // failed, or answered otherwise
	failures  map[string]int  // the first kinds of failure, by message
}

// maxFailureKinds bounds the failure messages a cell keeps.
const maxFailureKinds = 5

func (c *cell) fail(msg string) {
	c.failed++
	if c.failures == nil {
		c.failures = map[string]int{}
	}
	if _, ok := c.failures[msg]; ok || len(c.failures) < maxFailureKinds {
		c.failures[msg]++
	}
}

// p returns the q-quantile of the latencies, nearest rank.
func (c *cell) p(q float64) time.Duration {
	if len(c.latencies) == 0 {
		return 0
	}
	s := slices.Clone(c.latencies)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*q)) - 1
	return s[max(0, min(i, len(s)-1))]
}

// cpuPerCall is the target's CPU time per call answered, if known.
func (c *cell) cpuPerCall() (time.Duration, bool) {
	if !c.cpuKnown || len(c.latencies) == 0 {
		return 0, false
	}
	return c.cpu / time.Duration(len(c.latencies)), true
}

// perSecond is the calls answered per second of the windows.
func (c *cell) perSecond() float64 {
	if c.wall <= 0 {
		return 0
	}
	return float64(len(c.latencies)) / c.wall.Seconds()
}

// answer is one call's outcome.
type answer struct {
	latency time.Duration
	resp    []byte
	err     error // the call's
}

// window sends p to t from conc closed loops, each making its next call
// when the last returns, until d has passed, and adds what it measured to
// c. The latency is that of the Invoke call alone; the CPU time is the
// target process's over the window, which on a busy machine moves far less
// than the latency, which includes waiting for a core. The responses are
// checked after the window, so that checking does not compete with the
// server for the CPU while it is timed; until then they are held in memory
// (1 MiB a call for large requests).
func (t *target) window(ctx context.Context, p payload, conc int, d, callTimeout time.Duration, c *cell) {
	answers := make([][]answer, conc)
	req := &pulumirpc.CallbackInvokeRequest{Token: t.token, Request: p.wire}
	cpuBefore, cpuKnown := t.cpuTime()
	began := time.Now()
	deadline := began.Add(d)
	var loops sync.WaitGroup
	for w := range conc {
		loops.Go(func() {
			// Every loop makes at least one call, however late a busy
			// machine starts it, so a window is never empty.
			for first := true; (first || time.Now().Before(deadline)) && ctx.Err() == nil; first = false {
				callCtx, cancel := context.WithTimeout(ctx, callTimeout)
				start := time.Now()
				resp, err := t.client.Invoke(callCtx, req)
				latency := time.Since(start)
				cancel()
				answers[w] = append(answers[w], answer{latency: latency, resp: resp.GetResponse(), err: err})
			}
		})
	}
	loops.Wait()
	c.wall += time.Since(began)
	if cpuAfter, ok := t.cpuTime(); ok && cpuKnown {
		c.cpu += cpuAfter - cpuBefore
		c.cpuKnown = true
	}

	verdicts := verifyAll(answers, p.req)
	for _, as := range answers {
		for _, a := range as {
			c.calls++
			if a.err != nil {
				c.fail(a.err.Error())
				continue
			}
			c.latencies = append(c.latencies, a.latency)
			if err := verdicts[string(a.resp)]; err != nil {
				c.fail(err.Error())
				continue
			}
			c.verified++
		}
	}
}

// verifyAll returns verify's verdict on each distinct response among the
// answers. It checks each once, on every CPU: a server that encodes
// deterministically answers the same request with the same bytes.
func verifyAll(answers [][]answer, req *pulumirpc.TransformRequest) map[string]error {
	verdicts := map[string]error{}
	var distinct [][]byte
	for _, as := range answers {
		for _, a := range as {
			if _, seen := verdicts[string(a.resp)]; a.err == nil && !seen {
				verdicts[string(a.resp)] = nil
				distinct = append(distinct, a.resp)
			}
		}
	}
	errs := make([]error, len(distinct))
	cpus := runtime.GOMAXPROCS(0)
	var checks sync.WaitGroup
	for first := range cpus {
		checks.Go(func() {
			for i := first; i < len(distinct); i += cpus {
				errs[i] = verify(distinct[i], req)
			}
		})
	}
	checks.Wait()
	for i, resp := range distinct {
		verdicts[string(resp)] = errs[i]
	}
	return verdicts
}

// cpuTime returns the CPU time the target's threads have spent so far, from
// /proc/PID/task/*/schedstat, where the Linux kernel accounts it per thread
// in nanoseconds. It returns false where that is not available.
func (t *target) cpuTime() (time.Duration, bool) {
	if t.cmd == nil || t.cmd.Process == nil {
		return 0, false
	}
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", t.cmd.Process.Pid))
	if len(files) == 0 {
		return 0, false
	}
	var total time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that has exited
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}

// verify returns nil if resp is a TransformResponse whose properties and
// options equal req's, and otherwise says how it is not. An option set to
// its default counts as one left unset: both SDKs answer protect,
// retainOnDelete and, in Node.js, deleteBeforeReplace set to false where
// the request left them unset.
func verify(resp []byte, req *pulumirpc.TransformRequest) error {
	var got pulumirpc.TransformResponse
	if err := proto.Unmarshal(resp, &got); err != nil {
		return fmt.Errorf("the response is no TransformResponse: %w", err)
	}
	if got.GetProperties() == nil {
		return errors.New("the response has no properties")
	}
	if !proto.Equal(got.GetProperties(), req.GetProperties()) {
		return fmt.Errorf("the response's properties differ: %s", diff(got.GetProperties(), req.GetProperties()))
	}
	if !proto.Equal(withoutDefaults(got.GetOptions()), withoutDefaults(req.GetOptions())) {
		return fmt.Errorf("the response's options differ: got {%v}, want {%v}", got.GetOptions(), req.GetOptions())
	}
	return nil
}

// diff names the first top-level property, in key order, in which got and
// want differ.
func diff(got, want *structpb.Struct) string {
	keys := slices.Sorted(maps.Keys(want.GetFields()))
	for k := range got.GetFields() {
		if _, ok := want.GetFields()[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		g, inGot := got.GetFields()[k]
		w, inWant := want.GetFields()[k]
		switch {
		case !inGot:
			return fmt.Sprintf("%q is missing", k)
		case !inWant:
			return fmt.Sprintf("%q was added", k)
		case !proto.Equal(g, w):
			return fmt.Sprintf("%q is %v, want %v", k, g, w)
		}
	}
	return "they are equal key by key"
}

// withoutDefaults returns a copy of opts without the options that are set
// to their default value.
func withoutDefaults(opts *pulumirpc.TransformResourceOptions) *pulumirpc.TransformResourceOptions {
	if opts == nil {
		return nil
	}
	opts = proto.Clone(opts).(*pulumirpc.TransformResourceOptions)
	m := opts.ProtoReflect()
	var defaults []protoreflect.FieldDescriptor
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if f.HasPresence() && f.Kind() != protoreflect.MessageKind && v.Equal(f.Default()) {
			defaults = append(defaults, f)
		}
		return true
	})
	for _, f := range defaults {
		m.Clear(f)
	}
	return opts
}
