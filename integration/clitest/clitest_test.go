package clitest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// destroyOutput is what `pulumi destroy --run-program` printed for a stack
// whose pet has delete hooks, with a failure under the stack added: two
// passes, each with its Diagnostics section, blank lines between the
// resources of a section, and a message of two lines.
const destroyOutput = `Previewing destroy (dev):

 -  random:index:RandomPet pet delete 
 -  random:index:RandomPet pet delete before-delete: id "gentle-gecko"
    pulumi:pulumi:Stack hooks-dev  
Diagnostics:
  random:index:RandomPet (pet):
    before-delete: id "gentle-gecko"

Resources:
    - 2 to delete

Destroying (dev):

 -  random:index:RandomPet pet deleting (0s) before-delete: id "gentle-gecko"
Diagnostics:
  pulumi:pulumi:Stack (hooks-dev):
    error: an unhandled error occurred: program failed:
    waiting for RPCs: done

  random:index:RandomPet (pet):
    before-delete: id "gentle-gecko"
    after-delete: id "gentle-gecko"

  random:index:RandomPet (petunia):
    not the pet

Resources:
    - 2 deleted

Duration: 1s
`

func TestDiagnostics(t *testing.T) {
	r := &Result{Stdout: destroyOutput}
	assert.Equal(t, []string{
		`before-delete: id "gentle-gecko"`,
		`before-delete: id "gentle-gecko"`,
		`after-delete: id "gentle-gecko"`,
	}, r.Diagnostics("pet"), "both sections, and nothing from the progress lines")
	assert.Equal(t, []string{
		"error: an unhandled error occurred: program failed:",
		"waiting for RPCs: done",
	}, r.Diagnostics("hooks-dev"))
	assert.Empty(t, r.Diagnostics("dog"))
	assert.Empty(t, (&Result{Stderr: destroyOutput}).Diagnostics("pet"), "only stdout has the section")
}

func TestDeployment(t *testing.T) {
	const export = `{"resources": [
		{"urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "type": "pulumi:pulumi:Stack"},
		{"urn": "urn:pulumi:dev::p::random:index/randomPet:RandomPet::b", "type": "random:index/randomPet:RandomPet", "custom": true, "id": "x",
		 "inputs": {"length": 2}, "resourceHooks": {"BeforeCreate": ["audit"]}},
		{"urn": "urn:pulumi:dev::p::random:index/randomPet:RandomPet::a", "type": "random:index/randomPet:RandomPet"}
	]}`
	var d Deployment
	require.NoError(t, json.Unmarshal([]byte(export), &d))
	pet := d.Get("random:index/randomPet:RandomPet", "b")
	require.NotNil(t, pet)
	assert.Equal(t, "b", pet.Name())
	assert.Equal(t, "x", pet.ID)
	assert.Equal(t, map[string]any{"length": float64(2)}, pet.Inputs)
	assert.Equal(t, map[string][]string{"BeforeCreate": {"audit"}}, pet.Hooks)
	assert.Nil(t, d.Get("random:index/randomPet:RandomPet", "c"))
	assert.Equal(t, []string{"a", "b"}, d.OfType("random:index/randomPet:RandomPet"))
	assert.Equal(t, []string{"pulumi:pulumi:Stack::p-dev", "random:index/randomPet:RandomPet::b", "random:index/randomPet:RandomPet::a"}, d.Names())
}

func TestParseVersion(t *testing.T) {
	for out, want := range map[string]string{"v3.274.1\n": "3.274.1", "3.260.0\n": "3.260.0"} {
		got, err := parseVersion(out)
		require.NoError(t, err, "%q", out)
		assert.Equal(t, want, got, "%q", out)
	}
	for _, out := range []string{"", "\n", "warning: something\nv3.274.1\n", "dev"} {
		_, err := parseVersion(out)
		assert.Error(t, err, "%q", out)
	}
}
