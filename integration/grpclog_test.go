package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/integration/clitest"
)

// TestSimulatorWritesTheEnginesGRPCLog runs programs under `pulumi up` and
// on the simulator, each with PULUMI_DEBUG_GRPC naming a file, and compares
// the two logs' structure: the same registrations of callbacks and
// resources and the same callback calls, each started and completed, in the
// same order, with the same fields present in each entry, in its request
// and in its response, and the same metadata. The stack's own registration
// and the calls the simulator does not log (the language host's, the
// providers', RegisterResourceOutputs) are left out, since they interleave
// with the program's differently from run to run. The simulator plays the
// release of the CLI on PATH. It sets the simulator's PULUMI_DEBUG_GRPC, so
// it is not parallel.
func TestSimulatorWritesTheEnginesGRPCLog(t *testing.T) { //nolint:paralleltest // sets PULUMI_DEBUG_GRPC
	version := clitest.EngineVersion(t)
	for _, tc := range []struct {
		project string
		env     []string
		prov    *enginetest.FakeProvider
	}{
		// A stack transform and an error hook that retries a throttled
		// create.
		{"errorhook", []string{throttle}, simulatedRandom()},
		// Six resource hooks attached by a stack transform.
		{"hooks", nil, &enginetest.FakeProvider{}},
	} {
		t.Run(tc.project, func(t *testing.T) {
			pkg := "github.com/langhost/callbacks/integration/programs/" + tc.project
			dir := t.TempDir()
			cliLog, simLog := filepath.Join(dir, "cli.log"), filepath.Join(dir, "simulator.log")
			cli := newStack(t, tc.project, pkg, append(tc.env, "PULUMI_DEBUG_GRPC="+cliLog)...)
			cli.Up().MustSucceed(t)

			t.Setenv("PULUMI_DEBUG_GRPC", simLog)
			eng := enginetest.New(t, enginetest.WithProject(tc.project), enginetest.WithStack("dev"),
				enginetest.WithProvider(tc.prov), enginetest.EngineVersion(version))
			res, err := eng.RunCommand(context.Background(), exec.Command(builds.Program(t, pkg)))
			require.NoError(t, err)
			require.NoError(t, res.Err)

			want, got := logShape(t, cliLog), logShape(t, simLog)
			require.NotEmpty(t, want, "the CLI logged no callback call or registration")
			assert.Equal(t, want, got, "the shape of the gRPC log (CLI, then simulator)")
		})
	}
}

// logShape reads a gRPC log and describes, one line each, its entries about
// callbacks and resources the program registers: method, progress, the
// fields present in the entry, its request and its response, and the
// metadata.
func logShape(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "no gRPC log was written")
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the mode of %s", path)

	var shape []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var entry map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &entry), "a line of %s: %s", path, sc.Text())
		var method, progress string
		require.NoError(t, json.Unmarshal(entry["method"], &method))
		_ = json.Unmarshal(entry["progress"], &progress)
		kept := method == "/pulumirpc.Callbacks/Invoke" ||
			strings.HasPrefix(method, "/pulumirpc.ResourceMonitor/Register") && method != "/pulumirpc.ResourceMonitor/RegisterResourceOutputs"
		if !kept {
			continue
		}
		var req struct {
			Type    string
			Request []byte // a callback's payload
		}
		_ = json.Unmarshal(entry["request"], &req)
		if req.Type == string(resource.RootStackType) || aboutTheStack(req.Request) {
			continue
		}
		shape = append(shape, fmt.Sprintf("%s %s fields %v request %v response %v metadata %s",
			strings.TrimPrefix(method, "/pulumirpc."), progress,
			slices.Sorted(maps.Keys(entry)), keys(entry["request"]), keys(entry["response"]), entry["metadata"]))
	}
	require.NoError(t, sc.Err())
	return shape
}

// aboutTheStack says whether a callback's payload is a transform of the
// stack resource, which the SDK registers as the program starts, before its
// stack transform: whether the engine passes it through the transform is a
// race, under the CLI and on the simulator alike. Another kind's payload
// has the resource's URN where a transform request has its type, and is not
// taken for one.
func aboutTheStack(payload []byte) bool {
	var tr pulumirpc.TransformRequest
	return len(payload) > 0 && proto.Unmarshal(payload, &tr) == nil && tr.GetType() == string(resource.RootStackType)
}

// keys returns the sorted names of a JSON object's fields, nil for no
// object.
func keys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}
