package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/hooks"
	"github.com/langhost/callbacks/program"
	"github.com/langhost/callbacks/transforms"
)

// manyProgram registers n pets, with a stack transform that tags each
// and a hook "audit" before each create.
func manyProgram(n int) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		mon, err := program.Monitor(ctx)
		if err != nil {
			return err
		}
		c := ctx.Context()
		if _, err := transforms.RegisterStack(c, mon, func(_ context.Context, a *transforms.Args) (*transforms.Result, error) {
			return a.WithProperties(func(p resource.PropertyMap) {
				p["tags"] = resource.NewProperty(resource.PropertyMap{"team": resource.NewProperty("infra")})
			}), nil
		}); err != nil {
			return err
		}
		audit, err := hooks.Register(c, mon, "audit", func(context.Context, *hooks.Args) error { return nil })
		if err != nil {
			return err
		}
		binding := program.Hooks(&transforms.HooksBinding{BeforeCreate: []transforms.HookRef{audit}})
		for i := range n {
			var pet pulumi.CustomResourceState
			if err := ctx.RegisterResource(petType, fmt.Sprintf("pet-%d", i), pulumi.Map{"length": pulumi.Int(2)}, &pet, binding); err != nil {
				return err
			}
		}
		return nil
	}
}

// manyScript is the engine's calls for manyProgram(n): the stack transform
// and the hook, for each pet.
func manyScript(n int) []recorded {
	props, _ := structpb.NewStruct(map[string]any{"length": 2})
	s := make([]recorded, 0, 2*n)
	for i := range n {
		name := fmt.Sprintf("pet-%d", i)
		s = append(s,
			recorded{regKey{Method: "RegisterStackTransform", Kind: callbacks.KindResourceTransform, Order: 1},
				&pulumirpc.TransformRequest{Type: petType, Name: name, Custom: true, Parent: stackURN, Properties: props,
					Options: &pulumirpc.TransformResourceOptions{}}},
			recorded{regKey{Method: "RegisterResourceHook", Kind: callbacks.KindResourceHook, Name: "audit"},
				&pulumirpc.ResourceHookRequest{Urn: string(urnOf(name)), Name: name, Type: petType, NewInputs: props}})
	}
	return s
}

// BenchmarkReplay replays the log of a 1,000-resource deployment with a
// stack transform and a hook on every resource: 2,000 calls, read, sent
// and compared, and the program run once against the stand-in engine.
// peak-heap-B is the largest heap in use seen during an operation.
func BenchmarkReplay(b *testing.B) {
	const resources = 1000
	log := recordLog(b, testInfo, manyProgram(resources), manyScript(resources))
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			for {
				p := peak.Load()
				if ms.HeapInuse <= p || peak.CompareAndSwap(p, ms.HeapInuse) {
					break
				}
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Run(b, log, manyProgram(resources))
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load()), "peak-heap-B")
}
