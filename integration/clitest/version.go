package clitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// EngineVersion returns the version of the `pulumi` on PATH, as `pulumi
// version` prints it without a leading "v" ("3.274.1", "3.260.0"), for
// tests whose verdict depends on the engine they run under. It skips tb
// when the CLI is absent and fails it when the version cannot be read. The
// CLI is asked once per test binary.
func EngineVersion(tb testing.TB) string {
	tb.Helper()
	RequireCLI(tb)
	v, err := engineVersion()
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

var engineVersion = sync.OnceValues(func() (string, error) {
	home, err := os.MkdirTemp("", "pulumi-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(context.Background(), commandLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "pulumi", "version")
	cmd.Env = append(hostEnv(), "PULUMI_HOME="+home, "PULUMI_SKIP_UPDATE_CHECK=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pulumi version: %w", err)
	}
	return parseVersion(string(out))
})

// parseVersion reads the version from what `pulumi version` printed:
// "v3.274.1" or "3.260.0", on a line of its own.
func parseVersion(out string) (string, error) {
	v := strings.TrimPrefix(strings.TrimSpace(out), "v")
	if v == "" || strings.ContainsAny(v, " \n") || strings.Count(v, ".") < 2 {
		return "", fmt.Errorf("pulumi version printed %q, not a version", out)
	}
	return v, nil
}
