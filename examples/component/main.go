// Command component is a Pulumi Go program that uses a component library,
// teams, which binds a transform and hooks to resources it does not
// construct: the program creates its resources with a Team as their parent,
// and the library's transform and hooks reach each of them.
//
// Run by `pulumi up`, it deploys two teams with pulumi-random resources in
// them and one resource outside any team. Run with `go run` and no engine
// around (PULUMI_MONITOR unset), it deploys the same program against the
// simulator from the enginetest package and prints which hooks fired for
// which resource. It exits non-zero if a hook did not fire where it should,
// or fired where it should not.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/enginetest"
	"github.com/langhost/callbacks/examples/component/teams"
	"github.com/langhost/callbacks/monitor"
)

// The pulumi-random types the program creates, declared by type token so the
// program needs no Go dependency on the provider's SDK.
const (
	petType    = "random:index/randomPet:RandomPet"
	stringType = "random:index/randomString:RandomString"
)

func main() {
	if os.Getenv(monitor.EnvMonitor) != "" {
		pulumi.Run(deploy) // under `pulumi up`
		return
	}
	if err := simulate(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "component:", err)
		os.Exit(1)
	}
}

// deploy is the program's body, under `pulumi up` and on the simulator. It
// creates every resource itself; the teams it puts them in decide what the
// library adds to them. It never mentions a monitor or a hook.
func deploy(ctx *pulumi.Context) error {
	payments, err := teams.NewTeam(ctx, "payments", &teams.TeamArgs{Lead: "ana"})
	if err != nil {
		return err
	}
	search, err := teams.NewTeam(ctx, "search", &teams.TeamArgs{Lead: "bo"})
	if err != nil {
		return err
	}
	resources := []struct {
		typ, name string
		inputs    pulumi.Map
		team      *teams.Team
	}{
		{petType, "payments-pet", pulumi.Map{"length": pulumi.Int(2)}, payments},
		{stringType, "search-token", pulumi.Map{"length": pulumi.Int(16), "special": pulumi.Bool(false)}, search},
		{stringType, "scratch", pulumi.Map{"length": pulumi.Int(12), "special": pulumi.Bool(false)}, search},
		{petType, "loose-pet", pulumi.Map{"length": pulumi.Int(3)}, nil},
	}
	for _, r := range resources {
		var opts []pulumi.ResourceOption
		if r.team != nil {
			opts = append(opts, pulumi.Parent(r.team))
		}
		var res pulumi.CustomResourceState
		if err := ctx.RegisterResource(r.typ, r.name, r.inputs, &res, opts...); err != nil {
			return err
		}
	}
	return nil
}

// simulate deploys the program against the simulator and prints, for each
// custom resource, the team it is in and the hooks that fired for it.
func simulate(ctx context.Context, w io.Writer) error {
	engine, err := enginetest.Start(enginetest.WithProject("component"), enginetest.WithStack("dev"))
	if err != nil {
		return err
	}
	defer engine.Close()
	fmt.Fprintln(w, "component: no Pulumi engine in the environment (PULUMI_MONITOR is unset), so the program")
	fmt.Fprintf(w, "deploys project %q, stack %q on the simulator.\n", engine.Project(), engine.Stack())

	res, err := engine.RunFunc(ctx, func() error { return pulumi.RunErr(deploy) })
	if err != nil {
		return err
	}
	progErr := res.ProgramErr

	// What fired, per resource, in the order the engine called it.
	fired := map[string][]string{}
	hookCalls := 0
	for _, ev := range engine.Events(enginetest.KindHook) {
		outcome := "ok"
		if ev.Err != "" {
			outcome = "error: " + ev.Err
		}
		fired[ev.URN] = append(fired[ev.URN], fmt.Sprintf("%s %q %s", ev.Point, ev.Name, outcome))
		hookCalls++
	}
	var resources []*enginetest.ResourceState
	for _, r := range res.State.Resources {
		if r.Custom && !strings.HasPrefix(r.Type, "pulumi:providers:") {
			resources = append(resources, r)
		}
	}
	slices.SortFunc(resources, func(a, b *enginetest.ResourceState) int { return strings.Compare(a.Name, b.Name) })

	fmt.Fprintln(w, "\nThe program created these resources; the teams library labelled those in a team and bound hooks to them:")
	var rows [][]string
	for _, r := range resources {
		team := "in no team"
		if enginetest.QualifiedType(r.Parent) == teams.TeamType {
			team = "team " + enginetest.URNName(r.Parent)
		}
		label := "no label"
		if k := r.Inputs.GetFields()["keepers"].GetStructValue().GetFields(); k["team"] != nil {
			label = fmt.Sprintf("keepers team=%s lead=%s", k["team"].GetStringValue(), k["lead"].GetStringValue())
		}
		hooksFired := "no hook"
		if len(fired[r.URN]) > 0 {
			hooksFired = strings.Join(fired[r.URN], ", ")
		}
		rows = append(rows, []string{r.Name, team, label, hooksFired})
	}
	table(w, rows)

	// Resources are created concurrently: sort by resource, keeping the
	// order of each resource's own messages.
	fmt.Fprintln(w, "\nDiagnostics from the hooks, by resource:")
	rows = nil
	for _, d := range res.Diagnostics {
		rows = append(rows, []string{enginetest.URNName(d.URN), d.Severity, d.Message})
	}
	slices.SortStableFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	table(w, rows)

	problems := check(engine, res, fired)
	if progErr != nil {
		problems = append([]string{"the program failed: " + progErr.Error()}, problems...)
	}
	if err := verdict(w, "component", problems); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ncomponent: ok (%d resources, %d hook calls)\n", len(res.State.Resources), hookCalls)
	return nil
}

// check lists what the library was meant to do and did not.
func check(engine *enginetest.Engine, res *enginetest.Result, fired map[string][]string) []string {
	var problems []string
	if res.Err != nil {
		problems = append(problems, "the deployment failed: "+res.Err.Error())
	}
	want := []string{
		fmt.Sprintf("before_create %q ok", teams.NamingHook),
		fmt.Sprintf("after_create %q ok", teams.AuditHook),
	}
	members := map[string]string{"payments-pet": "payments", "search-token": "search", "scratch": "search", "loose-pet": ""}
	leads := map[string]string{"payments": "ana", "search": "bo"}
	for name, team := range members {
		parent := engine.StackURN()
		if team != "" {
			parent = engine.URN(engine.StackURN(), teams.TeamType, team)
		}
		var urn string
		var keepers map[string]string
		for _, r := range res.State.Resources {
			if r.Name == name && r.Parent == parent {
				urn = r.URN
				keepers = map[string]string{}
				for k, v := range r.Inputs.GetFields()["keepers"].GetStructValue().GetFields() {
					keepers[k] = v.GetStringValue()
				}
			}
		}
		switch {
		case urn == "":
			problems = append(problems, fmt.Sprintf("%s is not in the state under %s", name, parent))
		case team == "" && len(fired[urn]) > 0:
			problems = append(problems, fmt.Sprintf("%s is in no team, yet hooks fired for it: %v", name, fired[urn]))
		case team != "" && !slices.Equal(fired[urn], want):
			problems = append(problems, fmt.Sprintf("%s: hooks fired %v, want %v", name, fired[urn], want))
		case team == "" && len(keepers) > 0:
			problems = append(problems, fmt.Sprintf("%s is in no team, yet the library labelled it: %v", name, keepers))
		case team != "" && (keepers["team"] != team || keepers["lead"] != leads[team]):
			problems = append(problems, fmt.Sprintf("%s: keepers %v, want team=%s lead=%s", name, keepers, team, leads[team]))
		}
	}

	// One warning, for the resource whose name does not follow its team's,
	// and one report of ownership per team member.
	var warned []string
	owned := 0
	for _, d := range res.Diagnostics {
		switch {
		case d.FromProgram && d.Severity == "warning":
			warned = append(warned, enginetest.URNName(d.URN))
		case d.FromProgram && d.Severity == "info" && strings.HasPrefix(d.Message, "owned by team "):
			owned++
		}
	}
	if !slices.Equal(warned, []string{"scratch"}) {
		problems = append(problems, fmt.Sprintf("naming warnings for %v, want [scratch]", warned))
	}
	if owned != 3 {
		problems = append(problems, fmt.Sprintf("%d ownership reports, want 3", owned))
	}
	return problems
}
