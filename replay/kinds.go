package replay

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks"
	"github.com/langhost/callbacks/internal/changes"
)

// kindRow is what this package knows of one callback kind: how the monitor
// registers it, its messages, what a call is about, the answer that changes
// nothing, how two answers differ, and the words of its outcome. Read,
// Changes, Outcome, Scrub and Run look a kind up here; outside this file,
// only Run's reading of the messages that register a callback names them.
type kindRow struct {
	kind callbacks.Kind
	via  []via
	// req and res are the kind's request and response messages; states
	// are their fields that hold JSON (Scrub decodes them).
	req, res protoreflect.MessageType
	states   []protoreflect.FullName
	// subject is the request's field that says what a call is about:
	// "urn", a resource's URN (its type and name are the request's, or the
	// URN's for a request without them); "parent", a resource's parent,
	// with its type and name, from which the URN follows; "token", an
	// invoke's function.
	subject string
	// identity is the answer that changes nothing; changes, when set,
	// says what an answer changed instead, and identity is not needed.
	identity func(req proto.Message) proto.Message
	changes  func(res proto.Message) []Change
	// diff compares two answers to req; tree is an answer as the tree
	// IgnorePaths' paths walk.
	diff func(s *changes.Set, req, a, b proto.Message)
	tree func(req, res proto.Message) map[string]any
	// changed is the outcome of an answer that changed something
	// (OutcomeUnchanged if not); outcome, when set, sums an answer up
	// instead. refusal is the path a replay prints for the answer's error,
	// when it is not "error".
	changed Outcome
	outcome func(res proto.Message) (Outcome, string)
	refusal string
}

// via is one way the monitor registers a kind: method, and the field of
// its request that holds the Callback: "" when the request is the Callback
// (registrations counted in order within a run), "callback" beside the
// registration's name, or a list of a resource's callbacks.
type via struct {
	method, field string
	// word names the registration ("stack transform #1", "migration #1 of
	// pet"); own names one of the call's own resource.
	word, own string
}

const registerRes = "RegisterResource"

var kinds = []*kindRow{transform(&kindRow{
	kind: callbacks.KindResourceTransform,
	via: []via{{method: "RegisterStackTransform", word: "stack transform"},
		{method: registerRes, field: "transforms", word: "transform", own: "transform #%d of the resource"}},
	req: (&pulumirpc.TransformRequest{}).ProtoReflect().Type(), res: (&pulumirpc.TransformResponse{}).ProtoReflect().Type(),
	subject: "parent",
}, "properties"), transform(&kindRow{
	kind: callbacks.KindInvokeTransform,
	via:  []via{{method: "RegisterStackInvokeTransform", word: "stack invoke transform"}},
	req:  (&pulumirpc.TransformInvokeRequest{}).ProtoReflect().Type(), res: (&pulumirpc.TransformInvokeResponse{}).ProtoReflect().Type(),
	subject: "token",
}, "args"), {
	kind: callbacks.KindResourceHook,
	via:  []via{{method: "RegisterResourceHook", field: "callback"}},
	req:  (&pulumirpc.ResourceHookRequest{}).ProtoReflect().Type(), res: (&pulumirpc.ResourceHookResponse{}).ProtoReflect().Type(),
	subject:  "urn",
	identity: func(proto.Message) proto.Message { return &pulumirpc.ResourceHookResponse{} },
	diff: func(s *changes.Set, _, a, b proto.Message) {
		s.Scalar("error", quoteOrEmpty(a.(*pulumirpc.ResourceHookResponse).GetError()), quoteOrEmpty(b.(*pulumirpc.ResourceHookResponse).GetError()))
	},
	tree: func(_, a proto.Message) map[string]any {
		if e := a.(*pulumirpc.ResourceHookResponse).GetError(); e != "" {
			return map[string]any{"refusal": e}
		}
		return map[string]any{}
	},
	outcome: func(a proto.Message) (Outcome, string) {
		if e := a.(*pulumirpc.ResourceHookResponse).GetError(); e != "" {
			return OutcomeRefused, e
		}
		return OutcomeOK, ""
	},
	refusal: "refusal", // a resource hook's error is its refusal of the step
}, {
	kind: callbacks.KindErrorHook,
	via:  []via{{method: "RegisterErrorHook", field: "callback"}},
	req:  (&pulumirpc.ErrorHookRequest{}).ProtoReflect().Type(), res: (&pulumirpc.ErrorHookResponse{}).ProtoReflect().Type(),
	subject: "urn",
	changes: func(a proto.Message) []Change {
		res := a.(*pulumirpc.ErrorHookResponse)
		out := []Change{{Path: "retry", New: strconv.FormatBool(res.GetRetry())}}
		if res.GetError() != "" {
			out = append(out, Change{Path: "error", New: strconv.Quote(res.GetError())})
		}
		return out
	},
	diff: func(s *changes.Set, _, a, b proto.Message) {
		x, y := a.(*pulumirpc.ErrorHookResponse), b.(*pulumirpc.ErrorHookResponse)
		s.Scalar("error", quoteOrEmpty(x.GetError()), quoteOrEmpty(y.GetError()))
		s.Scalar("retry", strconv.FormatBool(x.GetRetry()), strconv.FormatBool(y.GetRetry()))
	},
	tree: func(_, a proto.Message) map[string]any {
		res := a.(*pulumirpc.ErrorHookResponse)
		t := map[string]any{"retry": res.GetRetry()}
		if e := res.GetError(); e != "" {
			t["error"] = e
		}
		return t
	},
	outcome: func(a proto.Message) (Outcome, string) {
		res := a.(*pulumirpc.ErrorHookResponse)
		switch {
		case res.GetError() != "":
			return OutcomeFailed, res.GetError()
		case res.GetRetry():
			return OutcomeRetry, ""
		}
		return OutcomeNoRetry, ""
	},
}, {
	kind: callbacks.KindStateMigration,
	via:  []via{{method: registerRes, field: "stateMigrations", word: "migration", own: "migration #%d"}},
	req:  (&pulumirpc.StateMigrationRequest{}).ProtoReflect().Type(), res: (&pulumirpc.StateMigrationResponse{}).ProtoReflect().Type(),
	states:  []protoreflect.FullName{"pulumirpc.StateMigrationRequest.old_state", "pulumirpc.StateMigrationResponse.new_state"},
	subject: "urn",
	identity: func(m proto.Message) proto.Message {
		return &pulumirpc.StateMigrationResponse{NewState: m.(*pulumirpc.StateMigrationRequest).GetOldState()}
	},
	diff: func(s *changes.Set, m, a, b proto.Message) {
		req, x, y := m.(*pulumirpc.StateMigrationRequest), a.(*pulumirpc.StateMigrationResponse), b.(*pulumirpc.StateMigrationResponse)
		s.States(orBytes(x.GetNewState(), req.GetOldState()), orBytes(y.GetNewState(), req.GetOldState()))
		s.Successors(x.GetSuccessors(), y.GetSuccessors())
	},
	tree: func(m, a proto.Message) map[string]any {
		req, res := m.(*pulumirpc.StateMigrationRequest), a.(*pulumirpc.StateMigrationResponse)
		var state any
		_ = json.Unmarshal(orBytes(res.GetNewState(), req.GetOldState()), &state)
		succ := make(map[string]any, len(res.GetSuccessors()))
		for k, v := range res.GetSuccessors() {
			succ[k] = v
		}
		return map[string]any{"state": state, "successors": succ}
	},
	changed: OutcomeMigrated,
}}

// isState reports whether fd holds a kind's JSON state.
func isState(fd protoreflect.FieldDescriptor) bool {
	for _, r := range kinds {
		if slices.Contains(r.states, fd.FullName()) {
			return true
		}
	}
	return false
}

// transform completes the row of a transform kind, whose answer holds
// properties (by the name props) and options, each meaning the request's
// when absent.
func transform(r *kindRow, props string) *kindRow {
	// kept returns m's field name, or req's where m leaves it out.
	kept := func(req, m proto.Message, name protoreflect.Name) proto.Message {
		if fd := m.ProtoReflect().Descriptor().Fields().ByName(name); m.ProtoReflect().Has(fd) {
			return m.ProtoReflect().Get(fd).Message().Interface()
		}
		pr := req.ProtoReflect()
		return pr.Get(pr.Descriptor().Fields().ByName(name)).Message().Interface()
	}
	p := protoreflect.Name(props)
	r.identity = func(req proto.Message) proto.Message {
		res := r.res.New()
		for _, name := range []protoreflect.Name{p, "options"} {
			if m := kept(req, res.Interface(), name); m.ProtoReflect().IsValid() {
				res.Set(res.Descriptor().Fields().ByName(name), protoreflect.ValueOfMessage(m.ProtoReflect()))
			}
		}
		return res.Interface()
	}
	r.diff = func(s *changes.Set, req, a, b proto.Message) {
		s.Structs(props, kept(req, a, p).(*structpb.Struct), kept(req, b, p).(*structpb.Struct))
		s.Options("options", kept(req, a, "options"), kept(req, b, "options"))
	}
	r.tree = func(req, res proto.Message) map[string]any {
		return map[string]any{props: kept(req, res, p).(*structpb.Struct).AsMap(), "options": changes.OptionMap(kept(req, res, "options"))}
	}
	r.changed = OutcomeChanged
	return r
}

// rowOf returns the row of kind k, nil for a kind without one.
func rowOf(k callbacks.Kind) *kindRow {
	for _, r := range kinds {
		if r.kind == k {
			return r
		}
	}
	return nil
}

// rowOfRequest returns the row whose request req is, nil if none.
func rowOfRequest(req proto.Message) *kindRow {
	for _, r := range kinds {
		if req.ProtoReflect().Type() == r.req {
			return r
		}
	}
	return nil
}

// vias yields every way the monitor registers a kind, with the kind's row.
func vias(yield func(*kindRow, *via) bool) {
	for _, r := range kinds {
		for i := range r.via {
			if !yield(r, &r.via[i]) {
				return
			}
		}
	}
}

// viaOf returns the way method registers a kind, with field ("" for any
// field), and its row, or nils.
func viaOf(method, field string) (*kindRow, *via) {
	for r, v := range vias {
		if v.method == method && (field == "" || v.field == field) {
			return r, v
		}
	}
	return nil, nil
}

// messages returns empty request and response messages of the row's kind.
func (r *kindRow) messages() (req, res proto.Message) {
	return r.req.New().Interface(), r.res.New().Interface()
}

// newMessages returns empty request and response messages of kind k, or
// nils for a kind without messages.
func newMessages(k callbacks.Kind) (req, res proto.Message) {
	if r := rowOf(k); r != nil {
		return r.messages()
	}
	return nil, nil
}

// String names the registration for a person, as Call.String names it
// for a call.
func (k regKey) String() string { return k.name("") }

// name names the registration; about is the URN of the call's resource,
// when the registration is named for a call.
func (k regKey) name(about resource.URN) string {
	var v *via
	for r, rv := range vias {
		if r.kind == k.Kind && rv.method == k.Method {
			v = rv
		}
	}
	switch {
	case k.Method == "":
		return "a token never registered"
	case v == nil:
		return strings.TrimPrefix(k.Method, "Register") + " " + k.Name
	case v.field == "callback":
		return k.Name
	case v.field == "":
		return fmt.Sprintf("%s #%d", v.word, k.Order)
	case k.Resource == "" || k.Resource == about:
		return fmt.Sprintf(v.own, k.Order)
	}
	return fmt.Sprintf("%s #%d of %s", v.word, k.Order, k.Resource.Name())
}
