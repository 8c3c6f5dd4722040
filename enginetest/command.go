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

// stderrLimit bounds how much of a program's stderr ProgramError keeps: the
// end of it, where the error is.
const stderrLimit = 64 << 10

// ProgramError is a program's failure as the language host reports it: its
// exit status. What the program wrote to standard error is kept beside it
// for the test, but is not part of the report: the engine shows each of its
// lines as a diagnostic of its own.
type ProgramError struct {
	// ExitCode is the program's exit status; -1 if a signal ended it.
	ExitCode int
	// Stderr is the end of what the program wrote to standard error (at
	// most 64 KiB), for the test's own use.
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

// Error renders the failure in the engine's words, the one line the Go
// language host and the engine make of it: "an unhandled error occurred:
// program exited with non-zero exit code: N".
func (pe *ProgramError) Error() string {
	if pe.Logged {
		return "the program reported its error and exited with code " + strconv.Itoa(pe.ExitCode)
	}
	return "an unhandled error occurred: program exited with non-zero exit code: " + strconv.Itoa(pe.ExitCode)
}

// RunCommand runs cmd as a language host runs a program: with the
// environment of [Engine.Env] added to cmd.Env (or to the current
// process's environment when cmd.Env is nil), PULUMI_ROOT_DIRECTORY and
// PULUMI_NODEJS_ROOT_DIRECTORY set to cmd.Dir, and its standard error read
// by the engine (and still copied to cmd.Stderr if set). It waits for the
// program to exit, reports how it ended ([Engine.ProgramFailed]) and
// returns the deployment's [Result].
//
// As under the engine, each line the program writes to standard error that
// is not blank becomes, as it is written, a diagnostic of severity
// "info#err" with no URN and the line (without its newline) as its
// message, whether the program fails or not. A program that exits non-zero
// fails: Result.ProgramErr holds a [*ProgramError] and, unless the program
// exited with status 32 (it has already logged its error), the engine
// emits the one-line error diagnostic "an unhandled error occurred: program
// exited with non-zero exit code: N", with no URN. Before the program
// signalled its end, that failure ends the deployment and no "update
// failed" follows; after it, it fails a deployment that had succeeded (see
// [Engine.ProgramFailed]).
//
// A deployment that fails while the program still runs ends as under the
// engine it plays. 3.274.1 shuts its monitor down, which ends the
// program's pending calls, and the deployment is over once the program has
// exited (or after 30 seconds, when it is interrupted). 3.260 never
// answers them, and the program is interrupted (and killed 5 seconds
// later) and its exit tells nothing more.
//
// The error RunCommand returns is for what is not the program's doing: the
// command could not start, or ctx ended (the program is then interrupted,
// and killed 5 seconds later).
//
// Programs that read their settings from flags rather than the environment
// (the Node.js and Python runners) take the addresses from
// [Engine.MonitorAddr] and [Engine.EngineAddr].
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
	lines := &stderrLines{e: e}
	if cmd.Stdout != nil && cmd.Stdout == cmd.Stderr {
		// One writer for both: exec would have written to it from one
		// goroutine; with stderr also captured there are two.
		lw := &lockedWriter{w: cmd.Stdout}
		cmd.Stdout, cmd.Stderr = lw, lw
	}
	cmd.Stderr = &teeWriter{tail: tail, lines: lines, user: cmd.Stderr}
	e.attachRunner()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("enginetest: starting the program: %w", err)
	}
	e.mu.Lock()
	e.programPID = cmd.Process.Pid
	e.mu.Unlock()
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		lines.flush()
		waited <- err
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
	// A failed deployment ends without waiting for the program: the engine
	// then stops the language host, and the program with it.
	var werr error
	select {
	case werr = <-waited:
	case <-e.done:
		if e.overAndFailed() {
			stop()
			return e.result, nil
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
	var progErr error
	if werr != nil {
		var xe *exec.ExitError
		if !errors.As(werr, &xe) {
			// The program ran but its output could not be copied.
			return nil, fmt.Errorf("enginetest: running the program: %w", werr)
		}
		code := xe.ExitCode()
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -1
		}
		progErr = &ProgramError{ExitCode: code, Stderr: tail.String(), Logged: code == exitLoggedError}
	}
	e.ProgramFailed(progErr)
	res, err := e.Wait(ctx)
	if err != nil {
		return nil, err
	}
	return withProgramErr(res, progErr), nil
}

// ProgramPID returns the process id of the program [Engine.RunCommand]
// started, or 0 before it has started one.
func (e *Engine) ProgramPID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.programPID
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

// teeWriter copies the program's standard error to the tail ProgramError
// keeps, to the engine's diagnostics and to the caller's writer, if any;
// the caller's errors stop neither of the others.
type teeWriter struct {
	tail  *tailBuffer
	lines *stderrLines
	user  io.Writer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	_, _ = w.tail.Write(p)
	_, _ = w.lines.Write(p)
	if w.user != nil {
		_, _ = w.user.Write(p)
	}
	return len(p), nil
}

// stderrLines turns the program's standard error into diagnostics as the
// engine does: it reads the language host's standard error line by line and
// reports each line that is not blank, as soon as it is complete, as a
// message of severity info#err with no URN. The last line counts even
// without a newline, once flush is called at the program's exit.
type stderrLines struct {
	e    *Engine
	mu   sync.Mutex
	part []byte // the line being written, without its newline
}

func (l *stderrLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.part = append(l.part, p...)
			return n, nil
		}
		l.part = append(l.part, p[:i]...)
		l.emitLocked()
		p = p[i+1:]
	}
}

// flush reports the last line if it had no newline.
func (l *stderrLines) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.emitLocked()
}

func (l *stderrLines) emitLocked() {
	line := string(l.part)
	l.part = l.part[:0]
	if strings.TrimSpace(line) == "" {
		return
	}
	l.e.programSays(Diagnostic{Severity: severityInfoErr, Message: line, FromProgram: true})
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
