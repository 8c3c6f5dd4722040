package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// exitLoggedError is the exit status with which a program says that it has
// already reported its error to the engine (the SDKs' "logged error"
// status). The language hosts then report nothing more.
const exitLoggedError = 32

// stderrLimit bounds how much of a program's stderr is kept for the
// diagnostic: the end of it, where the error is.
const stderrLimit = 64 << 10

// ProgramError is a program's failure as the language host reports it: its
// exit status and, when it did not report its error itself, its standard
// error.
type ProgramError struct {
	// ExitCode is the program's exit status; -1 if a signal ended it.
	ExitCode int
	// Stderr is the end of what the program wrote to standard error.
	Stderr string
	// Logged reports that the program exited with the status that says it
	// has already logged its error to the engine (32). The engine then adds
	// no diagnostic of its own.
	Logged bool
}

// Unwrap returns [ErrProgramReported] for a program that logged its error
// itself, so that the engine adds no diagnostic.
func (pe *ProgramError) Unwrap() error {
	if pe.Logged {
		return ErrProgramReported
	}
	return nil
}

// Error renders the failure in the engine's words, followed by the
// program's standard error.
func (pe *ProgramError) Error() string {
	if pe.Logged {
		return "the program reported its error and exited with code " + strconv.Itoa(pe.ExitCode)
	}
	msg := "an unhandled error occurred: program exited with non-zero exit code: " + strconv.Itoa(pe.ExitCode)
	if s := strings.TrimSpace(pe.Stderr); s != "" {
		msg += "\n" + s
	}
	return msg
}

// RunCommand runs cmd as a language host runs a program: with the
// environment of [Engine.Env] added to cmd.Env (or to the current
// process's environment when cmd.Env is nil), PULUMI_ROOT_DIRECTORY and
// PULUMI_NODEJS_ROOT_DIRECTORY set to cmd.Dir, and its standard error
// captured (and still copied to cmd.Stderr if set). It waits for the
// program to exit, lets the engine finish the deployment (as
// [Engine.Finish] does for a program that never signalled its end), and
// returns the deployment's [Result].
//
// A program that exits non-zero fails the deployment as it fails under the
// engine ([Engine.ProgramFailed]): Result.ProgramErr holds a
// [*ProgramError], and, unless the program exited with status 32 (it has
// already logged its error), the engine emits the error diagnostic "an
// unhandled error occurred: program exited with non-zero exit code: N"
// followed by the program's standard error. A deployment that fails while
// the program still runs ends without it, as under the engine: the program
// is interrupted (and killed 5 seconds later) and its exit tells nothing
// more.
//
// The error RunCommand returns is for what is not the program's doing: the
// command could not start, or ctx ended (the program is then interrupted,
// and killed 5 seconds later).
//
// Programs that read their settings from flags rather than the environment
// (the Node.js and Python runners) take the addresses from
// [Engine.MonitorAddr] and [Engine.EngineAddr]; see [Engine.NodeArgs].
func (e *Engine) RunCommand(ctx context.Context, cmd *exec.Cmd) (*Result, error) {
	if cmd.Process != nil {
		return nil, errors.New("enginetest: RunCommand: the command has already started")
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(env, e.Env()...)
	dir := cmd.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if dir != "" {
		env = append(env, "PULUMI_ROOT_DIRECTORY="+dir, "PULUMI_NODEJS_ROOT_DIRECTORY="+dir)
	}
	cmd.Env = env
	tail := &tailBuffer{limit: stderrLimit}
	if cmd.Stdout != nil && cmd.Stdout == cmd.Stderr {
		// One writer for both: exec would have written to it from one
		// goroutine; with stderr also captured there are two.
		lw := &lockedWriter{w: cmd.Stdout}
		cmd.Stdout, cmd.Stderr = lw, lw
	}
	if cmd.Stderr != nil {
		cmd.Stderr = &teeWriter{a: tail, b: cmd.Stderr}
	} else {
		cmd.Stderr = tail
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("enginetest: starting the program: %w", err)
	}
	e.mu.Lock()
	e.programPID = cmd.Process.Pid
	e.mu.Unlock()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// A failed deployment ends without waiting for the program: the engine
	// then stops the language host, and the program with it.
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	over := make(chan *Result, 1)
	go func() {
		if r, err := e.Wait(waitCtx); err == nil {
			over <- r
		}
	}()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
		}
	}
	var werr error
	select {
	case werr = <-waited:
	case r := <-over:
		if r.Failed {
			stop()
			return r, nil
		}
		select {
		case werr = <-waited:
		case <-ctx.Done():
			stop()
			return nil, fmt.Errorf("enginetest: running the program: %w", ctx.Err())
		}
	case <-ctx.Done():
		stop()
		return nil, fmt.Errorf("enginetest: running the program: %w", ctx.Err())
	}
	if werr == nil {
		e.ProgramFailed(nil)
		return e.Wait(ctx)
	}
	var xe *exec.ExitError
	if !errors.As(werr, &xe) {
		// The program ran but its output could not be copied.
		return nil, fmt.Errorf("enginetest: running the program: %w", werr)
	}
	code := xe.ExitCode()
	if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = -1
	}
	e.ProgramFailed(&ProgramError{ExitCode: code, Stderr: tail.String(), Logged: code == exitLoggedError})
	return e.Wait(ctx)
}

// ProgramPID returns the process id of the program [Engine.RunCommand]
// started, or 0 before it has started one.
func (e *Engine) ProgramPID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.programPID
}

// NodeArgs returns the arguments with which the Node.js language host runs
// program (a file or directory, relative to dir) with `node`: through the
// runner of the @pulumi/pulumi package installed in dir, which takes the
// engine's addresses and the stack's names as flags.
func (e *Engine) NodeArgs(dir, program string) []string {
	args := []string{
		dir + "/node_modules/@pulumi/pulumi/cmd/run",
		"--monitor=" + e.addr,
		"--engine=" + e.addr,
		"--project=" + e.cfg.project,
		"--stack=" + e.cfg.stack,
		"--parallel=" + strconv.Itoa(int(e.cfg.parallel)),
		"--pwd=" + dir,
	}
	if e.cfg.organization != "" {
		args = append(args, "--organization="+e.cfg.organization)
	}
	if e.cfg.dryRun {
		args = append(args, "--dry-run")
	}
	return append(args, program)
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) > t.limit {
		p = p[len(p)-t.limit:]
	}
	if over := t.buf.Len() + len(p) - t.limit; over > 0 {
		t.buf.Next(over)
	}
	t.buf.Write(p)
	return n, nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// teeWriter writes to a and b; b's errors do not stop a.
type teeWriter struct {
	a *tailBuffer
	b io.Writer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	_, _ = w.a.Write(p)
	_, _ = w.b.Write(p)
	return len(p), nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
