// Command plainsdk is a Pulumi program on the plain Go SDK, with no use of
// this module; its body is package app, which the replay tests also run.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/langhost/callbacks/integration/programs/plainsdk/app"
)

func main() {
	pulumi.Run(app.Program(app.Prefix))
}
