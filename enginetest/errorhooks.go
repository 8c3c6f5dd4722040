package enginetest

import (
	"errors"
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
)

// maxAttempts is the engine's limit on provider calls for one step when
// error hooks keep asking for retries.
const maxAttempts = 100

// withRetries calls op until it succeeds, retrying while an error hook bound
// in onError asks for it. base is the error hook request without
// failed_operation and errors. Only custom resources get here.
func (e *Engine) withRetries(
	opName string, onError []string, base *pulumirpc.ErrorHookRequest, op func(attempt int) error,
) error {
	var seen []string
	for attempt := 1; ; attempt++ {
		err := op(attempt)
		if err == nil {
			return nil
		}
		seen = append([]string{err.Error()}, seen...)
		if len(onError) == 0 {
			return err
		}
		if attempt >= maxAttempts {
			e.warn(base.GetUrn(), fmt.Sprintf("maximum number of error hook retries (%d) reached", maxAttempts))
			return errors.New("maximum number of error hook retries reached")
		}
		req := proto.Clone(base).(*pulumirpc.ErrorHookRequest)
		req.FailedOperation = opName
		req.Errors = append([]string(nil), seen...)
		retry, herr := e.runErrorHooks(onError, req)
		if herr != nil {
			return fmt.Errorf("error hooks execution failed: %w", herr)
		}
		if !retry {
			return err
		}
		e.warn(base.GetUrn(), fmt.Sprintf("retrying %s due to on-error hook request (%d/%d)", opName, attempt, maxAttempts))
	}
}

// runErrorHooks calls every bound error hook and reports whether any asked
// for a retry. The first failing hook stops the loop.
func (e *Engine) runErrorHooks(names []string, req *pulumirpc.ErrorHookRequest) (bool, error) {
	retry := false
	for _, name := range names {
		h := e.lookupHook(name, hookError)
		if h == nil {
			err := fmt.Errorf("error hook %q was not registered", name)
			e.rec.add(Event{
				Kind: KindErrorHook, Callback: callbackErrorHook, Name: name, Point: "on_error",
				URN: req.GetUrn(), Err: err.Error(),
			})
			return false, err
		}
		r, err := e.callErrorHook(h, req)
		if err != nil {
			return false, fmt.Errorf("error hook %q failed: %s", name, err.Error())
		}
		retry = retry || r
	}
	return retry, nil
}

func (e *Engine) callErrorHook(h *hookEntry, req *pulumirpc.ErrorHookRequest) (bool, error) {
	ev := Event{
		Kind: KindErrorHook, Callback: callbackErrorHook, Name: h.name, Point: "on_error",
		URN: req.GetUrn(), Target: h.cb.GetTarget(), Token: h.cb.GetToken(),
	}
	if e.cfg.noCallbacks {
		ev.Detail = "not called (NoCallbacks)"
		e.rec.add(ev)
		return false, nil
	}
	sent := proto.Clone(req).(*pulumirpc.ErrorHookRequest)
	var err error
	if sent.NewInputs, err = forReceiver(req.NewInputs, h.cb.GetAcceptsByteString()); err == nil {
		if sent.OldInputs, err = forReceiver(req.OldInputs, h.cb.GetAcceptsByteString()); err == nil {
			sent.OldOutputs, err = forReceiver(req.OldOutputs, h.cb.GetAcceptsByteString())
		}
	}
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return false, err
	}
	ev.Request = sent
	raw, err := e.invokeCallback(e.base, h.cb, sent)
	if err != nil {
		ev.Err = err.Error()
		e.rec.add(ev)
		return false, err
	}
	var resp pulumirpc.ErrorHookResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		ev.Err = "unmarshaling error hook response: " + err.Error()
		e.rec.add(ev)
		return false, errors.New(ev.Err)
	}
	ev.Response = &resp
	if resp.GetError() != "" {
		ev.Err = resp.GetError()
		e.rec.add(ev)
		return false, errors.New(resp.GetError())
	}
	ev.Detail = fmt.Sprintf("ok retry=%t", resp.GetRetry())
	e.rec.add(ev)
	return resp.GetRetry(), nil
}
