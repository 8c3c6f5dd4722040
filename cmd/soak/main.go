// Command soak drives a callbacks server the way the Pulumi engine does (many
// concurrent callers on one cached loopback connection) for a fixed time,
// then reports the calls made, the errors seen, latency percentiles, and how
// much heap and how many goroutines the run left behind.
//
// Usage:
//
//	go run ./cmd/soak [-duration 10s] [-conc 16] [-payload 1024] [-kind raw|transform]
//
// It exits with status 1 if any call failed or returned the wrong answer, or
// if goroutines outlived the server; heap growth is reported only. All
// traffic stays on 127.0.0.1.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/langhost/callbacks"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// config is one soak run.
type config struct {
	Duration time.Duration // how long callers keep calling
	Conc     int           // concurrent callers
	Payload  int           // approximate request size in bytes
	Kind     string        // "raw" or "transform"
	// FailEvery makes every n-th call of the function fail, to check that
	// the soak notices failures. Zero: never.
	FailEvery int
	// MinCalls is how many calls each caller makes at least, however long
	// they take, so that a test's verdict does not depend on how many calls
	// fit in Duration on a busy machine. Zero: only Duration counts.
	MinCalls int
}

// report is what a run measured.
type report struct {
	Kind          string
	Elapsed       time.Duration
	Calls         int64
	Errors        int64
	FirstError    error
	P50, P99, Max time.Duration

	HeapBefore, HeapAfter             uint64 // live heap after GC
	GoroutinesBefore, GoroutinesAfter int
}

// callTimeout bounds a single call so that a stuck server shows up as an
// error instead of a soak that never ends.
const callTimeout = 30 * time.Second

// settleTimeout bounds the wait for the server's goroutines to exit.
const settleTimeout = 10 * time.Second

func main() {
	var cfg config
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to keep calling")
	flag.IntVar(&cfg.Conc, "conc", 16, "concurrent callers")
	flag.IntVar(&cfg.Payload, "payload", 1024, "request size in bytes")
	flag.StringVar(&cfg.Kind, "kind", "raw", `callback kind: "raw" (identity on bytes) or "transform" (identity resource transform)`)
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	rep.print(os.Stdout)
	if err := rep.check(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAIL:", err)
		os.Exit(1)
	}
}

// run starts a server, soaks it and stops it. The error is for setups that
// could not run at all; failures of the soak itself are in the report (see
// report.check).
func run(ctx context.Context, cfg config) (*report, error) {
	if cfg.Duration <= 0 || cfg.Conc <= 0 || cfg.Payload < 0 {
		return nil, fmt.Errorf("bad config: duration %v, conc %d, payload %d", cfg.Duration, cfg.Conc, cfg.Payload)
	}
	fn, payload, verify, err := workload(cfg)
	if err != nil {
		return nil, err
	}
	rep := &report{Kind: cfg.Kind}
	rep.HeapBefore, rep.GoroutinesBefore = measure()

	srv, err := callbacks.Listen() // 127.0.0.1, a free port
	if err != nil {
		return nil, err
	}
	cb, err := srv.Register(context.Background(), fn, callbacks.Name("soak"))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	conn, err := grpc.NewClient(cb.GetTarget(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(callbacks.DefaultMaxMessageSize), grpc.MaxCallSendMsgSize(callbacks.DefaultMaxMessageSize)))
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	client := pulumirpc.NewCallbacksClient(conn)

	start := time.Now()
	end := start.Add(cfg.Duration)
	lat := make([][]time.Duration, cfg.Conc)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range cfg.Conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; (n < cfg.MinCalls || time.Now().Before(end)) && ctx.Err() == nil; n++ {
				// Each call gets its own bound, so the end of the run never
				// cuts a call short and counts it as an error.
				callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
				t0 := time.Now()
				res, err := client.Invoke(callCtx, &pulumirpc.CallbackInvokeRequest{Token: cb.GetToken(), Request: payload})
				d := time.Since(t0)
				cancel()
				lat[w] = append(lat[w], d)
				if err == nil {
					err = verify(res.GetResponse())
				}
				if err != nil {
					mu.Lock()
					rep.Errors++
					if rep.FirstError == nil {
						rep.FirstError = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	rep.Elapsed = time.Since(start)

	all := slices.Concat(lat...)
	lat = nil
	rep.Calls = int64(len(all))
	if len(all) > 0 {
		slices.Sort(all)
		rep.P50 = all[len(all)*50/100]
		rep.P99 = all[min(len(all)*99/100, len(all)-1)]
		rep.Max = all[len(all)-1]
	}
	all = nil

	_ = conn.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return rep, fmt.Errorf("shutdown: %w", err)
	}
	// Connection goroutines exit shortly after Close returns; give them a
	// bounded moment before counting.
	for deadline := time.Now().Add(settleTimeout); runtime.NumGoroutine() > rep.GoroutinesBefore && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	rep.HeapAfter, rep.GoroutinesAfter = measure()
	return rep, nil
}

// workload returns the registered function, the request payload for
// cfg.Kind and a check of the response. Both functions echo their input, so
// every answer can be checked exactly.
func workload(cfg config) (callbacks.Func, []byte, func([]byte) error, error) {
	var n atomic.Int64
	fail := func() error {
		if cfg.FailEvery > 0 {
			if k := n.Add(1); k%int64(cfg.FailEvery) == 0 {
				return fmt.Errorf("injected failure %d", k)
			}
		}
		return nil
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	switch cfg.Kind {
	case "raw":
		payload := make([]byte, cfg.Payload)
		for i := range payload {
			payload[i] = byte(rnd.UintN(256))
		}
		fn := callbacks.Raw(func(_ context.Context, b []byte) ([]byte, error) {
			if err := fail(); err != nil {
				return nil, err
			}
			return b, nil
		})
		verify := func(resp []byte) error {
			if !bytes.Equal(resp, payload) {
				return errors.New("the response is not the request echoed back")
			}
			return nil
		}
		return fn, payload, verify, nil
	case "transform":
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		data := make([]byte, cfg.Payload)
		for i := range data {
			data[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		protect := true
		req := &pulumirpc.TransformRequest{
			Type: "aws:s3/bucket:Bucket", Name: "soak", Custom: true,
			Parent: "urn:pulumi:soak::soak::pulumi:pulumi:Stack::soak-soak",
			Properties: &structpb.Struct{Fields: map[string]*structpb.Value{
				"data": structpb.NewStringValue(string(data)),
				"tags": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
					"team": structpb.NewStringValue("infra"),
				}}),
			}},
			Options: &pulumirpc.TransformResourceOptions{Protect: &protect, Version: "6.0.0", DependsOn: []string{"urn:a"}},
		}
		payload, err := proto.Marshal(req)
		if err != nil {
			return callbacks.Func{}, nil, nil, err
		}
		// The identity transform: the request's properties and options,
		// unchanged.
		fn := callbacks.ResourceTransform(func(_ context.Context, r *pulumirpc.TransformRequest) (*pulumirpc.TransformResponse, error) {
			if err := fail(); err != nil {
				return nil, err
			}
			return &pulumirpc.TransformResponse{Properties: r.GetProperties(), Options: r.GetOptions()}, nil
		})
		want := &pulumirpc.TransformResponse{Properties: req.GetProperties(), Options: req.GetOptions()}
		verify := func(resp []byte) error {
			var got pulumirpc.TransformResponse
			if err := proto.Unmarshal(resp, &got); err != nil {
				return fmt.Errorf("the response does not decode: %w", err)
			}
			if !proto.Equal(&got, want) {
				return errors.New("the response is not the identity transform of the request")
			}
			return nil
		}
		return fn, payload, verify, nil
	}
	return callbacks.Func{}, nil, nil, fmt.Errorf("unknown kind %q (want raw or transform)", cfg.Kind)
}

// measure returns the live heap after a full collection and the number of
// goroutines.
func measure() (heap uint64, goroutines int) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, runtime.NumGoroutine()
}

// check says whether the run passed: no errors, at least one call, and no
// goroutine left behind.
func (r *report) check() error {
	switch {
	case r.Errors > 0:
		return fmt.Errorf("%d of %d calls failed; first: %v", r.Errors, r.Calls, r.FirstError)
	case r.Calls == 0:
		return errors.New("no call completed")
	case r.GoroutinesAfter > r.GoroutinesBefore:
		return fmt.Errorf("goroutines grew from %d to %d", r.GoroutinesBefore, r.GoroutinesAfter)
	}
	return nil
}

func (r *report) print(w io.Writer) {
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(r.Calls) / r.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "kind:        %s\n", r.Kind)
	fmt.Fprintf(w, "calls:       %d in %v (%.0f/s)\n", r.Calls, r.Elapsed.Round(time.Millisecond), rate)
	fmt.Fprintf(w, "errors:      %d\n", r.Errors)
	if r.FirstError != nil {
		fmt.Fprintf(w, "first error: %v\n", r.FirstError)
	}
	fmt.Fprintf(w, "latency:     p50 %v, p99 %v, max %v\n", r.P50, r.P99, r.Max)
	fmt.Fprintf(w, "heap:        %d -> %d bytes (%+d)\n", r.HeapBefore, r.HeapAfter, int64(r.HeapAfter)-int64(r.HeapBefore))
	fmt.Fprintf(w, "goroutines:  %d -> %d (%+d)\n", r.GoroutinesBefore, r.GoroutinesAfter, r.GoroutinesAfter-r.GoroutinesBefore)
}
