// Command replay is the program of the replay tests under the real CLI:
// its body is package app, which the tests also hand to replay.Run.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/integration/programs/replay/app"
)

func main() {
	pulumi.Run(app.Program(app.Prefix))
}
