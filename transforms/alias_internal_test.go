package transforms

import (
	"reflect"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func withUnknown[M proto.Message](m M, n protowire.Number) M {
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), 1)))
	return m
}

// Aliases and timeouts come back from a round trip as they went in, even
// where the Go fields cannot tell the encodings apart, and a clone shares no
// unknown fields with the original.
func TestRoundTrip(t *testing.T) {
	spec := func(s *pulumirpc.Alias_Spec) *pulumirpc.Alias {
		return &pulumirpc.Alias{Alias: &pulumirpc.Alias_Spec_{Spec: s}}
	}
	aliases := []*pulumirpc.Alias{
		{},
		{Alias: &pulumirpc.Alias_Urn{}},
		{Alias: &pulumirpc.Alias_Urn{Urn: "urn:pulumi:dev::p::t::a"}},
		spec(&pulumirpc.Alias_Spec{Name: "n"}),
		spec(&pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_ParentUrn{}}),
		spec(&pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: "urn:pulumi:dev::p::t::parent"}}),
		spec(&pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_NoParent{}}),
		spec(&pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true}}),
		withUnknown(spec(withUnknown(&pulumirpc.Alias_Spec{Project: "p"}, 90)), 91),
	}
	timeouts := withUnknown(&pulumirpc.RegisterResourceRequest_CustomTimeouts{Create: "1m", Read: "2m"}, 92)

	back := aliasesToProto(aliasesFromProto(aliases))
	if len(back) != len(aliases) {
		t.Fatalf("got %d aliases, want %d", len(back), len(aliases))
	}
	for i := range aliases {
		if !proto.Equal(aliases[i], back[i]) {
			t.Errorf("alias %d: got %v, want %v", i, back[i], aliases[i])
		}
	}
	if got := timeoutsToProto(timeoutsFromProto(timeouts)); !proto.Equal(timeouts, got) {
		t.Errorf("timeouts: got %v, want %v", got, timeouts)
	}
}

// Decoded aliases equal hand-built ones wherever the Go fields say all there
// is to say.
func TestDecodedEqualsHandBuilt(t *testing.T) {
	got := aliasesFromProto([]*pulumirpc.Alias{
		{Alias: &pulumirpc.Alias_Urn{Urn: "u"}},
		{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{Name: "n", Parent: &pulumirpc.Alias_Spec_ParentUrn{ParentUrn: "p"}}}},
		{Alias: &pulumirpc.Alias_Spec_{Spec: &pulumirpc.Alias_Spec{Parent: &pulumirpc.Alias_Spec_NoParent{NoParent: true}}}},
	})
	want := []Alias{{URN: "u"}, {Spec: &AliasSpec{Name: "n", ParentURN: "p"}}, {Spec: &AliasSpec{NoParent: true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if aliasesFromProto(nil) != nil || aliasesToProto(nil) != nil || timeoutsFromProto(nil) != nil || timeoutsToProto(nil) != nil {
		t.Error("nothing must convert to nil")
	}
}
