package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/enginetest"
)

// simulate deploys version 1 of the program, then version 2 over the state
// the first left, on the simulator, and reports to w what the engine did.
// It fails unless the migration ran, left the pet's step a same, and
// renamed the keeper in the state.
func simulate(ctx context.Context, w io.Writer) error {
	var state *enginetest.State
	for v := 1; v <= 2; v++ {
		opts := []enginetest.Option{enginetest.WithProject("migrations"), enginetest.WithStack("dev")}
		if state != nil {
			opts = append(opts, enginetest.WithState(state))
		}
		engine, err := enginetest.Start(opts...)
		if err != nil {
			return err
		}
		res, err := engine.RunFunc(ctx, func() error { return pulumi.RunErr(deploy(v)) })
		engine.Close()
		if err != nil {
			return err
		}
		if res.Err != nil {
			return fmt.Errorf("version %d: %w", v, res.Err)
		}
		fmt.Fprintf(w, "version %d of the program:\n", v)
		for _, d := range res.Diagnostics {
			if strings.HasPrefix(d.Message, "State migration") {
				fmt.Fprintf(w, "  %s  %s\n", enginetest.URNName(d.URN), d.Message)
			}
		}
		pet := engine.URN("", petType, "pet")
		var op string
		for _, s := range res.Steps {
			if s.URN == pet {
				op = s.Op
			}
		}
		stored := res.State.Get(pet).Inputs.GetFields()["keepers"].GetStructValue().AsMap()
		fmt.Fprintf(w, "  pet  step %s, keepers in the state %v\n", op, stored)
		if v == 2 && (op != "same" || stored["team"] == nil) {
			return fmt.Errorf("version 2 did not migrate the pet's state: step %s, keepers %v", op, stored)
		}
		state = res.State
	}
	return nil
}
