package integration_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks/integration/clitest"
)

// The kennel component provider of examples/provider, and the programs
// that use it and the teams library.
const (
	kennelPkg   = "github.com/langhost/callbacks/examples/provider"
	kennelType  = "kennel:index:Kennel"
	kennelsPkg  = "github.com/langhost/callbacks/integration/programs/kennels"
	teamsPkg    = "github.com/langhost/callbacks/integration/programs/teams"
	teamType    = "teams:index:Team"
	kennelAudit = "kennel-audit"
)

// engineLog is what the engine logged of its gRPC traffic for one command
// (PULUMI_DEBUG_GRPC): the callbacks registered through its resource
// monitor, by anyone (the program or a provider), and every call it made to
// a callback.
type engineLog struct {
	stackTransforms []*pulumirpc.Callback
	hooks           []*pulumirpc.RegisterResourceHookRequest
	calls           []*pulumirpc.CallbackInvokeRequest
}

// withEngineLog returns the environment variable that makes the engine log
// its gRPC traffic, and a func that reads and removes the log after each
// command.
func withEngineLog(t *testing.T) (env string, read func() *engineLog) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "grpc.log")
	return "PULUMI_DEBUG_GRPC=" + path, func() *engineLog {
		t.Helper()
		f, err := os.Open(path)
		require.NoError(t, err, "the engine wrote no gRPC log")
		defer func() {
			_ = f.Close()
			_ = os.Remove(path)
		}()
		log := &engineLog{}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var e struct {
				Method   string          `json:"method"`
				Request  json.RawMessage `json:"request"`
				Progress string          `json:"progress"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "a line of the engine's gRPC log: %s", sc.Text())
			if e.Progress != "request_started" {
				continue
			}
			decode := func(m proto.Message) {
				require.NoError(t, protojson.Unmarshal(e.Request, m), "%s request: %s", e.Method, e.Request)
			}
			switch e.Method {
			case "/pulumirpc.ResourceMonitor/RegisterStackTransform":
				cb := &pulumirpc.Callback{}
				decode(cb)
				log.stackTransforms = append(log.stackTransforms, cb)
			case "/pulumirpc.ResourceMonitor/RegisterResourceHook":
				req := &pulumirpc.RegisterResourceHookRequest{}
				decode(req)
				log.hooks = append(log.hooks, req)
			case "/pulumirpc.Callbacks/Invoke":
				req := &pulumirpc.CallbackInvokeRequest{}
				decode(req)
				log.calls = append(log.calls, req)
			}
		}
		require.NoError(t, sc.Err())
		return log
	}
}

// callsTo returns the calls made to the callback registered under token.
func (l *engineLog) callsTo(token string) []*pulumirpc.CallbackInvokeRequest {
	var out []*pulumirpc.CallbackInvokeRequest
	for _, c := range l.calls {
		if c.GetToken() == token {
			out = append(out, c)
		}
	}
	return out
}

// hookCallsByName returns, for each call to a hook, the name of the
// resource the engine called it about.
func hookCallsByName(t *testing.T, calls []*pulumirpc.CallbackInvokeRequest) []string {
	t.Helper()
	var names []string
	for _, c := range calls {
		var req pulumirpc.ResourceHookRequest
		require.NoError(t, proto.Unmarshal(c.GetRequest(), &req))
		names = append(names, req.GetName())
	}
	slices.Sort(names)
	return names
}

// TestKennelProviderUnderPulumiUp runs examples/provider, a component
// provider on provider.ComponentMain, under `pulumi up`: a Go program
// constructs two Kennels and creates a pet of its own beside them. The
// provider's hook reaches each kennel's pets and shows its message under
// them; the user's pet is untouched, and the engine's own log of its gRPC
// traffic shows that it called the provider about the kennels' pets only,
// and no transform at all.
func TestKennelProviderUnderPulumiUp(t *testing.T) {
	t.Parallel()
	clitest.RequireCLI(t)
	env, readLog := withEngineLog(t)
	s := clitest.NewStack(t, clitest.Project{
		Name:    "kennels",
		Program: builds.Program(t, kennelsPkg),
		Providers: map[string]string{
			"kennel": builds.Provider(t, kennelPkg, "kennel"),
			"random": builds.Provider(t, providerPkg, "random"),
		},
		Env: []string{env},
	})

	up := s.Up().MustSucceed(t)
	log := readLog()
	pets := map[string]string{"north-pet-1": "north", "north-pet-2": "north", "south-pet-1": "south"}
	for pet, kennel := range pets {
		assert.Equal(t, []string{pet + " admitted to kennel " + kennel}, up.Diagnostics(pet),
			"the hook's message, under the pet:\n%s", up)
	}
	assert.Empty(t, up.Diagnostics("stray"), "%s", up)
	assert.Contains(t, up.Stdout, "+ 7 created")

	state := s.Export()
	assert.Equal(t, []string{"north", "south"}, state.OfType(kennelType))
	for pet, kennel := range pets {
		r := state.Get(petType, pet)
		if !assert.NotNil(t, r, "%s is not in the state: %v", pet, state.Names()) {
			continue
		}
		assert.Equal(t, map[string]any{"kennel": kennel}, r.Inputs["keepers"], pet)
		assert.Equal(t, map[string][]string{"BeforeCreate": {kennelAudit}}, r.Hooks, pet)
		assert.True(t, strings.HasSuffix(r.Parent, "::"+kennel), "%s's parent is %s", pet, r.Parent)
	}
	stray := state.Get(petType, "stray")
	require.NotNil(t, stray)
	assert.NotContains(t, stray.Inputs, "keepers", "the kennel changed the user's pet")
	assert.Empty(t, stray.Hooks, "the kennel bound a hook to the user's pet")

	// The engine's account: one hook, registered once for both kennels,
	// called once per pet of a kennel and never about the stray; no
	// transform was ever registered, so nothing else was called.
	assert.Empty(t, log.stackTransforms, "the provider registers no transform")
	require.Len(t, log.hooks, 1, "one hook for every kennel")
	assert.Equal(t, kennelAudit, log.hooks[0].GetName())
	assert.Len(t, log.calls, len(log.callsTo(log.hooks[0].GetCallback().GetToken())), "every call went to the kennel's hook")
	assert.Equal(t, []string{"north-pet-1", "north-pet-2", "south-pet-1"}, hookCallsByName(t, log.calls))

	s.Destroy().MustSucceed(t)
	assert.Empty(t, s.Export().Names(), "the stack is empty")
}

// TestTeamsUnderPulumiUp runs the teams library of examples/component under
// `pulumi up` with 20 teams of two pets each and a pet in no team. Every
// team member gets its team's label and both hooks, the loose pet nothing;
// and the engine's log shows one stack transform for the 40 bindings,
// called at most once per resource (binding through a stack transform per
// team cost 664 calls for these 62 resources).
func TestTeamsUnderPulumiUp(t *testing.T) {
	t.Parallel()
	env, readLog := withEngineLog(t)
	s := newStack(t, "teams", teamsPkg, env)

	up := s.Up().MustSucceed(t)
	log := readLog()
	state := s.Export()
	require.Len(t, state.OfType(teamType), 20, "%v", state.Names())

	members := 0
	for _, r := range state.Resources {
		if r.Type != petType {
			continue
		}
		name := r.Name()
		if name == "loose" {
			assert.NotContains(t, r.Inputs, "keepers", "the loose pet is in no team")
			assert.Empty(t, r.Hooks, "the loose pet is in no team")
			assert.Empty(t, up.Diagnostics(name))
			continue
		}
		members++
		team := name[:strings.IndexByte(name, '-')]
		keepers, _ := r.Inputs["keepers"].(map[string]any)
		assert.Equal(t, team, keepers["team"], "%s's label", name)
		assert.Equal(t, "lead"+strings.TrimPrefix(team, "team"), keepers["lead"], "%s's label", name)
		assert.Equal(t, map[string][]string{"BeforeCreate": {"teams-naming"}, "AfterCreate": {"teams-audit"}}, r.Hooks, name)
		assert.Equal(t, []string{"owned by team " + team + " (id " + r.ID + ")"}, up.Diagnostics(name), "%s", name)
	}
	assert.Equal(t, 40, members)

	require.Len(t, log.stackTransforms, 1, "one stack transform for every binding")
	transformCalls := len(log.callsTo(log.stackTransforms[0].GetToken()))
	hookCalls := 0
	for _, h := range log.hooks {
		hookCalls += len(log.callsTo(h.GetCallback().GetToken()))
	}
	t.Logf("20 teams: %d resources, %d transform calls, %d hook calls, %d stack transforms registered",
		len(state.Resources), transformCalls, hookCalls, len(log.stackTransforms))
	assert.LessOrEqual(t, transformCalls, len(state.Resources), "more than one transform call per resource")
	assert.GreaterOrEqual(t, transformCalls, members+1, "every member and the loose pet pass through the transform")
	assert.Equal(t, 2*members, hookCalls, "two hooks per member")
	assert.Len(t, log.hooks, 2, "the teams share their two hooks")
}
