package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the process cmd starts receive SIGKILL when the
// process that started it dies, so a kit (or a test binary) that is killed,
// for example by go test's timeout, leaves no program behind.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
