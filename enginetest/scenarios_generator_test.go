package enginetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// orderLog records what happened, in order, across goroutines.
type orderLog struct {
	mu  sync.Mutex
	got []string
}

func (l *orderLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (l *orderLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.got, s)
}

// wantBefore fails the test unless first was recorded, and before then.
func (l *orderLog) wantBefore(t *testing.T, first, then string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	i, j := slices.Index(l.got, first), slices.Index(l.got, then)
	if i < 0 || j < 0 || i > j {
		t.Fatalf("got %q, want %q before %q", l.got, first, then)
	}
}

// waitFor waits until ready is true, failing the test as soon as wrong
// returns a reason instead. It decides nothing by time: it only polls.
func waitFor(t *testing.T, ready func() bool, wrong func() string) {
	t.Helper()
	for !ready() {
		if why := wrong(); why != "" {
			t.Fatal(why)
		}
		time.Sleep(time.Millisecond)
	}
}

// gate is a channel closed once, by open or at the end of the test, so
// that a failed test does not leave a callback waiting on it.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// openAtEnd opens g when the test ends, before the engine is closed (call
// it after startEngine).
func (g *gate) openAtEnd(t *testing.T) { t.Cleanup(g.open) }

// registered registers a custom resource in the background.
func registered(p *program, name string, props map[string]any, mod ...func(*pulumirpc.RegisterResourceRequest)) *call {
	req := p.request(res{typ: thingType, name: name, custom: true, props: props, mod: chain(mod)})
	return p.background(func(ctx context.Context) error {
		_, err := p.mon.RegisterResource(ctx, req)
		return err
	})
}

func (c *call) wantOK() {
	c.t.Helper()
	if err := <-c.done; err != nil {
		c.t.Fatalf("RegisterResource: %v\n%s", err, c.e.Trace())
	}
}

// As in the engine, whose step generator takes registrations one at a
// time, a registration whose state migration has not answered holds up the
// step of a registration that came after it: the later one's Check and
// Create happen only after the migration answered.
func TestSlowMigrationHoldsUpLaterRegistrations(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	var log orderLog
	prov := &FakeProvider{
		OnCheck: func(_ context.Context, req *CheckRequest) (*CheckResponse, error) {
			log.add("check " + req.Name)
			return nil, nil
		},
	}
	e := startEngine(t, WithState(prior), WithProvider(prov))
	cbs := newCallbackServer(t)
	started, release := newGate(), newGate()
	release.openAtEnd(t)
	var m migration
	mig := m.serve(cbs, func(urn string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		started.open()
		<-release.ch
		log.add("migration answers")
		return renameLength(urn, old)
	})
	p := newProgram(t, e)
	a := registered(p, "a", map[string]any{"size": 2}, withMigrations(mig))
	<-started.ch
	late := registered(p, "late", map[string]any{"n": 1})
	waitFor(t, func() bool { return e.gen.waiters() == 1 }, func() string {
		if log.has("check late") {
			return "the later registration was checked while the migration had not answered"
		}
		return ""
	})
	release.open()
	a.wantOK()
	late.wantOK()
	if res := p.finish(); res.Failed {
		t.Fatalf("deployment failed: %v", res.Err)
	}
	log.wantBefore(t, "migration answers", "check late")
}

// As in the engine, a state migration that runs waits for the steps already
// started to end, and no step starts while it runs: the state it rewrites
// is not being changed under it.
func TestMigrationWaitsForStepsInFlight(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	var log orderLog
	creating, release := newGate(), newGate()
	prov := &FakeProvider{
		OnCreate: func(_ context.Context, req *CreateRequest) (*CreateResponse, error) {
			if req.Name == "early" {
				creating.open()
				<-release.ch
				log.add("early created")
			}
			return &CreateResponse{ID: req.Name + "-id", Outputs: req.Inputs}, nil
		},
	}
	e := startEngine(t, WithState(prior), WithProvider(prov))
	release.openAtEnd(t)
	cbs := newCallbackServer(t)
	var m migration
	mig := m.serve(cbs, func(urn string, old []map[string]any) ([]map[string]any, map[string]string, error) {
		log.add("migration runs")
		return renameLength(urn, old)
	})
	p := newProgram(t, e)
	early := registered(p, "early", map[string]any{"n": 1})
	<-creating.ch
	a := registered(p, "a", map[string]any{"size": 2}, withMigrations(mig))
	waitFor(t, func() bool { return e.barrierWaits.Load() == 1 }, func() string {
		if log.has("migration runs") {
			return "the migration ran while an earlier step was in flight"
		}
		return ""
	})
	release.open()
	early.wantOK()
	a.wantOK()
	if res := p.finish(); res.Failed {
		t.Fatalf("deployment failed: %v", res.Err)
	}
	log.wantBefore(t, "early created", "migration runs")
}

// As in the engine, the provider's Check and Diff are part of deciding a
// registration's step: a slow one holds up the registrations after it,
// while the steps decided before it go on running, and so do those decided
// after it.
func TestSlowCheckOrDiffHoldsUpLaterRegistrations(t *testing.T) {
	t.Parallel()
	prior := priorState(t)
	for _, slow := range []string{"check", "diff"} {
		t.Run(slow, func(t *testing.T) {
			t.Parallel()
			var log orderLog
			creating, releaseCreate := newGate(), newGate()
			calling, releaseCall := newGate(), newGate()
			wait := func(name string) {
				calling.open()
				<-releaseCall.ch
				log.add(name + " answers")
			}
			prov := &FakeProvider{
				OnCheck: func(_ context.Context, req *CheckRequest) (*CheckResponse, error) {
					if slow == "check" && req.Name == "a" {
						wait("check a")
					}
					log.add("check " + req.Name)
					return nil, nil
				},
				OnDiff: func(_ context.Context, req *DiffRequest) (*DiffResponse, error) {
					if slow == "diff" && req.Name == "a" {
						wait("diff a")
					}
					return &DiffResponse{Changed: []string{"length"}}, nil
				},
				OnCreate: func(_ context.Context, req *CreateRequest) (*CreateResponse, error) {
					if req.Name == "early" {
						creating.open()
						<-releaseCreate.ch
					}
					log.add("create " + req.Name)
					return &CreateResponse{ID: req.Name + "-id", Outputs: req.Inputs}, nil
				},
			}
			e := startEngine(t, WithState(prior), WithProvider(prov))
			releaseCreate.openAtEnd(t)
			releaseCall.openAtEnd(t)
			p := newProgram(t, e)
			early := registered(p, "early", map[string]any{"n": 1})
			<-creating.ch
			// a's Check and Diff run while early's Create is in flight.
			a := registered(p, "a", map[string]any{"length": 3})
			<-calling.ch
			late := registered(p, "late", map[string]any{"n": 2})
			waitFor(t, func() bool { return e.gen.waiters() == 1 }, func() string {
				if log.has("check late") {
					return "the later registration was checked while the " + slow + " had not answered"
				}
				return ""
			})
			releaseCall.open()
			// a's update and late's create end while early's Create is
			// still in flight.
			a.wantOK()
			late.wantOK()
			if log.has("create early") {
				t.Fatal("early's Create ended before it was released")
			}
			releaseCreate.open()
			early.wantOK()
			if res := p.finish(); res.Failed {
				t.Fatalf("deployment failed: %v", res.Err)
			}
			log.wantBefore(t, slow+" a answers", "check late")
			log.wantBefore(t, "create late", "create early")
		})
	}
}
