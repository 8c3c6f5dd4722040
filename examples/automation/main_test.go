package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/integration/clitest"
)

// builds holds the stand-in provider, built once for the test binary.
var builds clitest.Builds

func TestMain(m *testing.M) {
	code := m.Run()
	_ = builds.Close()
	os.Exit(code)
}

// hermetic gives the test's process the environment the Automation API
// passes on to the CLI: clitest's hermetic settings (a PULUMI_HOME and a
// file backend of the test's own, a passphrase, no update check, no plugin
// download), and the project's stand-in for pulumi-random on PATH, where
// the CLI finds plugins it has not installed. throttle makes the stand-in
// fail each first create with "throttled". It skips the test when the CLI
// is not on PATH.
func hermetic(t *testing.T, throttle bool) {
	t.Helper()
	clitest.RequireCLI(t)
	plugins := builds.Provider(t, "github.com/langhost/callbacks/integration/providers/random", "random")
	t.Setenv("PATH", plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, kv := range clitest.Env(t) {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	throttleFirst := ""
	if throttle {
		throttleFirst = "1"
	}
	t.Setenv("RANDOM_THROTTLE_FIRST_CREATE", throttleFirst)
}

// The example as written: four stacks at once, each of whose callbacks,
// error hook included, reach that stack's program and no other.
func TestFourStacksAtOnce(t *testing.T) {
	hermetic(t, true)
	var out bytes.Buffer
	err := run(t.Context(), "automation", 4, &out)
	require.NoError(t, err, "%s", &out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, "%s", &out)
	for i, line := range lines {
		// The pet passes the transform, the hook runs before the pet's
		// create, and the error hook once, on the throttle.
		assert.Equal(t, fmt.Sprintf("automation-%d: 1 transform calls, 1 hook calls, 1 error hook calls, 0 about another stack", i), line)
	}
}
