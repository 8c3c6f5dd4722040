package transforms

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// childURN takes the parent's parts as the URN's own methods do.
func TestChildURNAsTheSDK(t *testing.T) {
	t.Parallel()
	for _, parent := range []string{
		"", "urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev", "urn:pulumi:dev::proj::my:mod:Comp::parent",
		"urn:pulumi:dev::proj::a:b:C$d:e:F::name::with::colons", "urn:pulumi:s:::p::t::n", "urn:pulumi:::::::",
		"urn:pulumi:dev::proj::t", "urn:other:dev::proj::t::n", "urn:pulumi:a::::b::c",
	} {
		checkChildURN(t, parent, "pkg:index:Thing", "child")
	}
}

func checkChildURN(t *testing.T, parent, typ, name string) {
	t.Helper()
	p := resource.URN(parent)
	want := resource.URN("")
	if p != "" && p.IsValid() {
		want = resource.NewURN(p.Stack(), p.Project(), p.QualifiedType(), tokens.Type(typ), name)
	}
	if got := childURN(p, typ, name); got != want {
		t.Fatalf("childURN(%q, %q, %q) = %q, want %q", parent, typ, name, got, want)
	}
}

// FuzzChildURN holds childURN to the URN's own methods on arbitrary parents.
func FuzzChildURN(f *testing.F) {
	f.Add("urn:pulumi:dev::proj::my:mod:Comp::parent", "pkg:index:Thing", "child")
	f.Add("urn:pulumi:s:::p::t::n", "t", "n")
	f.Fuzz(func(t *testing.T, parent, typ, name string) {
		checkChildURN(t, parent, typ, name)
	})
}
