package integration_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/langhost/callbacks/integration/clitest"
)

// builds holds the programs and the provider, built once for all tests.
var builds clitest.Builds

func TestMain(m *testing.M) {
	code := m.Run()
	if err := builds.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "removing the built binaries:", err)
	}
	os.Exit(code)
}

// The stand-in provider and the type tokens it serves.
const (
	providerPkg = "github.com/langhost/callbacks/integration/providers/random"
	petType     = "random:index/randomPet:RandomPet"
	stringType  = "random:index/randomString:RandomString"
)

// newStack builds the program in pkg and the stand-in random provider, and
// returns a new stack of project name that runs them, with env added to
// every command's environment.
func newStack(t *testing.T, name, pkg string, env ...string) *clitest.Stack {
	t.Helper()
	clitest.RequireCLI(t)
	return clitest.NewStack(t, clitest.Project{
		Name:      name,
		Program:   builds.Program(t, pkg),
		Providers: map[string]string{"random": builds.Provider(t, providerPkg, "random")},
		Env:       env,
	})
}
