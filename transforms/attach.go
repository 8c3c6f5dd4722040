package transforms

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/callsite"
	"github.com/langhost/callbacks/internal/registration"
	"github.com/langhost/callbacks/monitor"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"google.golang.org/grpc/codes"
)

// Attach applies fn to the resources of scope registered from now on. It
// is how a library changes resources it does not create, such as the
// children a program gives one of its components: fn runs as a stack
// transform would, after the resource's own and its ancestors'
// transforms, and returns what a [Func] returns.
//
// All the bindings of a deployment share one stack transform, registered
// with the engine on the first Attach through mon: the engine calls it once
// for each resource registered afterwards, and it runs, in the order they
// were attached, the functions of the bindings whose scope takes the
// resource, each seeing the changes of the ones before. So any number of
// bindings cost the engine one call per resource, not one per resource and
// binding. That transform stands where the first binding was attached in
// the order of the deployment's stack transforms: a stack transform
// registered in between runs after every binding.
//
// To know which resources descend from a component, the shared transform
// records the parent of every resource it is asked about; it forgets them
// when the engine ends the deployment (see [monitor.Monitor.Done]).
//
// Attach returns an error wrapping [ErrNeverMatches] for a binding that can
// never apply (see there). A [Descendants] scope whose component already
// has children that were registered before the binding misses those
// children: the deployment shows a warning under the component. Every error
// is a [*callbacks.Error].
//
// opts apply to this binding's function, run as [callbacks.Runner] runs it:
// [callbacks.Name] names it in messages; an overrun of [callbacks.Timeout]
// fails the resource's registration (DeadlineExceeded, [callbacks.ErrTimeout]);
// with [callbacks.FailOpen], a panic or overrun changes nothing, with a
// warning under the resource. AcceptsByteStrings(false), a choice about the
// shared transform, is refused: register a transform with [RegisterStack].
func Attach(ctx context.Context, mon *monitor.Monitor, scope Scope, fn Func, opts ...callbacks.RegisterOption) error {
	const what = "transforms: attaching"
	if err := registration.Check(mon, fn == nil); err != nil {
		return registration.Failed(callbacks.KindResourceTransform, what, err)
	}
	runner, err := callbacks.NewRunner(opts...)
	if err != nil {
		return registration.Failed(callbacks.KindResourceTransform, what, fmt.Errorf(
			"%w (a binding runs in the deployment's shared transform; for a transform of its own, use transforms.RegisterStack)", err))
	}
	if err := attached(mon).add(ctx, &binding{scope: scope, fn: fn, site: callsite.Site(), runner: runner}); err != nil {
		return registration.Failed(callbacks.KindResourceTransform, fmt.Sprintf("%s to %s", what, scope.describe()), err)
	}
	return nil
}

// attachments is the shared transform of one deployment and callback
// server, and the bindings it dispatches to.
type attachments struct {
	mon *monitor.Monitor

	regMu      sync.Mutex // held while the transform is registered
	registered bool

	ended chan struct{} // closed once end has run; nil for monitors without Done

	mu          sync.Mutex
	over        bool // the engine ended the deployment
	project     string
	stack       string
	seq         int
	everywhere  []*binding                    // Matching scopes
	byComponent map[resource.URN][]*binding   // Descendants scopes, by component
	pending     []*binding                    // DescendantsOf scopes not resolved yet
	parents     map[resource.URN]resource.URN // every resource seen, with its parent
	firstChild  map[resource.URN]resource.URN // the first child seen of each parent
	reports     []report                      // warnings for the next call to send
}

// binding is one attached transform.
type binding struct {
	seq    int
	scope  Scope
	fn     Func
	site   string            // where Attach was called
	runner *callbacks.Runner // runs fn under the binding's options
}

// String names b for messages: `the binding "tag" attached at main.go:12`.
func (b *binding) String() string {
	if name := b.runner.Name(); name != "" {
		return fmt.Sprintf("the binding %q attached at %s", name, b.site)
	}
	return "the binding attached at " + b.site
}

// report is a warning about a binding, for the user.
type report struct {
	urn resource.URN
	msg string
}

// attachedKey is the key of the shared transforms among a deployment's
// values (see monitor.Monitor.Value).
type attachedKey struct{}

// attachedByServer holds a deployment's shared transforms, one for each
// callback server its monitors are bound to: the transform is served by
// the server it was registered with.
type attachedByServer struct {
	mu sync.Mutex
	m  map[*callbacks.Server]*attachments
}

// attached returns the shared transform state of mon's deployment and
// server, made on first use.
func attached(mon *monitor.Monitor) *attachments {
	all := mon.Value(attachedKey{}, func() any {
		return &attachedByServer{m: map[*callbacks.Server]*attachments{}}
	}).(*attachedByServer)
	all.mu.Lock()
	defer all.mu.Unlock()
	a := all.m[mon.Server()]
	if a == nil {
		a = &attachments{
			mon:         mon,
			byComponent: map[resource.URN][]*binding{},
			parents:     map[resource.URN]resource.URN{},
			firstChild:  map[resource.URN]resource.URN{},
		}
		if done := mon.Done(); done != nil {
			a.ended = make(chan struct{})
			go func() {
				<-done
				a.end()
				close(a.ended)
			}()
		}
		all.m[mon.Server()] = a
	}
	return a
}

// end forgets everything once the engine has ended the deployment.
func (a *attachments) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.over = true
	a.everywhere, a.pending, a.reports = nil, nil, nil
	clear(a.byComponent)
	clear(a.parents)
	clear(a.firstChild)
}

// add registers the shared transform if it is not yet registered, then adds
// the binding.
func (a *attachments) add(ctx context.Context, b *binding) error {
	scope := b.scope
	if err := scope.check(); err != nil {
		return err
	}
	if err := a.register(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.over {
		return fmt.Errorf("%w: the engine has ended the deployment", ErrNeverMatches)
	}
	a.seq++
	b.seq = a.seq
	switch {
	case scope.everywhere:
		a.everywhere = append(a.everywhere, b)
		return nil
	case scope.lookup != nil:
		urn, err := scope.lookup()
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", ErrNeverMatches, err)
		case urn == "":
			a.pending = append(a.pending, b)
			return nil
		}
		return a.resolved(b, urn)
	}
	return a.resolved(b, scope.component)
}

// resolved files b under its component's URN, once known, unless the
// component cannot have descendants in this deployment. It queues a
// warning when children of the component were registered before b.
// a.mu is held.
func (a *attachments) resolved(b *binding, urn resource.URN) error {
	if !urn.IsValid() {
		return fmt.Errorf("%w: %q is not a valid URN", ErrNeverMatches, urn)
	}
	if a.stack != "" && (string(urn.Stack()) != a.stack || string(urn.Project()) != a.project) {
		return fmt.Errorf("%w: %s is not of this deployment (stack %s of project %s)", ErrNeverMatches, urn, a.stack, a.project)
	}
	if child, ok := a.firstChild[urn]; ok {
		a.reports = append(a.reports, report{urn: urn, msg: fmt.Sprintf(
			"%s applies to the descendants of this resource registered after it; "+
				"children registered before it, such as %s, do not get it", b, child.Name())})
	}
	a.byComponent[urn] = append(a.byComponent[urn], b)
	return nil
}

// register registers the shared transform with the engine, once.
func (a *attachments) register(ctx context.Context) error {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	if a.registered {
		return nil
	}
	info, err := a.mon.DeploymentInfo(ctx)
	if err != nil {
		return err
	}
	if _, err := RegisterStack(ctx, a.mon, a.transform, callbacks.Name("transforms.Attach")); err != nil {
		return err
	}
	a.mu.Lock()
	a.project, a.stack = info.GetProject(), info.GetStack()
	a.mu.Unlock()
	a.registered = true
	return nil
}

// transform is the shared transform the engine calls.
func (a *attachments) transform(ctx context.Context, args *Args) (*Result, error) {
	matched, reports := a.match(args)
	for _, r := range reports {
		callbacks.ReportFor(ctx, callbacks.SeverityWarning, string(r.urn), r.msg)
	}
	if len(matched) == 0 {
		return nil, nil
	}
	props, opts := false, false
	for _, b := range matched {
		if b.scope.sel != nil && !b.scope.sel(args) {
			continue
		}
		res, now, err := b.run(ctx, args)
		if err != nil {
			return nil, err
		}
		args = now
		if res == nil {
			continue
		}
		switch {
		case res.Properties != nil:
			args.SetProperties(res.Properties)
			props = true
		case res.from != nil:
			if res.from != args {
				args.SetProperties(res.from.Properties())
			}
			props = true
		}
		if res.Options != nil {
			args.Options = res.Options
			opts = true
		}
	}
	switch {
	case props:
		res := args.Result()
		if !opts {
			res.Options = nil
		}
		return res, nil
	case opts:
		return &Result{Options: args.Options}, nil
	}
	return nil, nil
}

// match records the resource and returns the bindings whose scope may take
// it, in the order they were attached (a selector still has to pick it),
// with the warnings due.
func (a *attachments) match(args *Args) ([]*binding, []report) {
	a.mu.Lock()
	defer a.mu.Unlock()
	reports := a.reports
	a.reports = nil
	if a.over {
		return nil, reports
	}
	// Components whose URN has become known since the last call: before
	// this resource is recorded, so that it does not count as a child
	// registered before the binding.
	if len(a.pending) > 0 {
		if a.stack == "" && args.URN.IsValid() {
			a.project, a.stack = string(args.URN.Project()), string(args.URN.Stack())
		}
		still := a.pending[:0]
		for _, b := range a.pending {
			urn, err := b.scope.lookup()
			if err == nil && urn == "" {
				still = append(still, b)
				continue
			}
			if err == nil {
				err = a.resolved(b, urn)
			}
			if err != nil {
				reports = append(reports, report{msg: fmt.Sprintf(
					"%s to %s can never match a resource, and is dropped: %v", b, b.scope.describe(), err)})
			}
		}
		clear(a.pending[len(still):])
		a.pending = still
	}

	var matched []*binding
	for p, depth := args.Parent, 0; p != "" && depth <= len(a.parents); depth++ {
		matched = append(matched, a.byComponent[p]...)
		var ok bool
		if p, ok = a.parents[p]; !ok {
			break
		}
	}
	if args.URN != "" {
		a.parents[args.URN] = args.Parent
		if _, ok := a.firstChild[args.Parent]; !ok && args.Parent != "" {
			a.firstChild[args.Parent] = args.URN
		}
	}
	matched = append(matched, a.everywhere...)
	slices.SortFunc(matched, func(x, y *binding) int { return cmp.Compare(x.seq, y.seq) })
	return matched, reports
}

// run calls b's function on args as callbacks.Runner runs it, and returns
// its result and the Args the later bindings see. A binding with a timeout
// or failing open works on a copy of args, which its function may keep
// using after it is left behind, and which is dropped when it fails open;
// that costs an encoding and a decoding of the resource per call.
func (b *binding) run(ctx context.Context, args *Args) (*Result, *Args, error) {
	work := args
	if b.runner.Isolates() {
		before, err := snapshot(args)
		if err != nil {
			// What the bindings before it made does not encode: their
			// result is broken, as it would be when sent.
			err = fmt.Errorf("transforms: copying the resource for %s: %w", b, registration.ResultError(err, true))
			return nil, nil, &callbacks.Error{Code: codes.Internal, Kind: callbacks.KindResourceTransform, Err: err, Msg: err.Error()}
		}
		if work, err = decodePayload(before, true); err != nil {
			return nil, nil, fmt.Errorf("transforms: copying the resource for %s: %w", b, err)
		}
	}
	var res *Result
	failedOpen, err := b.runner.Run(ctx, b.String(), func(ctx context.Context) (err error) {
		res, err = b.fn(ctx, work)
		return err
	})
	switch {
	case err != nil: // fn may still be running: read nothing it writes
		return nil, nil, err
	case failedOpen:
		return nil, args, nil
	}
	return res, work, nil
}
