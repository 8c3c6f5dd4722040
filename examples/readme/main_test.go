package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/langhost/callbacks/enginetest"
)

const petType = "random:index/randomPet:RandomPet"

// TestBuiltAsTheGoLanguageHostBuildsIt builds the program the way
// pulumi-language-go does (-trimpath -ldflags "-w -s": no file paths, no
// debug information) and runs the binary against the simulator with the
// environment a language host gives it. The provider throttles the first
// create of the pet: the error hook asks for a retry, and the second attempt
// goes through with the tag and the hook's message.
func TestBuiltAsTheGoLanguageHostBuildsIt(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not installed")
	}
	bin := filepath.Join(t.TempDir(), "readme")
	build := exec.Command(goBin, "build", "-trimpath", "-ldflags", "-w -s", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	eng := enginetest.New(t, enginetest.WithProject("readme"), enginetest.WithStack("dev"),
		enginetest.WithProvider(&enginetest.FakeProvider{
			OnCreate: func(_ context.Context, req *enginetest.CreateRequest) (*enginetest.CreateResponse, error) {
				if req.Type == petType && req.Attempt == 1 {
					return nil, errors.New("throttled: slow down")
				}
				return &enginetest.CreateResponse{ID: req.Name + "-id", Outputs: req.Inputs}, nil
			},
		}))
	res := eng.Run(t, func() error {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), eng.Env()...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w\n%s", err, out)
		}
		return nil
	})
	require.NoError(t, res.ProgramErr, eng.Trace())
	require.NoError(t, res.Err, eng.Trace())

	petURN := eng.URN(eng.StackURN(), petType, "pet")
	pet := res.State.Get(petURN)
	require.NotNil(t, pet, "%v", res.State.URNs())
	assert.Equal(t, "infra", pet.Inputs.GetFields()["keepers"].GetStructValue().GetFields()["team"].GetStringValue())

	var audits []string
	for _, ev := range eng.Events(enginetest.KindHook) {
		audits = append(audits, fmt.Sprintf("%s %s %s %s", ev.Point, ev.Name, enginetest.URNName(ev.URN), ev.Detail))
	}
	assert.Equal(t, []string{"before_create audit pet ok"}, audits,
		"the hook runs once, before the first attempt; the retry does not run it again")

	retries := eng.Events(enginetest.KindErrorHook)
	if assert.Len(t, retries, 1) {
		resp, _ := retries[0].Response.(*pulumirpc.ErrorHookResponse)
		assert.True(t, resp.GetRetry(), "the error hook did not ask for a retry")
	}
	var messages []string
	for _, d := range res.Diagnostics {
		if d.FromProgram && d.URN == petURN {
			messages = append(messages, d.Message)
		}
	}
	assert.Contains(t, messages, "creating pet")
}
