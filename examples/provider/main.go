// Command provider is a component provider, the plugin behind the
// kennel:index:Kennel component: a program in any language constructs a
// Kennel, and this process builds it, a RandomPet per requested pet, with
// hooks and a transform bound to the Kennel's own children and to nothing
// else in the deployment.
//
// # Which SDK route
//
// The Go SDK's provider.ComponentMain runs a ConstructFunc but never hands it
// the ConstructRequest, and the request is what monitor.FromConstruct needs
// to reach the engine's ResourceMonitor. So the provider is the SDK's
// lower-level provider.Main with a ResourceProviderServer of four methods
// (GetPluginInfo, GetSchema, Configure, Construct; see kennel.go). Construct
// registers the callbacks from the request, and hands the request to the
// SDK's provider.Construct, which builds the component with the ordinary
// pulumi.Context programming model. The component itself is registered over
// the monitor, with the callbacks in its own transforms (the SDK's resource
// options cannot carry them), and read back into the SDK by URN.
//
// # Lifetime of the callback server
//
// The engine calls hooks and transforms back on the server this process
// starts, for as long as the deployment runs: after-create hooks while the
// children are created, and delete hooks of children that a later update
// drops after the program itself has ended. The provider process is alive
// until then: the engine shuts its plugins down (SIGINT, on which
// provider.Main returns, then a kill 5 seconds later) only once the
// deployment is over. So the server
// starts before provider.Main serves and shuts down, gracefully and within a
// bound, after provider.Main has returned; it is never tied to one
// Construct.
//
// Run it as Pulumi runs it: `pulumi package add` or a program's
// packages/plugins section pointing at this directory (PulumiPlugin.yaml
// says runtime: go). provider_test.go runs the same Construct on the
// simulator from the enginetest package.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"

	"github.com/langhost/callbacks"
)

// shutdownTimeout bounds the wait for callbacks in flight once the engine
// has let the provider go. The engine kills a plugin that has not exited 5
// seconds after the interrupt; the server must be done before that.
const shutdownTimeout = 4 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kennel provider:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	var kennel *Kennel
	defer func() {
		if kennel != nil {
			err = errors.Join(err, kennel.Shutdown(shutdownTimeout))
		}
	}()
	return provider.Main(Package, func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		var engine string
		if host != nil {
			// The engine's address, so that callbacks.Warn and
			// callbacks.Info show under the resource.
			engine = host.EngineConn().Target()
		}
		k, err := NewKennel(hostConn(host), callbacks.EngineAddress(engine))
		if err != nil {
			return nil, err
		}
		kennel = k
		return k, nil
	})
}

// hostConn is the engine connection of host, or nil when the engine attaches
// later (see Kennel.Attach).
func hostConn(host *provider.HostClient) *grpc.ClientConn {
	if host == nil {
		return nil
	}
	return host.EngineConn()
}
