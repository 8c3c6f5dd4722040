package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CLI the Automation API drives, and the Go language host it needs.
var cliTools = []string{"pulumi", "pulumi-language-go"}

// hermetic gives the test's process the environment the Automation API
// passes on to the CLI: a PULUMI_HOME and a file backend of the test's own,
// a passphrase, no update check and no plugin download, and the project's
// stand-in for pulumi-random on PATH, where the CLI finds plugins it has
// not installed. throttle makes the stand-in fail each first create with
// "throttled". It skips the test when the CLI is not on PATH.
func hermetic(t *testing.T, throttle bool) {
	t.Helper()
	for _, tool := range cliTools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH; put the engine there with "+
				`export PATH="$(../shared/engine/install.sh "$HOME/.cache/pulumi-engine"):$PATH"`, tool)
		}
	}
	dir := t.TempDir()
	plugins := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "pulumi-resource-random"),
		"github.com/langhost/callbacks/integration/providers/random")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the stand-in provider: %s", out)

	t.Setenv("PATH", plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("PULUMI_HOME", filepath.Join(dir, "home"))
	t.Setenv("PULUMI_BACKEND_URL", "file://"+filepath.Join(dir, "state"))
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "automation")
	t.Setenv("PULUMI_SKIP_UPDATE_CHECK", "1")
	t.Setenv("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", "true")
	if throttle {
		t.Setenv("RANDOM_THROTTLE_FIRST_CREATE", "1")
	} else {
		t.Setenv("RANDOM_THROTTLE_FIRST_CREATE", "")
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "state"), 0o755))
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
		// The pet passes the transform (the stack resource was registered
		// before it), the hook runs before the pet's create, and the error
		// hook once, on the throttle.
		assert.Equal(t, fmt.Sprintf("automation-%d: 1 transform calls, 1 hook calls, 1 error hook calls, 0 about another stack", i), line)
	}
}
