package enginetest

import "sync"

// turnstile is a mutual exclusion lock that admits its waiters in the order
// they came, as the engine's step generator takes events from one channel.
// The zero value is unlocked.
type turnstile struct {
	mu      sync.Mutex
	held    bool
	waiting []chan struct{}
}

// Lock waits until every earlier caller of Lock has called Unlock.
func (t *turnstile) Lock() {
	t.mu.Lock()
	if !t.held {
		t.held = true
		t.mu.Unlock()
		return
	}
	turn := make(chan struct{})
	t.waiting = append(t.waiting, turn)
	t.mu.Unlock()
	<-turn // Unlock handed the lock over.
}

// waiters is the number of callers waiting in Lock.
func (t *turnstile) waiters() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting)
}

// Unlock hands the lock to the longest waiter, if any.
func (t *turnstile) Unlock() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.waiting) == 0 {
		t.held = false
		return
	}
	next := t.waiting[0]
	t.waiting = t.waiting[1:]
	close(next)
}

// stepFunc executes a step the step generator decided.
type stepFunc func() (*ResourceState, error)

// submit hands a decided step to execution, as the engine's step generator
// hands a chain to the step executor: the caller holds e.gen, and the step
// holds the execution barrier until it ends, so that a state migration
// waits for it.
func (e *Engine) submit(step stepFunc) stepFunc {
	e.execBarrier.RLock()
	return func() (*ResourceState, error) {
		defer e.execBarrier.RUnlock()
		return step()
	}
}

// generate decides a step with the step generator held and returns it
// submitted for execution, or the error that decided none (or neither,
// when decide decided no step).
func (e *Engine) generate(decide func() (stepFunc, error)) (stepFunc, error) {
	e.gen.Lock()
	defer e.gen.Unlock()
	step, err := decide()
	if err != nil || step == nil {
		return nil, err
	}
	return e.submit(step), nil
}
