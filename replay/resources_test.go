package replay

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func TestRenamedResourcesAreReported(t *testing.T) {
	fixed := func() string { return "fixed" }
	log := recordLog(t, testInfo, stamping{stamp: fixed, team: "infra", names: []string{"pet", "bad"}}.program(), stampScript("pet", "bad"))
	renamed := stamping{stamp: fixed, team: "infra", names: []string{"pet", "good"}}.program()
	summary := "the resources differ from the recording: the program registers 1 resource(s) the recording lacks and no longer registers 1 it recorded"
	details := []string{summary, "\n\tnew:  " + string(urnOf("good")), "\n\tgone: " + string(urnOf("bad"))}

	t.Run("the same resources", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, stamping{stamp: fixed, team: "infra", names: []string{"pet", "bad"}}.program(), RequireSameResources())
		if len(ft.errors) > 0 || strings.Contains(joined(ft.logs), "resources") {
			t.Fatalf("the same resources are reported:\n%s", ft.report())
		}
	})
	t.Run("logged by default", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, renamed)
		if len(ft.errors) > 0 {
			t.Fatalf("a rename fails the test without RequireSameResources:\n%s", ft.report())
		}
		logs := joined(ft.logs)
		for _, want := range append(details, "replay.RequireSameResources() makes this fail the test") {
			if !strings.Contains(logs, want) {
				t.Errorf("no log says %q:\n%s", want, ft.report())
			}
		}
	})
	t.Run("failing with RequireSameResources", func(t *testing.T) {
		ft := &fakeT{TB: t}
		Run(ft, log, renamed, RequireSameResources())
		if len(ft.errors) != 1 {
			t.Fatalf("want the rename to fail the test once:\n%s", ft.report())
		}
		for _, want := range details {
			if !strings.Contains(ft.errors[0], want) {
				t.Errorf("the error does not say %q:\n%s", want, ft.report())
			}
		}
	})
}

// TestRecordedResources reads the resources of a run from the monitor's
// entries: the stack and a pet with an answer and without, a resource
// read, a remote component, and nothing its provider registered under it.
func TestRecordedResources(t *testing.T) {
	vpc := "urn:pulumi:dev::proj::my:index:Vpc::vpc"
	subnet := "urn:pulumi:dev::proj::my:index:Vpc$aws:ec2:Subnet::sub"
	lines := []string{
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","progress":"request_started","request":{"type":"pulumi:pulumi:Stack","name":"proj-dev"}}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"pulumi:pulumi:Stack","name":"proj-dev"},"response":{"urn":"` + stackURN + `"}}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResourceOutputs","request":{"urn":"` + stackURN + `"}}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResourceHook","request":{"name":"audit"}}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","progress":"request_started","request":{"type":"my:index:Vpc","name":"vpc","parent":"` + stackURN + `","remote":true}}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"aws:ec2:Subnet","name":"sub","parent":"` + vpc + `","custom":true},"response":{"urn":"` + subnet + `"}}`,
		`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"aws:ec2:Route","name":"r","parent":"` + subnet + `"},"response":{"urn":"urn:pulumi:dev::proj::my:index:Vpc$aws:ec2:Subnet$aws:ec2:Route::r"}}`,
		`{"progress":"request_started","request":{"custom":true,"name":"pet","type":"` + petType + `"},"method":"/pulumirpc.ResourceMonitor/RegisterResource"}`,
		`{"method":"/pulumirpc.ResourceMonitor/ReadResource","request":{"type":"` + petType + `","name":"old","parent":"` + stackURN + `"},"response":{"urn":"` + string(urnOf("old")) + `"}}`,
		`{"method":"/pulumirpc.Callbacks/Invoke","request":{"token":"t","request":"` + `"}}`,
		`{not json, "method":"/pulumirpc.ResourceMonitor/RegisterResource"`,
	}
	rd := newReader(strings.NewReader(strings.Join(lines, "\n")))
	rd.resources = true
	var run *logRun
	rd.run(func(h *held) bool {
		if h.last {
			run = h.run
		}
		return true
	})
	got := run.recordedResources()
	want := []resource.URN{stackURN, resource.URN(vpc), urnOf("pet"), urnOf("old")}
	if !slices.Equal(got, want) {
		t.Errorf("recorded resources:\n got %v\nwant %v", got, want)
	}
}

func TestResourceReport(t *testing.T) {
	var recorded, now []resource.URN
	for i := range 30 {
		recorded = append(recorded, urnOf(fmt.Sprint("old-", i)))
		now = append(now, urnOf(fmt.Sprint("new-", i)))
	}
	recorded, now = append(recorded, urnOf("kept")), append(now, urnOf("kept"))
	added, gone := resourceChanges(recorded, now)
	if len(added) != 30 || len(gone) != 30 || slices.Contains(added, urnOf("kept")) || slices.Contains(gone, urnOf("kept")) {
		t.Fatalf("added %v, gone %v", added, gone)
	}
	msg := resourceReport(added, gone)
	for _, want := range []string{"registers 30 resource(s) the recording lacks and no longer registers 30", "new:  " + string(urnOf("new-19")),
		"new:  and 10 more", "gone: " + string(urnOf("old-0")), "gone: and 10 more"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, string(urnOf("new-20"))) {
		t.Errorf("the report lists more than %d URNs each way:\n%s", maxListed, msg)
	}
	if resourceReport(nil, nil) != "" {
		t.Errorf("no change gives a report")
	}
}

// TestResourceChangesListsEachOnce: a resource the program registers and
// then reads (two events, one URN) is new once.
func TestResourceChangesListsEachOnce(t *testing.T) {
	added, gone := resourceChanges([]resource.URN{urnOf("a")}, []resource.URN{urnOf("b"), urnOf("a"), urnOf("b")})
	if !slices.Equal(added, []resource.URN{urnOf("b")}) || len(gone) != 0 {
		t.Errorf("added %v, gone %v; want b added once", added, gone)
	}
}
