package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A peer is a program the driver can measure. Every one serves
// pulumirpc.Callbacks on 127.0.0.1 with an identity resource transform,
// registers it with ResourceMonitor.RegisterStackTransform at the monitor
// named by PULUMI_MONITOR, and waits in SignalAndWaitForShutdown.
type peer struct {
	name   string
	pkg    string   // the Go main package to build, from the module root
	args   []string // the program's arguments
	script string   // or a Node.js script, from the module root
}

// peers are the programs the driver knows, in the order the table shows
// them.
var peers = []peer{
	{name: "proto", pkg: "./bench/peers/proto"},
	{name: "splice", pkg: "./bench/peers/proto", args: []string{"-splice"}},
	{name: "ours", pkg: "./bench/ours"},
	{name: "ours-unread", pkg: "./bench/ours", args: []string{"-unread"}},
	{name: "ours-traced", pkg: "./bench/ours", args: []string{"-trace"}},
	{name: "gosdk", pkg: "./bench/peers/gosdk"},
	{name: "nodesdk", script: "bench/peers/nodesdk/target.js"},
}

// nodeModules is where the repository installs @pulumi/pulumi, from the
// module root.
const nodeModules = "testdata/nodejs/node_modules"

// command is how to start a peer.
type command struct {
	name string
	argv []string
	env  []string // beyond the driver's own and the engine's
}

// commands builds the Go peers among names into bin, with one go build,
// and returns how to start each peer, in the order of peers. A peer whose
// runtime is absent is left out, with a note saying why.
func commands(ctx context.Context, root, bin string, names []string) (cmds []command, notes []string, err error) {
	var pkgs []string
	for _, p := range peers {
		if !slices.Contains(names, p.name) {
			continue
		}
		switch {
		case p.pkg != "":
			if !slices.Contains(pkgs, p.pkg) {
				pkgs = append(pkgs, p.pkg)
			}
			exe := filepath.Join(bin, filepath.Base(p.pkg))
			cmds = append(cmds, command{name: p.name, argv: append([]string{exe}, p.args...)})
		case p.script != "":
			node, note := findNode(root)
			if note != "" {
				notes = append(notes, p.name+" skipped: "+note)
				continue
			}
			cmds = append(cmds, command{
				name: p.name,
				argv: []string{node, filepath.Join(root, p.script)},
				env:  []string{"NODE_PATH=" + filepath.Join(root, nodeModules)},
			})
		}
	}
	if len(pkgs) > 0 {
		// -trimpath, as pulumi-language-go builds programs: the build then
		// shares its compiled dependencies with the module's other builds
		// of programs (the tests', CI's vet).
		build := exec.CommandContext(ctx, "go", append([]string{"build", "-trimpath", "-o", bin + string(filepath.Separator)}, pkgs...)...)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, nil, fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, out)
		}
	}
	return cmds, notes, nil
}

// findNode returns the node executable, or why the Node.js peer cannot
// run.
func findNode(root string) (node, note string) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", "node is not on PATH"
	}
	if _, err := os.Stat(filepath.Join(root, nodeModules, "@pulumi/pulumi/package.json")); err != nil {
		return "", nodeModules + " has no @pulumi/pulumi (run npm ci in testdata/nodejs)"
	}
	return node, ""
}

// target is a running peer and the driver's connection to its callback
// server, one connection as the engine has.
type target struct {
	name   string
	eng    *engine
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{}
	conn   *grpc.ClientConn
	client pulumirpc.CallbacksClient
	token  string
}

// start runs c in root with an engine of its own and waits, for at most
// timeout, for it to register its transform.
func start(c command, root string, timeout time.Duration) (*target, error) {
	t := &target{name: c.name, out: &tail{}, exited: make(chan struct{})}
	eng, err := startEngine(t.out)
	if err != nil {
		return nil, err
	}
	t.eng = eng
	t.cmd = exec.Command(c.argv[0], c.argv[1:]...)
	t.cmd.Dir = root
	t.cmd.Env = append(append(os.Environ(), eng.env(root)...), c.env...)
	t.cmd.Stdout, t.cmd.Stderr = t.out, t.out
	// A process group of its own, so that stopping the peer reaches any
	// process it started.
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := t.cmd.Start(); err != nil {
		eng.stop()
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	go func() {
		_ = t.cmd.Wait()
		close(t.exited)
	}()

	var cb *pulumirpc.Callback
	select {
	case cb = <-eng.transform():
	case <-t.exited:
		t.stop()
		return nil, fmt.Errorf("%s exited (%v) before it registered a transform; its output:\n%s", c.name, t.cmd.ProcessState, t.out)
	case <-time.After(timeout):
		t.stop()
		return nil, fmt.Errorf("%s registered no transform within %v; its output:\n%s", c.name, timeout, t.out)
	}
	t.token = cb.GetToken()
	t.conn, err = grpc.NewClient(cb.GetTarget(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)))
	if err != nil {
		t.stop()
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	t.client = pulumirpc.NewCallbacksClient(t.conn)
	return t, nil
}

// stop ends the program's wait in SignalAndWaitForShutdown and gives it
// five seconds to exit by itself, then five after SIGTERM before SIGKILL,
// both sent to its process group. It returns an error if the program
// failed or had to be stopped with a signal.
func (t *target) stop() error {
	if t.conn != nil {
		_ = t.conn.Close()
	}
	t.eng.release()
	defer t.eng.stop()
	if t.exitsWithin(5 * time.Second) {
		if !t.cmd.ProcessState.Success() {
			return fmt.Errorf("%s exited (%v); its output:\n%s", t.name, t.cmd.ProcessState, t.out)
		}
		return nil
	}
	pgid := -t.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	if !t.exitsWithin(5 * time.Second) {
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-t.exited
	}
	return fmt.Errorf("%s did not exit within 5 s of its release, and was stopped with a signal; its output:\n%s", t.name, t.out)
}

func (t *target) exitsWithin(d time.Duration) bool {
	select {
	case <-t.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// tail keeps the last 16 KiB a program wrote.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 16 << 10

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > tailSize {
		w.buf = w.buf[len(w.buf)-tailSize:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return "(nothing)"
	}
	return string(bytes.TrimRight(w.buf, "\n"))
}
