package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/integration/clitest"
)

const faultsPkg = "github.com/langhost/callbacks/integration/programs/faults"

// hangBound turns a wait that would never end into a failure. It is far
// beyond what any step takes on a loaded machine and is never a verdict
// about speed.
const hangBound = 3 * time.Minute

// callbackSides are the two implementations a fault test sets side by side:
// this module's callbacks, and the Go SDK's own (programs/faults with
// FAULT_SDK=1).
var callbackSides = []struct {
	name string
	env  string
}{
	{"module", "FAULT_SDK=0"},
	{"sdk", "FAULT_SDK=1"},
}

// faultStack is a stack running programs/faults, with its directory of
// markers and records.
type faultStack struct {
	*clitest.Stack
	dir string
}

func newFaultStack(t *testing.T, sideEnv string, env ...string) *faultStack {
	t.Helper()
	dir := t.TempDir()
	s := newStack(t, "faults", faultsPkg, append([]string{"FAULT_DIR=" + dir, sideEnv}, env...)...)
	return &faultStack{Stack: s, dir: dir}
}

// calls returns the lines programs/faults recorded, in order.
func (f *faultStack) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.dir, "calls"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// count returns how many recorded lines are line.
func count(lines []string, line string) int {
	n := 0
	for _, l := range lines {
		if l == line {
			n++
		}
	}
	return n
}

// blocked is what programs/faults wrote when a hook began to block.
type blocked struct {
	pid, hostPID int    // the program and the language host that ran it
	target       string // this module's callback server; empty for the SDK
}

// running is a CLI command started in the background.
type running struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan struct{}
	err            error
}

// start starts `pulumi args...` on the stack; the test ends it if it still
// runs.
func (f *faultStack) start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{cmd: f.Command(context.Background(), args...), exited: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	require.NoError(t, r.cmd.Start())
	go func() {
		r.err = r.cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
	})
	return r
}

// wait waits for the command to exit, within the hang bound.
func (r *running) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.exited:
		t.Logf("pulumi %s: %v", strings.Join(r.cmd.Args[1:], " "), r.err)
	case <-time.After(hangBound):
		t.Fatalf("pulumi %s did not exit within %v\n--- stdout\n%s--- stderr\n%s", strings.Join(r.cmd.Args[1:], " "), hangBound, &r.stdout, &r.stderr)
	}
}

func (r *running) String() string {
	return fmt.Sprintf("pulumi %s: %v\n--- stdout\n%s--- stderr\n%s---", strings.Join(r.cmd.Args[1:], " "), r.err, &r.stdout, &r.stderr)
}

// waitBlocked waits until the hook of event blocks (programs/faults writes
// blocked-EVENT) and returns what it wrote. It fails if the command exits
// first.
func (f *faultStack) waitBlocked(t *testing.T, r *running, event string) blocked {
	t.Helper()
	path := filepath.Join(f.dir, "blocked-"+event)
	limit := time.After(hangBound)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			var b blocked
			_, err := fmt.Sscanf(string(data), "%d %d %s", &b.pid, &b.hostPID, &b.target)
			if err != nil && b.hostPID == 0 {
				t.Fatalf("reading %s: %v: %q", path, err, data)
			}
			return b
		}
		select {
		case <-r.exited:
			t.Fatalf("the command ended before the %s hook blocked: %s", event, r)
		case <-limit:
			t.Fatalf("the %s hook did not block within %v: %s", event, hangBound, r)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// alive reports whether the process pid exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

// requireGone waits, within the hang bound, until the program has ended,
// then checks that nothing listens where its callback server did. The
// language host and the providers the CLI started are the CLI's: a killed
// CLI leaves them running until their health check of the engine fails (every
// five minutes), so they are not waited for here; the test ends them (see
// endOrphans).
func requireGone(t *testing.T, b blocked) {
	t.Helper()
	limit := time.After(hangBound)
	for alive(b.pid) {
		select {
		case <-limit:
			t.Fatalf("the program (pid %d) still runs %v after the CLI ended", b.pid, hangBound)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if b.target == "" {
		return
	}
	_, port, err := net.SplitHostPort(b.target)
	require.NoError(t, err)
	// Another process may listen on the port by now; only the deployment's
	// own processes matter.
	for _, pid := range []int{b.pid, b.hostPID} {
		if listensOn(t, pid, port) {
			t.Fatalf("process %d of the deployment still listens at %s, the program's callback server", pid, b.target)
		}
	}
}

// listensOn reports whether process pid holds a TCP socket listening on
// port (decimal).
func listensOn(t *testing.T, pid int, port string) bool {
	t.Helper()
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	hexPort := fmt.Sprintf(":%04X", n)
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && strings.HasSuffix(f[1], hexPort) {
				inodes[f[9]] = true
			}
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false // the process is gone
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true
		}
	}
	return false
}

// endOrphans kills, when the test ends, the plugins a killed CLI left
// behind: the language host b.hostPID and every process started with the
// same engine address as its argument (the providers).
func endOrphans(t *testing.T, b blocked) {
	t.Helper()
	host, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", b.hostPID))
	if err != nil {
		return // already gone
	}
	args := strings.Split(strings.TrimRight(string(host), "\x00"), "\x00")
	engine := args[len(args)-1]
	t.Cleanup(func() {
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			pid, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
			if err != nil || !strings.HasSuffix(strings.TrimRight(string(cmdline), "\x00"), "\x00"+engine) {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// signalName names a signal for subtests.
func signalName(sig syscall.Signal) string {
	if sig == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGKILL"
}
