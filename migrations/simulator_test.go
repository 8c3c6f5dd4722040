package migrations_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/enginetest"
)

// engineWords is, by rule, what the engine (3.274.1) says when a result
// breaks it, after "state migration for URN". Some rules the library names
// apart are one check of the engine's: the words are then the same.
var engineWords = map[string]string{
	"successors-without-state":     "returned successors without returning a new state",
	"not-checkpoint-state":         "unmarshaling returned state",
	"invalid-urn":                  `returned a resource with invalid URN "policy"`,
	"aliases":                      "returned resource " + urnChild + " with aliases",
	"duplicate":                    "returned duplicate resource " + urnChild,
	"type-mismatch":                "returned resource " + urnOld + " with type my:index:BucketV2, which does not match its URN type my:index:Bucket",
	"empty-successor":              `returned an empty successor mapping "` + urnChild + `" -> ""`,
	"successor-not-in-prior-state": "returned successor for resource " + urnOther + ", which is not part of the prior state",
	"returned-and-succeeded":       "resource " + urnChild + " is both returned and assigned successor " + urnOld,
	"successor-not-returned":       "successor " + urnOther + " for resource " + urnChild + " is not present in the returned state",
	"unaccounted":                  "did not account for resource " + urnChild,
	"custom-changed":               "resource " + urnChild + " changed between custom and component state without changing URN",
	"id-changed":                   "resource " + urnOld + ` changed ID from "logs-1" to "changed-id" without changing URN`,
	"provider-state-removed":       "removes or renames provider state " + urnProv,
	"provider-state-changed":       "changes provider state " + urnProv,
	"provider-state-introduced":    "introduces provider state " + urnProv2,
	"custom-to-component":          "maps managed custom resource " + urnOld + " to component successor " + urnNew,
	"physical-id":                  "changes the physical ID of managed custom resource " + urnOld,
	"provider-reference":           "changes the provider reference of managed custom resource " + urnOld,
	"extension-reference":          "changes the extension reference of managed custom resource " + urnOld,
	"external":                     "changes ownership of custom resource",
	"pending-replacement":          "PendingReplacement",
	"taint":                        "Taint",
	"import":                       `introduces custom resource urn:pulumi:dev::proj::my:index:Bucket$my:index:Policy::new with ID "new-id" without a managed custom predecessor`,
	"protect":                      "changes Protect for resource " + urnOld,
	"retain-on-delete":             "changes RetainOnDelete for resource " + urnChild,
	"root-missing":                 "the migration result must include the state for " + urnOld,
	"two-roots":                    "the migration result includes both the new root " + urnNew + " and its prior root " + urnOld,
	"other-stack":                  `belongs to stack "prod" and project "proj"`,
	"pending-delete":               "returned resource " + urnChild + " is marked for pending deletion",
	"view":                         "returned resource " + urnChild + " is a view; state migrations do not support views",
	"no-id":                        "returned custom resource " + urnChild + " has no ID",
	"invalid-parent":               `has invalid parent URN "nope"`,
	"qualified-type":               "resource urn:pulumi:dev::proj::my:index:Thing::t has parent " + urnOld + " but qualified type my:index:Thing",
	"root-parent":                  "the parent of " + urnOld + " may not be changed by a migration",
	"outside-subtree":              "is parented to " + urnOther + " which is not part of the migration result",
}

// TestSimulatorRefusesEveryBrokenResult sends each result of
// brokenResults, which the library refuses before sending, to the
// simulator of package enginetest instead, through a migration registered
// with callbacks.Raw, which skips the library's check: the simulator
// refuses every one as the engine does, with the engine's words under the
// resource, and the deployment fails.
func TestSimulatorRefusesEveryBrokenResult(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, tt := range brokenResults() {
		covered[tt.rule] = true
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			urn, oldJSON, res := tt.build(t)
			var old []map[string]any
			require.NoError(t, json.Unmarshal(oldJSON, &old))
			eng := enginetest.New(t, enginetest.WithProject("proj"), enginetest.WithStack("dev"),
				enginetest.WithState(priorState(t, old)))

			srv, err := callbacks.Listen()
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })
			payload, err := proto.Marshal(&pulumirpc.StateMigrationResponse{NewState: res.NewState, Successors: res.Successors})
			require.NoError(t, err)
			cb, err := srv.Register(t.Context(), callbacks.Raw(func(context.Context, []byte) ([]byte, error) {
				return payload, nil
			}))
			require.NoError(t, err)

			conn, err := grpc.NewClient(eng.MonitorAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			mon := pulumirpc.NewResourceMonitorClient(conn)
			req := &pulumirpc.RegisterResourceRequest{
				Type: enginetest.QualifiedType(urn), Name: enginetest.URNName(urn), Custom: true,
				Provider: provRef, StateMigrations: []*pulumirpc.Callback{cb},
			}
			if urn != urnOld {
				req.Aliases = []*pulumirpc.Alias{{Alias: &pulumirpc.Alias_Urn{Urn: urnOld}}}
			}
			registered := make(chan error, 1)
			go func() {
				_, err := mon.RegisterResource(t.Context(), req)
				registered <- err
			}()
			// A refused result ends the deployment, and the registration
			// with it; an accepted one lets the program go on to its end.
			if err := <-registered; err == nil {
				_, _ = mon.SignalAndWaitForShutdown(t.Context(), &emptypb.Empty{})
			}
			result, err := eng.Wait(t.Context())
			require.NoError(t, err)

			assert.True(t, result.Failed, "the simulator accepted a result that breaks %s", tt.rule)
			var said []string
			for _, d := range result.Diagnostics {
				if d.URN == urn && d.Severity == "error" {
					said = append(said, d.Message)
				}
			}
			words := engineWords[tt.rule]
			require.NotEmpty(t, words, "no engine words for %s", tt.rule)
			found := false
			for _, msg := range said {
				found = found || strings.Contains(msg, "state migration") && strings.Contains(msg, urn) && strings.Contains(msg, words)
			}
			assert.True(t, found, "the errors under %s are %q, want the engine's words for %s: %q", urn, said, tt.rule, words)
		})
	}
	for rule := range engineWords {
		assert.True(t, covered[rule], "no broken result for %s", rule)
	}
}

// priorState is the stored state a migration's old state comes from: the
// resources of old and the default provider they refer to.
func priorState(t *testing.T, old []map[string]any) *enginetest.State {
	t.Helper()
	provURN, provID := strings.TrimSuffix(provRef, "::p1"), "p1"
	s := &enginetest.State{Resources: []*enginetest.ResourceState{{
		URN: provURN, Type: enginetest.QualifiedType(provURN), Name: enginetest.URNName(provURN), Custom: true, ID: provID,
	}}}
	for _, r := range old {
		str := func(k string) string { v, _ := r[k].(string); return v }
		props := func(k string) *structpb.Struct {
			m, ok := r[k].(map[string]any)
			if !ok {
				return nil
			}
			p, err := structpb.NewStruct(m)
			require.NoError(t, err)
			return p
		}
		custom, _ := r["custom"].(bool)
		s.Resources = append(s.Resources, &enginetest.ResourceState{
			URN: str("urn"), Type: str("type"), Name: enginetest.URNName(str("urn")), Custom: custom, ID: str("id"),
			Parent: str("parent"), Provider: str("provider"), Inputs: props("inputs"), Outputs: props("outputs"),
		})
	}
	return s
}
