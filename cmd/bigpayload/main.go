// Command bigpayload measures what one very large resource transform costs a
// callback server running as a process of its own: the wall time of the
// call and the server's peak resident memory (VmHWM in /proc/PID/status),
// which an in-process figure would hide (the gRPC receive and send buffers
// count).
//
// It plays the engine the way bench/peers does: for every measurement it
// starts the target program afresh with PULUMI_MONITOR pointing at a
// minimal ResourceMonitor and Engine on 127.0.0.1, waits for the program's
// RegisterStackTransform, sends one TransformRequest whose properties hold
// one string of the given size over a real socket, checks that the
// properties come back unchanged, reads the server's VmHWM and stops the
// program. Targets run interleaved, the order rotating each round.
//
// The targets are programs that follow the contract of bench/peers' targets;
// the repository has this module's (bench/ours) and the Go SDK's
// (bench/peers/gosdk):
//
//	go build -o /tmp/ours ./bench/ours
//	go build -o /tmp/gosdk ./bench/peers/gosdk
//	go run ./cmd/bigpayload -target 'ours=/tmp/ours' -target 'ours-unread=/tmp/ours -unread' \
//	    -target 'gosdk=/tmp/gosdk' -sizes 64,300 -rounds 3
//
// Linux only (it reads /proc). The exit status is 1 if any call failed or
// any response differed from its request.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	project = "bench"
	stack   = "dev"
	mib     = 1 << 20
	maxMsg  = 1 << 30
)

type target struct{ name, cmd string }

type targets []target

func (t *targets) String() string { return fmt.Sprint(*t) }
func (t *targets) Set(s string) error {
	name, cmd, ok := strings.Cut(s, "=")
	if !ok || name == "" || cmd == "" {
		return errors.New("want NAME=COMMAND")
	}
	*t = append(*t, target{name, cmd})
	return nil
}

type result struct {
	target     string
	size       int
	wall       time.Duration
	hwm, start int64 // bytes: peak resident, and resident before the call
	err        error
}

func main() {
	var ts targets
	flag.Var(&ts, "target", "NAME=COMMAND, a program that follows the target contract of bench/peers (repeatable)")
	sizes := flag.String("sizes", "64,300", "property sizes in MiB, comma-separated")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	flag.Parse()
	if len(ts) == 0 {
		fmt.Fprintln(os.Stderr, "bigpayload: at least one -target is needed")
		os.Exit(2)
	}
	var mibs []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bigpayload: bad size %q\n", s)
			os.Exit(2)
		}
		mibs = append(mibs, n)
	}
	failed := false
	var all []result
	for _, m := range mibs {
		req, props := request(m * mib)
		for r := range *rounds {
			for i := range ts {
				t := ts[(i+r)%len(ts)]
				res := measure(t, req, props)
				res.size = m * mib
				all = append(all, res)
				if res.err != nil {
					failed = true
					fmt.Printf("%-12s %4d MiB  round %d  FAILED: %v\n", t.name, m, r+1, res.err)
					continue
				}
				fmt.Printf("%-12s %4d MiB  round %d  %8.3f s  peak RSS %6.0f MiB (%.2fx the payload; %.0f MiB before the call)\n",
					t.name, m, r+1, res.wall.Seconds(), float64(res.hwm)/mib, float64(res.hwm)/float64(res.size), float64(res.start)/mib)
			}
		}
	}
	summary(all, ts, mibs)
	if failed {
		os.Exit(1)
	}
}

// summary prints, per size and target, the median wall time and peak RSS
// over the rounds, and each target's ratios to the first target's.
func summary(all []result, ts targets, mibs []int) {
	fmt.Println()
	fmt.Println("| payload | target | wall (median) | peak RSS (median) | RSS / payload | wall vs " + ts[0].name + " | RSS vs " + ts[0].name + " |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|")
	for _, m := range mibs {
		var baseWall, baseHWM float64
		for i, t := range ts {
			var walls, hwms []float64
			for _, r := range all {
				if r.target == t.name && r.size == m*mib && r.err == nil {
					walls = append(walls, r.wall.Seconds())
					hwms = append(hwms, float64(r.hwm))
				}
			}
			if len(walls) == 0 {
				fmt.Printf("| %d MiB | %s | failed | | | | |\n", m, t.name)
				continue
			}
			w, h := median(walls), median(hwms)
			if i == 0 {
				baseWall, baseHWM = w, h
			}
			fmt.Printf("| %d MiB | %s | %.3f s | %.0f MiB | %.2fx | %.2fx | %.2fx |\n",
				m, t.name, w, h/mib, h/float64(m*mib), w/baseWall, h/baseHWM)
		}
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// request returns a serialized TransformRequest for a custom resource
// whose properties hold one string of n bytes, and its serialized
// properties.
func request(n int) (req, props []byte) {
	s := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz012345"), n/32+1)[:n]
	// Struct{fields: {"data": Value{string_value: s}}}, written directly so
	// that the payload is built once.
	val := protowire.AppendTag(nil, 3, protowire.BytesType)
	val = protowire.AppendVarint(val, uint64(n))
	entryLen := protowire.SizeTag(1) + protowire.SizeBytes(len("data")) + protowire.SizeTag(2) + protowire.SizeBytes(len(val)+n)
	props = make([]byte, 0, protowire.SizeTag(1)+protowire.SizeBytes(entryLen))
	props = protowire.AppendTag(props, 1, protowire.BytesType)
	props = protowire.AppendVarint(props, uint64(entryLen))
	props = protowire.AppendTag(props, 1, protowire.BytesType)
	props = protowire.AppendString(props, "data")
	props = protowire.AppendTag(props, 2, protowire.BytesType)
	props = protowire.AppendVarint(props, uint64(len(val)+n))
	props = append(props, val...)
	props = append(props, s...)

	opts, _ := proto.Marshal(&pulumirpc.TransformResourceOptions{
		Protect: proto.Bool(false), IgnoreChanges: []string{"data"},
	})
	req = protowire.AppendTag(nil, 1, protowire.BytesType)
	req = protowire.AppendString(req, "bench:index:Blob")
	req = protowire.AppendTag(req, 2, protowire.BytesType)
	req = protowire.AppendString(req, "big")
	req = protowire.AppendTag(req, 3, protowire.VarintType)
	req = protowire.AppendVarint(req, 1)
	req = protowire.AppendTag(req, 4, protowire.BytesType)
	req = protowire.AppendString(req, "urn:pulumi:"+stack+"::"+project+"::pulumi:pulumi:Stack::"+project+"-"+stack)
	req = protowire.AppendTag(req, 5, protowire.BytesType)
	req = protowire.AppendBytes(req, props)
	req = protowire.AppendTag(req, 6, protowire.BytesType)
	req = protowire.AppendBytes(req, opts)
	return req, props
}

// measure starts t, makes one call and stops t.
func measure(t target, req, props []byte) (res result) {
	res.target = t.name
	mon, err := startMonitor()
	if err != nil {
		res.err = err
		return res
	}
	defer mon.stop()
	args := strings.Fields(t.cmd)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), mon.env()...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		res.err = err
		return res
	}
	defer func() {
		mon.release()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	var cb *pulumirpc.Callback
	select {
	case cb = <-mon.registered:
	case <-time.After(2 * time.Minute):
		res.err = errors.New("no stack transform registered within 2 minutes")
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		return res
	}
	conn, err := grpc.NewClient(cb.GetTarget(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)))
	if err != nil {
		res.err = err
		return res
	}
	defer conn.Close()
	client := pulumirpc.NewCallbacksClient(conn)
	// A small call first, so that the connection is up and the server
	// warm; it is not timed.
	if _, err := client.Invoke(context.Background(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: smallRequest()}); err != nil {
		res.err = fmt.Errorf("warm-up call: %w", err)
		return res
	}
	pid := cmd.Process.Pid
	if res.start, err = vm(pid, "VmRSS"); err != nil {
		res.err = err
		return res
	}
	start := time.Now()
	out, err := client.Invoke(context.Background(), &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: req})
	res.wall = time.Since(start)
	if err != nil {
		res.err = err
		return res
	}
	if res.hwm, err = vm(pid, "VmHWM"); err != nil {
		res.err = err
		return res
	}
	res.err = check(out.GetResponse(), props)
	return res
}

func smallRequest() []byte {
	req, _ := request(16)
	return req
}

// check reports whether resp is a TransformResponse whose properties are
// props: byte for byte, or else decoded.
func check(resp, props []byte) error {
	var got []byte
	for b := resp; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errors.New("response does not parse")
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return errors.New("response does not parse")
			}
			got, b = v, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return errors.New("response does not parse")
		}
		b = b[m:]
	}
	if bytes.Equal(got, props) {
		return nil
	}
	var a, b structpb.Struct
	if err := proto.Unmarshal(got, &a); err != nil {
		return fmt.Errorf("response properties do not parse: %w", err)
	}
	_ = proto.Unmarshal(props, &b)
	if !proto.Equal(&a, &b) {
		return errors.New("response properties differ from the request's")
	}
	return nil
}

// vm reads a field of /proc/PID/status, in bytes.
func vm(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// monitor is the least of a ResourceMonitor and an Engine that a Pulumi
// program needs to register a stack transform and wait.
type monitor struct {
	pulumirpc.UnimplementedResourceMonitorServer
	lis        net.Listener
	srv        *grpc.Server
	registered chan *pulumirpc.Callback
	done       chan struct{}
	once       sync.Once
}

func startMonitor() (*monitor, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &monitor{lis: lis, registered: make(chan *pulumirpc.Callback, 1), done: make(chan struct{})}
	m.srv = grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	pulumirpc.RegisterResourceMonitorServer(m.srv, m)
	pulumirpc.RegisterEngineServer(m.srv, &engine{})
	go func() { _ = m.srv.Serve(lis) }()
	return m, nil
}

func (m *monitor) env() []string {
	addr := m.lis.Addr().String()
	dir, _ := os.Getwd()
	return []string{
		"PULUMI_MONITOR=" + addr, "PULUMI_ENGINE=" + addr, "PULUMI_PROJECT=" + project, "PULUMI_STACK=" + stack,
		"PULUMI_ORGANIZATION=organization", "PULUMI_DRY_RUN=true", "PULUMI_PARALLEL=16", "PULUMI_CONFIG={}",
		"PULUMI_CONFIG_SECRET_KEYS=[]", "PULUMI_ROOT_DIRECTORY=" + dir,
	}
}

func (m *monitor) release() { m.once.Do(func() { close(m.done) }) }

func (m *monitor) stop() {
	m.release()
	m.srv.Stop()
}

func (m *monitor) GetDeploymentInfo(context.Context, *emptypb.Empty) (*pulumirpc.DeploymentInfo, error) {
	var fs []pulumirpc.ResourceMonitorFeature
	for v := range pulumirpc.ResourceMonitorFeature_name {
		fs = append(fs, pulumirpc.ResourceMonitorFeature(v))
	}
	return &pulumirpc.DeploymentInfo{Project: project, Stack: stack, Organization: "organization", DryRun: true,
		Parallel: 16, SupportedFeatures: fs}, nil
}

func (m *monitor) SupportsFeature(context.Context, *pulumirpc.SupportsFeatureRequest) (*pulumirpc.SupportsFeatureResponse, error) {
	return &pulumirpc.SupportsFeatureResponse{HasSupport: true}, nil
}

func (m *monitor) RegisterResource(_ context.Context, req *pulumirpc.RegisterResourceRequest) (*pulumirpc.RegisterResourceResponse, error) {
	urn := fmt.Sprintf("urn:pulumi:%s::%s::%s::%s", stack, project, req.GetType(), req.GetName())
	obj := req.GetObject()
	if obj == nil {
		obj = &structpb.Struct{}
	}
	return &pulumirpc.RegisterResourceResponse{Urn: urn, Object: obj}, nil
}

func (m *monitor) RegisterResourceOutputs(context.Context, *pulumirpc.RegisterResourceOutputsRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (m *monitor) RegisterStackTransform(_ context.Context, cb *pulumirpc.Callback) (*emptypb.Empty, error) {
	select {
	case m.registered <- cb:
	default:
	}
	return &emptypb.Empty{}, nil
}

func (m *monitor) SignalAndWaitForShutdown(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	select {
	case <-m.done:
	case <-ctx.Done():
	}
	return &emptypb.Empty{}, nil
}

type engine struct {
	pulumirpc.UnimplementedEngineServer
	mu   sync.Mutex
	root string
}

func (e *engine) Log(context.Context, *pulumirpc.LogRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

func (e *engine) GetRootResource(context.Context, *pulumirpc.GetRootResourceRequest) (*pulumirpc.GetRootResourceResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return &pulumirpc.GetRootResourceResponse{Urn: e.root}, nil
}

func (e *engine) SetRootResource(_ context.Context, req *pulumirpc.SetRootResourceRequest) (*pulumirpc.SetRootResourceResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.root = req.GetUrn()
	return &pulumirpc.SetRootResourceResponse{}, nil
}
