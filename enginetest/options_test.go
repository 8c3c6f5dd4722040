package enginetest

import (
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/types/known/emptypb"
)

// WithParallel and WithOrganization reach the program both ways a language
// host passes them: the environment and GetDeploymentInfo.
func TestParallelAndOrganizationReachTheProgram(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts     []Option
		parallel int32
		org      string
	}{
		{nil, 16, ""},
		{[]Option{WithParallel(3), WithOrganization("acme")}, 3, "acme"},
	} {
		e := startEngine(t, tc.opts...)
		p := newProgram(t, e)
		info, err := p.mon.GetDeploymentInfo(p.ctx(), &emptypb.Empty{})
		if err != nil {
			t.Fatalf("GetDeploymentInfo: %v", err)
		}
		if info.GetParallel() != tc.parallel || info.GetOrganization() != tc.org {
			t.Errorf("GetDeploymentInfo: parallel %d, organization %q; want %d, %q",
				info.GetParallel(), info.GetOrganization(), tc.parallel, tc.org)
		}
		env := e.Env()
		if want := "PULUMI_PARALLEL=" + strconv.Itoa(int(tc.parallel)); !slices.Contains(env, want) {
			t.Errorf("Env() lacks %s: %v", want, env)
		}
		hasOrg := slices.ContainsFunc(env, func(v string) bool { return v == "PULUMI_ORGANIZATION="+tc.org })
		if (tc.org != "") != hasOrg {
			t.Errorf("Env() organization: got %v, want %q: %v", hasOrg, tc.org, env)
		}
	}
}
