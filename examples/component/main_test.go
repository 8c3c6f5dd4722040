package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/langhost/callbacks/examples/component/teams"
	"github.com/langhost/callbacks/transforms"
)

// TestComponentOnTheSimulator runs the program the way `go run` does with no
// engine around. simulate itself fails when a hook did not fire for a team
// member or fired for a resource in no team.
func TestComponentOnTheSimulator(t *testing.T) {

	var first bytes.Buffer
	if err := simulate(t.Context(), &first); err != nil {
		t.Fatalf("simulate: %v\n%s", err, first.String())
	}
	out := first.String()
	for _, want := range []string{
		`loose-pet     in no team     no hook`,
		`payments-pet  team payments  before_create "teams-naming" ok, after_create "teams-audit" ok`,
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

func TestChildrenOf(t *testing.T) {
	sel := teams.ChildrenOf("search")
	for _, tc := range []struct {
		parent string
		want   bool
	}{
		{"urn:pulumi:dev::component::teams:index:Team::search", true},
		{"urn:pulumi:dev::component::teams:index:Team::payments", false},
		{"urn:pulumi:dev::component::pulumi:pulumi:Stack::component-dev", false},
		{"", false}, // the stack itself has no parent
	} {
		args := &transforms.Args{Type: stringType, Name: "x", Custom: true, Parent: resource.URN(tc.parent)}
		if got := sel(args); got != tc.want {
			t.Errorf("ChildrenOf(search) with parent %q = %t, want %t", tc.parent, got, tc.want)
		}
	}
}
