package enginetest_test

import (
	"context"
	"fmt"
	"log"
	"os/exec"

	"github.com/langhost/callbacks/enginetest"
)

// A program run as a language host runs it: here one that fails, reported
// as the engine reports it: its standard error line by line, then the
// error, and no "update failed".
func ExampleEngine_RunCommand() {
	e, err := enginetest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	cmd := exec.Command("sh", "-c", "echo 'out of coffee' >&2; exit 3")
	res, err := e.RunCommand(context.Background(), cmd)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Failed)
	fmt.Println(res.ProgramErr)
	for _, d := range res.Diagnostics {
		fmt.Println(d)
	}
	// Output:
	// true
	// an unhandled error occurred: program exited with non-zero exit code: 3
	// info#err: out of coffee
	// error: an unhandled error occurred: program exited with non-zero exit code: 3
}
