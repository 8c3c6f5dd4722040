// Command ours is this module's target in bench/peers, the comparison of
// callback servers: a program that serves pulumirpc.Callbacks on 127.0.0.1
// with an identity resource transform registered through the typed
// transforms API, the way a Pulumi program using this module would.
//
// Run by bench/peers (or cmd/bigpayload), it follows their target
// contract: it connects to the resource monitor named by PULUMI_MONITOR,
// registers the transform as a stack transform
// (ResourceMonitor.RegisterStackTransform), then blocks in
// SignalAndWaitForShutdown until the run is over, or until SIGINT or
// SIGTERM, and shuts the server down.
//
// Without PULUMI_MONITOR it registers the transform with the server alone
// (transforms.Callback, with a monitor that no engine is behind), prints
// "ADDR TOKEN" on stdout, for a client of one's own, and serves until
// SIGINT or SIGTERM.
//
// With -trace (target ours-traced) every call is traced: the global tracer
// provider records each span, with its attributes, and exports it to a
// sink that drops it, what a deployment run with --otel-traces costs the
// program. Without it no tracer provider is set, as in a deployment that
// is not traced.
//
// With -unread (target ours-unread) the transform returns args.Result()
// without reading the properties, so they are checked and sent back as
// received: what a transform that only looks at the type or sets options
// costs.
//
//	go run ./bench/peers -targets proto,ours,ours-unread
//	go build -o /tmp/ours ./bench/ours          # for cmd/bigpayload
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/monitor"
	"github.com/langhost/callbacks/transforms"
)

// identity sends the resource's properties and options back as they came.
// It returns them explicitly, as a real transform that changes something
// would, so that the response is encoded in full.
func identity(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
	if r, ok := conform(a); ok {
		return r, nil
	}
	return &transforms.Result{Properties: a.Properties(), Options: a.Options}, nil
}

// conform makes the conformance kit's known change (CONFORMANCE.md, the
// fixture convention) to the one resource the kit names for it, so that
// `callbackconform -- ours` checks that the change arrives; the benchmarks
// never send that name, so every call they make gets the identity answer.
func conform(a *transforms.Args) (*transforms.Result, bool) {
	if a.Name != "lossless" {
		return nil, false
	}
	props := a.Properties()
	props["conformAdded"] = resource.NewStringProperty("added by the transform")
	retain := true
	a.Options.RetainOnDelete = &retain
	return &transforms.Result{Properties: props, Options: a.Options}, true
}

// noEngine is the ResourceMonitor client of a server that no engine is
// behind: it answers GetDeploymentInfo as an engine that predates the call
// does, which a registration that talks to no engine asks, and nothing
// else.
type noEngine struct {
	pulumirpc.ResourceMonitorClient
}

func (noEngine) GetDeploymentInfo(context.Context, *emptypb.Empty, ...grpc.CallOption) (*pulumirpc.DeploymentInfo, error) {
	return nil, status.Error(codes.Unimplemented, "no engine")
}

// dropSpans is a span exporter that drops what it is given.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// unread sends the properties back without reading them.
func unread(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
	if r, ok := conform(a); ok {
		return r, nil
	}
	return a.Result(), nil
}

func main() {
	exit := 0
	defer func() { os.Exit(exit) }()
	log.SetPrefix("ours: ")
	log.SetFlags(0)
	skipRead := flag.Bool("unread", false, "return the properties without reading them")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	traced := flag.Bool("trace", false, "record a span for every call, exported to a sink that drops it")
	flag.Parse()
	if *traced {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
		otel.SetTracerProvider(tp)
		defer func() { _ = tp.Shutdown(context.Background()) }()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	fn := transforms.Func(identity)
	if *skipRead {
		fn = unread
	}
	if err := run(fn); err != nil {
		log.Print(err)
		exit = 1
	}
}

func run(fn transforms.Func) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var opts []callbacks.ServerOption
	if addr := os.Getenv("PULUMI_ENGINE"); addr != "" {
		opts = append(opts, callbacks.EngineAddress(addr))
	}
	srv, err := callbacks.Listen(opts...)
	if err != nil {
		return err
	}
	defer srv.Close()

	if os.Getenv(monitor.EnvMonitor) == "" {
		mon, err := monitor.New(noEngine{}, srv)
		if err != nil {
			return err
		}
		cb, err := transforms.Callback(ctx, mon, fn, callbacks.Name("identity"))
		if err != nil {
			return err
		}
		fmt.Println(cb.GetTarget(), cb.GetToken())
		<-ctx.Done()
		return shutdown(srv)
	}

	mon, err := monitor.FromEnv(srv)
	if err != nil {
		return err
	}
	if _, err := transforms.RegisterStack(ctx, mon, fn, callbacks.Name("identity")); err != nil {
		return err
	}
	// The engine keeps the wait open until it is done with the program's
	// callbacks; a signal ends the wait early.
	if err := mon.SignalAndWaitForShutdown(ctx); err != nil && ctx.Err() == nil {
		_ = shutdown(srv)
		return err
	}
	return shutdown(srv)
}

// shutdown lets calls in flight finish, for at most five seconds.
func shutdown(srv *callbacks.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}
