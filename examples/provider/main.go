// Command provider is a component provider, the plugin behind the
// kennel:index:Kennel component: a program in any language constructs a
// Kennel, and this process builds it, a RandomPet per requested pet, with a
// hook bound to each pet and to nothing else in the deployment.
//
// It is the Go SDK's provider.ComponentMain with a ConstructFunc, and
// nothing else: no hand-written ResourceProviderServer, no ConstructRequest
// handling, no callback server to start or stop. The ConstructFunc (see
// kennel.go) is ordinary Go SDK code: program.Monitor(ctx) gives it the
// deployment's monitor, hooks.Register with hooks.Shared registers the hook
// once for every Kennel of the deployment, and program.Hooks binds it in
// each pet's own registration, so the engine calls the provider about its
// own pets only.
//
// The callback server that program.Monitor starts serves for as long as the
// deployment runs (delete hooks of pets a later update drops run after the
// program has ended) and shuts itself down when the engine ends the
// deployment. callbacks.Info from the hook shows under the pet in `pulumi
// up`: in a Construct the SDK's context carries the provider's connection
// to the engine, and program.Monitor gives its address to the server.
//
// Run it as Pulumi runs it: a program's plugins section pointing at a
// directory holding this program built as pulumi-resource-kennel, or at
// this directory (PulumiPlugin.yaml says runtime: go). provider_test.go
// runs the same Construct on the simulator from the enginetest package.
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
)

func main() {
	if err := provider.ComponentMain(Package, Version, []byte(schema), Construct); err != nil {
		fmt.Fprintln(os.Stderr, "kennel provider:", err)
		os.Exit(1)
	}
}
