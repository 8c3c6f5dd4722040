package enginetest

import (
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

type hookKind int

const (
	hookResource hookKind = iota
	hookError
)

// hookEntry is one registered hook. Resource hooks and error hooks share a
// name space.
type hookEntry struct {
	name         string
	kind         hookKind
	cb           *pulumirpc.Callback
	onDryRun     bool
	ignoreErrors bool
}

// registerHook adds a resource hook or an error hook to the registry.
func (e *Engine) registerHook(name string, kind hookKind, cb *pulumirpc.Callback, onDryRun, ignoreErrors bool) error {
	feature, rpc := "resourceHooks", "RegisterResourceHook"
	if kind == hookError {
		feature, rpc = "errorHooks", "RegisterErrorHook"
	}
	if !e.cfg.supports(feature) {
		return status.Errorf(codes.Unimplemented, "method %s not implemented", rpc)
	}
	if name == "" {
		return errors.New("resource hook name cannot be empty")
	}
	if cb == nil {
		return status.Error(codes.InvalidArgument, "hook callback must be specified")
	}
	if err := e.register(cb); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.hooks[name]; ok {
		return fmt.Errorf("resource hook already registered for name %q", name)
	}
	e.hooks[name] = &hookEntry{
		name:         name,
		kind:         kind,
		cb:           proto.Clone(cb).(*pulumirpc.Callback),
		onDryRun:     onDryRun,
		ignoreErrors: ignoreErrors,
	}
	return nil
}

func (e *Engine) lookupHook(name string, kind hookKind) *hookEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.hooks[name]
	if h == nil || h.kind != kind {
		return nil
	}
	return h
}

// hookPoint is a moment in a resource's life at which hooks run.
type hookPoint string

const (
	beforeCreate hookPoint = "before_create"
	afterCreate  hookPoint = "after_create"
	beforeUpdate hookPoint = "before_update"
	afterUpdate  hookPoint = "after_update"
	beforeDelete hookPoint = "before_delete"
	afterDelete  hookPoint = "after_delete"
)

func (p hookPoint) title() string {
	switch p {
	case beforeCreate:
		return "BeforeCreate"
	case afterCreate:
		return "AfterCreate"
	case beforeUpdate:
		return "BeforeUpdate"
	case afterUpdate:
		return "AfterUpdate"
	case beforeDelete:
		return "BeforeDelete"
	default:
		return "AfterDelete"
	}
}

func (p hookPoint) before() bool {
	return p == beforeCreate || p == beforeUpdate || p == beforeDelete
}

func (p hookPoint) names(b *pulumirpc.RegisterResourceRequest_ResourceHooksBinding) []string {
	switch p {
	case beforeCreate:
		return b.GetBeforeCreate()
	case afterCreate:
		return b.GetAfterCreate()
	case beforeUpdate:
		return b.GetBeforeUpdate()
	case afterUpdate:
		return b.GetAfterUpdate()
	case beforeDelete:
		return b.GetBeforeDelete()
	default:
		return b.GetAfterDelete()
	}
}

// runHooks runs the hooks bound at point, in binding order. It returns the
// step's error: `before hook "X" failed: msg`, `after hook "X" failed: msg`
// or `hook "X" was not registered`. A failing hook with ignore_errors only
// produces a warning.
func (e *Engine) runHooks(point hookPoint, binding *pulumirpc.RegisterResourceRequest_ResourceHooksBinding,
	req *pulumirpc.ResourceHookRequest,
) error {
	for _, name := range point.names(binding) {
		h := e.lookupHook(name, hookResource)
		if h == nil {
			err := fmt.Errorf("hook %q was not registered", name)
			e.rec.add(Event{
				Kind: KindHook, Callback: callbackResourceHook, Name: name, Point: string(point),
				URN: req.GetUrn(), Err: err.Error(),
			})
			return err
		}
		if e.cfg.dryRun && !h.onDryRun {
			e.rec.add(Event{
				Kind: KindHook, Callback: callbackResourceHook, Name: name, Point: string(point),
				URN: req.GetUrn(), Target: h.cb.GetTarget(), Token: h.cb.GetToken(),
				Detail: "skipped (dry run)",
			})
			continue
		}
		msg, failed := e.callHook(point, h, req)
		if !failed {
			continue
		}
		if h.ignoreErrors {
			e.warn(req.GetUrn(), fmt.Sprintf("%s hook %q failed: %s", point.title(), name, msg))
			continue
		}
		if point.before() {
			return fmt.Errorf("before hook %q failed: %s", name, msg)
		}
		return fmt.Errorf("after hook %q failed: %s", name, msg)
	}
	return nil
}

// callHook calls one resource hook and returns its failure message, if any.
// An error field in the response and a gRPC error are the same failure.
func (e *Engine) callHook(point hookPoint, h *hookEntry, req *pulumirpc.ResourceHookRequest) (string, bool) {
	ev := Event{
		Kind: KindHook, Callback: callbackResourceHook, Name: h.name, Point: string(point),
		URN: req.GetUrn(), Target: h.cb.GetTarget(), Token: h.cb.GetToken(),
	}
	if e.cfg.noCallbacks {
		ev.Detail = "not called (NoCallbacks)"
		e.rec.add(ev)
		return "", false
	}
	sent, err := hookRequestFor(req, h.cb.GetAcceptsByteString())
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return err.Error(), true
	}
	ev.Request = sent
	raw, err := e.invokeCallback(e.base, h.cb, sent)
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return err.Error(), true
	}
	var resp pulumirpc.ResourceHookResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		msg := fmt.Sprintf("unmarshaling hook response: %v", err)
		ev.Err = msg
		e.rec.add(ev)
		return msg, true
	}
	ev.Response = &resp
	if resp.GetError() != "" {
		ev.Err = resp.GetError()
		e.rec.add(ev)
		return resp.GetError(), true
	}
	ev.Detail = "ok"
	e.rec.add(ev)
	return "", false
}

// hookRequestFor prepares a hook request for a callback, turning byte
// strings into errors if it does not accept them.
func hookRequestFor(req *pulumirpc.ResourceHookRequest, acceptsByteString bool) (*pulumirpc.ResourceHookRequest, error) {
	out := proto.Clone(req).(*pulumirpc.ResourceHookRequest)
	var err error
	if out.NewInputs, err = forReceiver(req.NewInputs, acceptsByteString); err != nil {
		return nil, err
	}
	if out.OldInputs, err = forReceiver(req.OldInputs, acceptsByteString); err != nil {
		return nil, err
	}
	if out.NewOutputs, err = forReceiver(req.NewOutputs, acceptsByteString); err != nil {
		return nil, err
	}
	if out.OldOutputs, err = forReceiver(req.OldOutputs, acceptsByteString); err != nil {
		return nil, err
	}
	return out, nil
}

// hookOptions builds the options a hook request carries for a resource, or
// nil if the engine does not send options to hooks.
func (e *Engine) hookOptions(r *ResourceState) *pulumirpc.ResourceOptions {
	if r == nil || !e.cfg.supports("sendsOptionsToHooks") {
		return nil
	}
	protect, retain := r.Protect, r.RetainOnDelete
	o := &pulumirpc.ResourceOptions{
		DependsOn:               cloneStrings(r.DependsOn),
		Protect:                 &protect,
		IgnoreChanges:           cloneStrings(r.IgnoreChanges),
		ReplaceOnChanges:        cloneStrings(r.ReplaceOnChanges),
		Provider:                r.Provider,
		DeletedWith:             r.DeletedWith,
		Import:                  r.ImportID,
		HideDiff:                cloneStrings(r.HideDiff),
		ReplaceWith:             cloneStrings(r.ReplaceWith),
		RetainOnDelete:          &retain,
		Parent:                  r.Parent,
		AdditionalSecretOutputs: cloneStrings(r.AdditionalSecretOutputs),
	}
	for _, a := range r.Aliases {
		o.Aliases = append(o.Aliases, &pulumirpc.Alias{Alias: &pulumirpc.Alias_Urn{Urn: a}})
	}
	if r.CustomTimeouts != nil {
		o.CustomTimeouts = proto.Clone(r.CustomTimeouts).(*pulumirpc.RegisterResourceRequest_CustomTimeouts)
	}
	if r.Hooks != nil {
		o.Hooks = proto.Clone(r.Hooks).(*pulumirpc.RegisterResourceRequest_ResourceHooksBinding)
	}
	return o
}
