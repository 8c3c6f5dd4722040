package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/examples/component/teams"
)

// TestComponentOnTheSimulator runs the program the way `go run` does with no
// engine around. simulate itself fails when a hook did not fire for a team
// member or fired for a resource in no team, or a label is wrong.
func TestComponentOnTheSimulator(t *testing.T) {
	var first bytes.Buffer
	if err := simulate(t.Context(), &first); err != nil {
		t.Fatalf("simulate: %v\n%s", err, first.String())
	}
	out := first.String()
	for _, want := range []string{
		`loose-pet     in no team     no label                        no hook`,
		`payments-pet  team payments  keepers team=payments lead=ana  before_create "teams-naming" ok, after_create "teams-audit" ok`,
		`scratch       warning  name "scratch" does not start with "search-", the name of its team`,
		"component: ok (8 resources, 6 hook calls)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("output:\n%s", out)
	}

	var second bytes.Buffer
	if err := simulate(t.Context(), &second); err != nil {
		t.Fatalf("second run: %v\n%s", err, second.String())
	}
	if second.String() != out {
		t.Errorf("the output differs between runs:\nfirst:\n%s\nsecond:\n%s", out, second.String())
	}
}

// manyTeams is a program with n teams of two resources each, created by the
// program under the team.
func manyTeams(n int) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		for i := range n {
			name := fmt.Sprintf("team%d", i)
			team, err := teams.NewTeam(ctx, name, &teams.TeamArgs{Lead: "lead"})
			if err != nil {
				return err
			}
			for _, member := range []string{name + "-pet", name + "-cat"} {
				var pet pulumi.CustomResourceState
				if err := ctx.RegisterResource(petType, member, pulumi.Map{"length": pulumi.Int(2)}, &pet, pulumi.Parent(team)); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// The engine calls the library's transforms once per resource registered
// after the first team's bindings, however many teams bind how many hooks
// and transforms: the calls grow with the resources, not with resources
// times teams. (Whether the first team itself is asked depends on whether
// its registration, which the SDK sends on a goroutine of its own, reaches
// the engine before the shared transform's.) Each team binds one transform
// and one hook binding; each member gets both hooks and its label.
func TestTransformCallsGrowLinearly(t *testing.T) {
	for _, n := range []int{1, 5, 20, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			eng := enginetest.New(t, enginetest.WithProject("component"), enginetest.WithStack("dev"))
			res := eng.Run(t, func() error { return pulumi.RunErr(manyTeams(n)) })
			if res.ProgramErr != nil || res.Err != nil {
				t.Fatalf("program: %v, deployment: %v\n%s", res.ProgramErr, res.Err, eng.Trace())
			}
			calls := 0
			for _, ev := range eng.Events(enginetest.KindCallback) {
				if ev.Callback == "resource-transform" {
					calls++
				}
			}
			hookCalls := len(eng.Events(enginetest.KindHook))
			resources := len(res.State.Resources)
			t.Logf("%d teams: %d resources, %d transform calls, %d hook calls, %d stack transforms registered",
				n, resources, calls, hookCalls, len(eng.Events("RegisterStackTransform")))
			if calls > resources {
				t.Errorf("%d transform calls for %d resources: more than one per resource", calls, resources)
			}
			if want := 2 * n; calls < want {
				t.Errorf("%d transform calls, fewer than the %d members", calls, want)
			}
			if want := 2 * 2 * n; hookCalls != want {
				t.Errorf("%d hook calls, want %d (two per member)", hookCalls, want)
			}
			if got := len(eng.Events("RegisterStackTransform")); got != 1 {
				t.Errorf("%d stack transforms registered, want 1", got)
			}
			for _, r := range res.State.Resources {
				if r.Type == petType && r.Inputs.GetFields()["keepers"].GetStructValue().GetFields()["team"].GetStringValue() != enginetest.URNName(r.Parent) {
					t.Errorf("%s is not labelled with its team: %v", r.Name, r.Inputs.GetFields()["keepers"])
				}
			}
		})
	}
}
