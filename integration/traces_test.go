package integration_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallbacksInTheEnginesTrace runs programs/traced under
// `pulumi up --otel-traces file://…` with a provider that throttles the
// first create, and reads the trace the CLI writes: every call the engine
// makes to the program's callback server (its Callbacks/Invoke client
// span) has the program's server span under it, which says which callback
// ran for which resource and how it ended; the hook that failed is an
// error although the engine got an answer; the program's own calls to the
// engine (registrations, the hook's report) are client spans in the same
// trace, each continued by the engine's server span. Pulumi 3.260.0 and
// 3.274.1 both export such a trace. A CLI without --otel-traces gets the
// same deployment without the flag, and the test says so.
func TestCallbacksInTheEnginesTrace(t *testing.T) {
	t.Parallel()
	s := newStack(t, "traced", "github.com/langhost/callbacks/integration/programs/traced", throttle)
	if help := s.Run("up", "--help"); !strings.Contains(help.Stdout, "--otel-traces") {
		t.Logf("this CLI has no --otel-traces: only the deployment is checked, not its trace\n%s", help)
		up := s.Up().MustSucceed(t)
		assert.Equal(t, []string{"auditing pet"}, up.Diagnostics("pet")[:1], "%s", up)
		return
	}
	file := filepath.Join(t.TempDir(), "trace.json")
	up := s.Up("--otel-traces", "file://"+file).MustSucceed(t)
	assert.Contains(t, up.Stdout, "auditing pet")
	spans := readTrace(t, file)

	byID := map[string]*span{}
	traces := map[string]bool{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
		traces[sp.TraceID] = true
	}
	assert.Len(t, traces, 1, "one trace for the whole deployment")
	children := func(of *span) []*span {
		var out []*span
		for _, sp := range spans {
			if sp.ParentSpanID == of.SpanID {
				out = append(out, sp)
			}
		}
		return out
	}

	// The engine's calls, each with the program's span under it.
	byKind := map[string][]*span{}
	calls := 0
	for _, engine := range spans {
		if engine.Name != "pulumirpc.Callbacks/Invoke" || engine.Kind != kindClient || engine.service != "pulumi-cli" {
			continue
		}
		calls++
		under := children(engine)
		require.Len(t, under, 1, "the engine's call %s has one span of the program's under it", engine.SpanID)
		cb := under[0]
		assert.Equal(t, "pulumirpc.Callbacks/Invoke", cb.Name)
		assert.Equal(t, kindServer, cb.Kind)
		assert.NotEqual(t, "pulumi-cli", cb.service)
		kind := cb.attr("pulumi.callback.kind")
		byKind[kind] = append(byKind[kind], cb)
		// The stack resource, registered as the program starts, may or
		// may not pass through the stack transform.
		if cb.attr("pulumi.resource.type") != "pulumi:pulumi:Stack" || kind != "resource_transform" {
			assert.Equal(t, "urn:pulumi:dev::traced::random:index/randomPet:RandomPet::pet", cb.attr("pulumi.resource.urn"), "%s", kind)
			assert.Equal(t, "random:index/randomPet:RandomPet", cb.attr("pulumi.resource.type"))
		}
		assert.Equal(t, "false", cb.attr("pulumi.dry_run"))
		assert.Equal(t, "OK", cb.attr("rpc.response.status_code"))
	}
	require.NotZero(t, calls, "no Callbacks/Invoke span of the engine's among %d spans", len(spans))

	// Every call is checked: the stack transform may see the stack too.
	require.NotEmpty(t, byKind["resource_transform"])
	for _, tag := range byKind["resource_transform"] {
		assert.Equal(t, "tag", tag.attr("pulumi.callback.name"))
		assert.Regexp(t, `programs/traced/main\.go:\d+$`, tag.attr("pulumi.callback.site"), "the line that registered it")
		assert.Equal(t, statusUnset, tag.Status.Code)
	}
	require.NotEmpty(t, byKind["resource_hook"])
	audits := map[string]bool{}
	for _, audit := range byKind["resource_hook"] {
		audits[audit.SpanID] = true
		assert.Equal(t, "audit", audit.attr("pulumi.callback.name"))
		assert.Equal(t, statusError, audit.Status.Code, "a hook that fails answers the engine, and its span is an error")
		assert.Equal(t, "audit trail unavailable", audit.Status.Message)
		assert.Equal(t, "response_error", audit.attr("error.type"))
	}
	require.NotEmpty(t, byKind["error_hook"])
	var attempts []string
	for _, retry := range byKind["error_hook"] {
		assert.Equal(t, "retry", retry.attr("pulumi.callback.name"))
		attempts = append(attempts, retry.attr("pulumi.callback.attempt"))
	}
	assert.Contains(t, attempts, "1", "the first failure's attempt")

	// The program's own calls: client spans the engine continues.
	for _, name := range []string{"pulumirpc.ResourceMonitor/GetDeploymentInfo", "pulumirpc.ResourceMonitor/RegisterStackTransform",
		"pulumirpc.ResourceMonitor/RegisterResourceHook", "pulumirpc.ResourceMonitor/RegisterErrorHook", "pulumirpc.Engine/Log"} {
		found := false
		for _, c := range spans {
			if c.Name != name || c.Kind != kindClient || c.service == "pulumi-cli" {
				continue
			}
			found = true
			continued := false
			for _, sp := range children(c) {
				continued = continued || sp.Kind == kindServer && sp.service == "pulumi-cli"
			}
			assert.True(t, continued, "the engine's span for the program's %s is under it", name)
			if name == "pulumirpc.Engine/Log" {
				assert.True(t, audits[c.ParentSpanID], "the hook's report is under the hook's span")
			}
		}
		assert.True(t, found, "no client span of the program's for %s", name)
	}
}

// The OTLP/JSON span kinds and status codes.
const (
	kindServer  = 2
	kindClient  = 3
	statusUnset = 0
	statusError = 2
)

// span is an OTLP/JSON span, as the CLI writes one.
type span struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Attributes   []struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	} `json:"attributes"`
	Status struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`

	service string // the service.name of its resource
}

// attr returns the value of the attribute key as text, "" if absent.
func (s *span) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			for _, v := range a.Value {
				switch v := v.(type) {
				case string:
					return v
				case bool:
					if v {
						return "true"
					}
					return "false"
				}
				b, _ := json.Marshal(v)
				return strings.Trim(string(b), `"`)
			}
		}
	}
	return ""
}

// readTrace reads every span of a trace file: one OTLP/JSON export request
// per line.
func readTrace(t *testing.T, file string) []*span {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err, "the CLI wrote no trace")
	defer f.Close()
	var spans []*span
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string `json:"key"`
						Value struct {
							StringValue string `json:"stringValue"`
						} `json:"value"`
					} `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []*span `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &req))
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					service = a.Value.StringValue
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					sp.service = service
					spans = append(spans, sp)
				}
			}
		}
	}
	require.NoError(t, sc.Err())
	return spans
}
