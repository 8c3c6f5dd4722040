package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAKilledKitLeavesNoProgram kills the kit while the program it runs is
// still going, as go test's timeout does, and checks that the program dies
// with it rather than running on unowned.
func TestAKilledKitLeavesNoProgram(t *testing.T) {
	needGo(t)
	bin, err := kitBinary()
	if err != nil {
		t.Fatal(err)
	}
	kit := exec.Command(bin, "--", "sleep", "600")
	if err := kit.Start(); err != nil {
		t.Fatal(err)
	}
	child := 0
	for deadline := time.Now().Add(2 * time.Minute); child == 0; {
		if time.Now().After(deadline) {
			kit.Process.Kill()
			t.Fatal("the kit did not start its program within two minutes")
		}
		child = childOf(kit.Process.Pid)
		time.Sleep(10 * time.Millisecond)
	}
	if err := kit.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = kit.Wait()
	for deadline := time.Now().Add(time.Minute); alive(child); {
		if time.Now().After(deadline) {
			t.Fatalf("the program (pid %d) still runs a minute after its kit was killed", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// childOf returns the pid of a child of the process pid, or 0.
func childOf(pid int) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			n, _ := strconv.Atoi(fields[0])
			return n
		}
	}
	return 0
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting to be reaped has exited).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}
