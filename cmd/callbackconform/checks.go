package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Levels and verdicts.
const (
	must   = "MUST"
	should = "SHOULD"

	pass    = "pass"
	fail    = "fail"
	na      = "n/a"
	skipped = "not run"
)

// callTimeout bounds one call, bad inputs included; the engine itself sets
// none, but a kit must end. It is far above what any call of a working
// server needs, even on a slow or busy machine: no verdict should rest on
// the machine's speed, and a server that answers in time on an idle
// machine answers in time on a busy one. 1,000 concurrent calls get twice
// it, and a 300 MiB payload four times: a Node.js server on a two-core
// machine running eight busy loops beside the kit needed more than a minute
// for the first and two for the second.
const callTimeout = 2 * time.Minute

// registered is a callback the program registered with the engine.
type registered struct {
	Kind              string `json:"kind"`
	Name              string `json:"name,omitempty"`
	Target            string `json:"target"`
	Token             string `json:"token"`
	AcceptsByteString bool   `json:"acceptsByteString"`
	// URN, Type and Parent are those of the resource a state migration
	// was registered with.
	URN    string `json:"urn,omitempty"`
	Type   string `json:"type,omitempty"`
	Parent string `json:"parent,omitempty"`
}

// checker runs the clauses against one callback.
type checker struct {
	cb     registered
	k      *kind
	conn   *grpc.ClientConn
	pid    int // the program's process, for the resource clause
	logf   func(format string, args ...any)
	errors []string // every error message the server sent, for no-stack-trace
	// down lists the bad inputs after which the server did not answer.
	down    []string
	upAfter []string
	// baseline is the answer's problems (as judged) for the full request
	// sent alone to a fresh server: later calls of the same request must
	// get the same answer. Identity itself is the round-trip clauses' job.
	baseline    string
	hasBaseline bool
	// target is shared by the callbacks of one server.
	target *target
	// inputs are the bad inputs sent, as they went on the wire.
	inputs []wireInput
	// unavailable is set when a call found the server not answering.
	unavailable bool
	// repetition counts the runs of a clause (see -count), from 0.
	repetition int
}

// wireInput is a bad input the kit sent: the CallbackInvokeRequest's bytes,
// in hexadecimal.
type wireInput struct {
	Callback string `json:"callback"`
	Input    string `json:"input"`
	Size     int    `json:"size"`
	Hex      string `json:"hex"`
}

// sentInput records a bad input as it goes on the wire.
func (c *checker) sentInput(name string, msg []byte) {
	for _, in := range c.inputs {
		if in.Input == name && in.Size == len(msg) && in.Hex == hex.EncodeToString(msg) {
			return
		}
	}
	in := wireInput{Callback: c.cb.Name, Input: name, Size: len(msg), Hex: hex.EncodeToString(msg)}
	c.inputs = append(c.inputs, in)
	shown := in.Hex
	if len(shown) > 512 {
		shown = shown[:512] + fmt.Sprintf("... (%d bytes; -json has them all)", in.Size)
	}
	c.logf("  sent %s to %s %q: %s", name, c.cb.Kind, c.cb.Name, shown)
}

// request builds the kind's request carrying props (see kind.request).
func (c *checker) request(props *structpb.Struct, every bool) proto.Message {
	return c.k.request(c, props, every)
}

// callResp sends req and returns the encoded answer.
func (c *checker) callResp(ctx context.Context, req proto.Message) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := invokeRaw(ctx, c.conn, c.cb.Token, mustMarshal(req))
	if err != nil {
		c.noteErr(err)
	}
	return resp, err
}

// target is one callbacks server.
type target struct {
	// dead names the bad input after which the server stopped answering.
	dead string
	// growth is the resource clause's result, measured once per server
	// and repetition (see -count), and the repetition it was measured in.
	growth    *result
	growthRun int
}

// sameAsBaseline checks problems against the baseline answer.
func (c *checker) sameAsBaseline(problems []string) error {
	got := strings.Join(problems, "; ")
	if c.hasBaseline && got != c.baseline {
		if got == "" {
			got = "the identity answer"
		}
		return fmt.Errorf("the answer differs from the one the same request got alone: %s", got)
	}
	return nil
}

// call sends req and judges the answer: problems is nil for the identity
// answer; err is the call's error.
func (c *checker) call(ctx context.Context, req proto.Message) (problems []string, err error) {
	b, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("kit: encoding the request: %w", err)
	}
	return c.callRaw(ctx, req, b)
}

func (c *checker) callRaw(ctx context.Context, req proto.Message, b []byte) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := invokeRaw(ctx, c.conn, c.cb.Token, b)
	if err != nil {
		c.noteErr(err)
		return nil, err
	}
	return c.k.judge(req, resp), nil
}

// callEnvelope sends an encoded CallbackInvokeRequest.
func (c *checker) callEnvelope(ctx context.Context, msg []byte) ([]byte, error) {
	resp, err := invokeEnvelope(ctx, c.conn, msg)
	if err != nil {
		c.noteErr(err)
	}
	return resp, err
}

func (c *checker) noteErr(err error) {
	if status.Code(err) == codes.Unavailable {
		c.unavailable = true
	}
	if s, ok := status.FromError(err); ok {
		c.errors = append(c.errors, s.Message())
	}
}

// fullRequest is the engine's request with every kind of value and every
// option field; small, for the liveness probe and the concurrent calls.
func (c *checker) fullRequest() proto.Message {
	return c.request(zooProperties(false), true)
}

// alive reports whether the server still answers an ordinary request with
// the identity answer.
func (c *checker) alive(ctx context.Context) error {
	problems, err := c.call(ctx, c.fullRequest())
	if err != nil {
		return err
	}
	return c.sameAsBaseline(problems)
}

// afterBadInput records whether the server survived the bad input named.
func (c *checker) afterBadInput(ctx context.Context, input string) {
	if err := c.alive(ctx); err != nil {
		c.down = append(c.down, fmt.Sprintf("after %s: %s", input, describe(err)))
		if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
			c.target.dead = fmt.Sprintf("%s %s", c.cb.Kind, input)
		}
		return
	}
	c.upAfter = append(c.upAfter, input)
}

func describe(err error) string {
	if s, ok := status.FromError(err); ok {
		msg := s.Message()
		if len(msg) > 200 {
			msg = msg[:197] + "..."
		}
		return fmt.Sprintf("%s %q", s.Code(), msg)
	}
	return err.Error()
}

// result is one clause's verdict for one callback.
type result struct {
	verdict, evidence string
}

func passed(format string, args ...any) result { return result{pass, fmt.Sprintf(format, args...)} }
func failed(format string, args ...any) result { return result{fail, fmt.Sprintf(format, args...)} }
func notApplicable(format string, args ...any) result {
	return result{na, fmt.Sprintf(format, args...)}
}

func fromCall(what string, problems []string, err error) result {
	switch {
	case err != nil:
		return failed("%s: %s", what, describe(err))
	case len(problems) > 0:
		return failed("%s: %s", what, strings.Join(problems, "; "))
	default:
		return passed("%s: identity answer", what)
	}
}

// clause is one line of the contract.
type clause struct {
	ID, Level, Title, Why string
	// run checks one callback. Nil run marks a clause computed from the
	// others (stays-up, no-stack-trace).
	run func(ctx context.Context, c *checker) result
	// kinds are the kinds of callback the clause applies to, nil for
	// every kind: a clause about values sent back has no row for hooks,
	// which send none back.
	kinds []string
	// phase orders the runs: every callback goes through phase 0 (ordinary
	// requests) before any goes through phase 1 (bad inputs, which may
	// bring a server down for every callback it serves), then phase 2 (the
	// largest payload).
	phase int
}

// appliesTo reports whether the clause applies to the kind k.
func (cl clause) appliesTo(k string) bool {
	return cl.kinds == nil || slices.Contains(cl.kinds, k)
}

// Kinds that send values back: transforms (properties and options) and
// migrations (state).
var (
	transformKinds = []string{kindResourceTransform, kindInvokeTransform}
	valueKinds     = []string{kindResourceTransform, kindInvokeTransform, kindStateMigration}
)

// The contract. The order is the order in which the clauses run.
var contract = []clause{
	{ID: "request/every-field", Level: must,
		Title: "a request with every field set (properties of every kind, every option) gets the identity answer",
		Why:   "the engine sends whatever the program registered; a callback that chokes on a field fails the deployment",
		run: func(ctx context.Context, c *checker) result {
			p, err := c.call(ctx, c.fullRequest())
			if err == nil {
				c.baseline, c.hasBaseline = strings.Join(p, "; "), true
			}
			return fromCall("every field", p, err)
		}},
	{ID: "round-trip/properties", Level: must, kinds: transformKinds,
		Title: "an identity transform returns the properties as sent: secrets, unknowns, output values with dependencies, resource references, assets, archives",
		Why:   "the engine replaces the inputs with what comes back: a lost secret is disclosed, a lost dependency reorders the deployment",
		run: func(ctx context.Context, c *checker) result {
			p, err := c.call(ctx, c.request(zooProperties(false), true))
			return fromCall("properties", only(p, "properties: ", "args: "), err)
		}},
	{ID: "round-trip/options", Level: must, kinds: transformKinds,
		Title: "an identity transform returns every option field as sent (or none)",
		Why:   "the engine replaces the options wholesale with the answer's: a dropped field is lost for good",
		run: func(ctx context.Context, c *checker) result {
			p, err := c.call(ctx, c.request(&structpb.Struct{}, true))
			return fromCall("every option", only(p, "options: "), err)
		}},
	{ID: "round-trip/byte-strings", Level: must, kinds: transformKinds,
		Title: "a callback registered with accepts_byte_string returns byte strings as sent",
		Why:   "strings that are not UTF-8 reach the callback only in that encoding; altering them corrupts the resource",
		run: func(ctx context.Context, c *checker) result {
			if !c.cb.AcceptsByteString {
				return notApplicable("registered without accepts_byte_string")
			}
			p, err := c.call(ctx, c.request(zooProperties(true), true))
			return fromCall("byte string", only(p, "properties: byteString", "args: byteString"), err)
		}},
	{ID: "result/changes", Level: must,
		Title: "the change the program's function makes arrives exactly: a transform's added property and changed option, a hook's refusal, an error hook's retry, a migration's rewritten field",
		Why:   "the engine acts on the answer, not on what the function returned: a server that answers {} or drops the result loses the user's work",
		run: func(ctx context.Context, c *checker) result {
			req := c.changeRequest(false)
			resp, err := c.callResp(ctx, req)
			if r, ok := neverRan(err); ok {
				return r
			}
			v := c.judgeChange(req, resp, err)
			if v.missing != "" {
				return failed("the function's result was lost: %s", v.missing)
			}
			if len(v.changes) > 0 {
				return failed("%s", strings.Join(v.changes, "; "))
			}
			ev := changeEvidence(c)
			if c.cb.Kind == kindStateMigration {
				got, err := checkMigrationFailure(ctx, c)
				if err != nil {
					return failed("%s arrived; but %v", ev, err)
				}
				ev += "; a failing migration: " + got
			}
			return passed("%s", ev)
		}},
	{ID: "round-trip/value-shapes", Level: must, kinds: valueKinds,
		Title: "values a lossy runtime breaks come back exactly in a changed result: a leading U+FEFF, -0, 2^53 and its neighbours",
		Why:   "the engine stores what comes back: a stripped byte order mark or a -0 turned into 0 changes the resource's inputs, a rounded integer changes an ID or a size",
		run: func(ctx context.Context, c *checker) result {
			req := c.changeRequest(false)
			resp, err := c.callResp(ctx, req)
			if r, ok := neverRan(err); ok {
				return r
			}
			v := c.judgeChange(req, resp, err)
			switch {
			case v.missing != "":
				return failed("the function's result was lost, and the values with it: %s", v.missing)
			case len(v.shapes) > 0:
				return failed("%s", strings.Join(v.shapes, "; "))
			}
			return passed("%s came back exactly", strings.Join(shapeKeys, ", "))
		}},
	{ID: "round-trip/unknown-fields", Level: must,
		Title: "unknown protobuf fields in a request are accepted, and those of a transform's options come back byte for byte in the changed options",
		Why:   "the engine replaces a resource's options wholesale with a transform's: a field a newer engine sends and the server drops is lost for the resource",
		run: func(ctx context.Context, c *checker) result {
			req := c.changeRequest(true)
			resp, err := c.callResp(ctx, req)
			if r, ok := neverRan(err); ok {
				return r
			}
			v := c.judgeChange(req, resp, err)
			switch {
			case v.missing != "":
				return failed("with unknown fields in the request, %s", v.missing)
			case len(v.unknown) > 0:
				return failed("%s", strings.Join(v.unknown, "; "))
			case !c.k.transform && len(v.changes) > 0:
				return failed("with unknown fields in the request: %s", strings.Join(v.changes, "; "))
			}
			if c.k.transform {
				// Known fields the answer lost are result/changes' to report.
				return passed("the options' unknown fields (top level and nested) came back byte for byte")
			}
			return passed("a request with unknown fields got the function's answer")
		}},
	{ID: "request/no-options", Level: must,
		Title: "a request with no options (and only the required fields) gets the identity answer",
		Why:   "the engine leaves unset what the program did not set; an older engine sends no hook options at all",
		run: func(ctx context.Context, c *checker) result {
			req := c.request(&structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStringValue("b")}}, false)
			c.sentInput("no-options", envelope(c.cb.Token, mustMarshal(req)))
			p, err := c.call(ctx, req)
			r := fromCall("no options", p, err)
			c.afterBadInput(ctx, "no-options")
			return r
		}},
	{ID: "concurrency/1000", Level: must,
		Title: "1,000 concurrent calls all get the answer the same request gets alone",
		Why:   "the engine calls transforms and hooks for every resource in parallel",
		run: func(ctx context.Context, c *checker) result {
			start := time.Now()
			fails := concurrent(ctx, c, 1000)
			if len(fails) > 0 {
				return failed("%d of 1000 failed, e.g. %s", len(fails), fails[0])
			}
			return passed("1000 of 1000 in %v", time.Since(start).Round(time.Millisecond))
		}},
	{ID: "deadline", Level: must,
		Title: "calls whose deadline passes end with DeadlineExceeded and leave the server serving",
		Why:   "the engine gives up on calls (a cancelled deployment); the server must not wedge",
		run: func(ctx context.Context, c *checker) result {
			return expire(ctx, c, func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, time.Millisecond)
			}, codes.DeadlineExceeded)
		}},
	{ID: "cancellation", Level: must,
		Title: "calls the engine cancels end with Canceled and leave the server serving",
		Why:   "Ctrl-C cancels every call in flight; the server must survive to serve the next deployment step",
		run: func(ctx context.Context, c *checker) result {
			return expire(ctx, c, func(ctx context.Context) (context.Context, context.CancelFunc) {
				cctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(2*time.Millisecond, cancel)
				return cctx, cancel
			}, codes.Canceled)
		}},
	{ID: "payload/5MiB", Level: must,
		Title: "a request of 5 MiB gets the identity answer: gRPC's default 4 MiB receive limit is raised",
		Why:   "the engine sends messages up to 400 MiB; a server left at gRPC's default refuses the first large resource with ResourceExhausted",
		run: func(ctx context.Context, c *checker) result {
			return big(ctx, c, 5<<20)
		}},
	{ID: "resources/no-growth", Level: should,
		Title: "serving leaves no threads or file descriptors behind",
		Why:   "a long deployment calls callbacks hundreds of thousands of times",
		run: func(ctx context.Context, c *checker) result {
			if c.target.growth == nil || c.target.growthRun != c.repetition {
				r := growth(ctx, c)
				c.target.growth, c.target.growthRun = &r, c.repetition
				return r
			}
			r := *c.target.growth
			r.evidence = "measured once per server: " + r.evidence
			return r
		}},
	{ID: "migration/local-rules", Level: should, kinds: []string{kindStateMigration},
		Title: "a migration's result that breaks a rule the engine's validator checks from the old state and the result alone is refused before it is sent",
		Why:   "the engine refuses it anyway, with a message about state; the server can name the rule and the function",
		run:   checkLocalRules},
	{ID: "unknown-token", Level: should, phase: 1,
		Title: "a call with an unknown token fails with NotFound",
		Why:   "the engine's message then says the callback is gone, not that it failed",
		run: func(ctx context.Context, c *checker) result {
			cc := *c
			cc.cb.Token = "00000000-0000-4000-8000-00000000c0f0"
			b := mustMarshal(c.fullRequest())
			c.sentInput("unknown-token", envelope(cc.cb.Token, b))
			_, err := cc.callRaw(ctx, nil, b)
			c.errors = cc.errors
			defer c.afterBadInput(ctx, "unknown-token")
			switch code := codeOf(err); {
			case err == nil:
				return failed("an unknown token was answered as if registered")
			case code == codes.NotFound:
				return passed("%s", describe(err))
			default:
				return failed("%s, want NotFound", describe(err))
			}
		}},
	{ID: "bad-payload", Level: should, phase: 1,
		Title: "a payload that does not decode fails with InvalidArgument naming the kind",
		Why:   "the engine shows the message; it must say which callback got what",
		run: func(ctx context.Context, c *checker) result {
			bad := []byte{0x0a, 0x05, 0x61}
			c.sentInput("bad-payload", envelope(c.cb.Token, bad))
			_, err := c.callRaw(ctx, c.fullRequest(), bad)
			defer c.afterBadInput(ctx, "bad-payload")
			switch s, _ := status.FromError(err); {
			case err == nil:
				return failed("a payload that does not decode (%x) was answered", bad)
			case s.Code() != codes.InvalidArgument:
				return failed("%s, want InvalidArgument", describe(err))
			case !namesKind(c.k, s.Message()):
				return failed("%s does not name the kind (%s)", describe(err), strings.Join(c.k.names, "/"))
			default:
				return passed("%s", describe(err))
			}
		}},
	{ID: "invalid-utf8", Level: should, phase: 1,
		Title: "a string that is not UTF-8 (outside the byte-string encoding) is refused, not altered",
		Why:   "protobuf strings are UTF-8; a server that decodes them leniently hands the user different bytes",
		run: func(ctx context.Context, c *checker) result {
			defer c.afterBadInput(ctx, "invalid-utf8")
			const placeholder = "UTF8-PLACEHOLDER"
			bad := []byte("UT\xff\xfe-not-utf8-\xc3")
			var b []byte
			if c.cb.Kind == kindStateMigration {
				// The state is bytes: the string that must be UTF-8 is the URN.
				req := &pulumirpc.StateMigrationRequest{Urn: placeholder, OldState: c.stateWith(nil, false)}
				b = mustMarshal(req)
			} else {
				b = mustMarshal(c.request(&structpb.Struct{Fields: map[string]*structpb.Value{"bad": structpb.NewStringValue(placeholder)}}, true))
			}
			i := bytes.Index(b, []byte(placeholder))
			copy(b[i:], bad)
			c.sentInput("invalid-utf8", envelope(c.cb.Token, b))
			ctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			resp, err := invokeRaw(ctx, c.conn, c.cb.Token, b)
			if err != nil {
				c.noteErr(err)
				if r, ok := neverRan(err); ok {
					return r
				}
				if code := codeOf(err); code == codes.DeadlineExceeded {
					return failed("no answer within %v", callTimeout)
				}
				return passed("refused: %s", describe(err))
			}
			switch {
			case c.cb.Kind == kindStateMigration:
				return failed("accepted: the migration ran for a URN that cannot be what was sent")
			case !c.k.transform:
				return failed("accepted: the hook ran with a string that cannot be what was sent")
			case len(resp) == 0 || bytes.Contains(resp, bad):
				return passed("answered without altering the bytes")
			default:
				return failed("answered with the string altered")
			}
		}},
	{ID: "deep-nesting", Level: should, phase: 1,
		Title: "deeply nested values are handled, in time linear in depth",
		Why:   "the engine forwards whatever nesting the program built; quadratic decoding stalls the deployment",
		run:   deepNesting},
	{ID: "payload/64MiB", Level: must, phase: 2,
		Title: "a request with a 64 MiB property gets the identity answer",
		Why:   "programs put large documents (policies, templates, archives) in properties",
		run: func(ctx context.Context, c *checker) result {
			return big(ctx, c, 64<<20)
		}},
	{ID: "payload/300MiB", Level: should, phase: 3,
		Title: "a request with a 300 MiB property gets the identity answer",
		Why:   "the engine sends messages up to 400 MiB",
		run: func(ctx context.Context, c *checker) result {
			return big(ctx, c, 300<<20)
		}},
	{ID: "stays-up", Level: must,
		Title: "the server answers an ordinary request after each bad input (no options, unknown token, bad payload, invalid UTF-8, deep nesting)",
		Why:   "one bad call must not take every later callback of the deployment down with it"},
	{ID: "no-stack-trace", Level: should,
		Title: "no error message on the wire carries a stack trace",
		Why:   "the engine shows messages to users; stacks leak paths and bury the cause"},
}

// badInputs are the clauses after which stays-up checks the server.
var badInputs = []string{"request/no-options", "unknown-token", "bad-payload", "invalid-utf8", "deep-nesting"}

func changeEvidence(c *checker) string {
	switch c.cb.Kind {
	case kindResourceTransform:
		return fmt.Sprintf("%q added and retain_on_delete set, every other property and option as sent", changeKey)
	case kindInvokeTransform:
		return fmt.Sprintf("%q added and version set to %s, every other argument and option as sent", changeKey, changeVersion)
	case kindResourceHook:
		return fmt.Sprintf("%s refused with %q", refuseName, refusal)
	case kindErrorHook:
		return "a retry after the first error"
	default:
		return fmt.Sprintf("%s set to 2 on both resources, every other field as sent", versionKey)
	}
}

// neverRan turns the errors that say the callback never ran (the server
// did not answer, or did not know the token) into a "not run" verdict.
func neverRan(err error) (result, bool) {
	switch codeOf(err) {
	case codes.Unavailable:
		return skippedResult("the server did not answer: %s", describe(err)), true
	case codes.NotFound:
		return skippedResult("the callback never ran: the server did not find its token: %s", describe(err)), true
	}
	return result{}, false
}

func codeOf(err error) codes.Code { return status.Code(err) }

func statusMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

func skippedResult(format string, args ...any) result {
	return result{skipped, fmt.Sprintf(format, args...)}
}

// only keeps the problems with one of the prefixes.
func only(problems []string, prefixes ...string) []string {
	var out []string
	for _, p := range problems {
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// about keeps the problems about the property key, and every problem of a
// hook (which has no properties to return).
func about(problems []string, key string) []string {
	var out []string
	for _, p := range problems {
		if strings.HasPrefix(p, "properties: "+key) || strings.HasPrefix(p, "args: "+key) ||
			(!strings.HasPrefix(p, "properties: ") && !strings.HasPrefix(p, "args: ") && !strings.HasPrefix(p, "options: ")) {
			out = append(out, p)
		}
	}
	return out
}

// nested returns a value nested depth lists deep.
func nested(depth int) *structpb.Value {
	v := structpb.NewStringValue("bottom")
	for range depth {
		v = structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{v}})
	}
	return v
}

// concurrent sends n identity requests at once and returns the failures.
func concurrent(ctx context.Context, c *checker, n int) []string {
	b, err := proto.Marshal(c.fullRequest())
	if err != nil {
		return []string{err.Error()}
	}
	req := c.fullRequest()
	var mu sync.Mutex
	var fails []string
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, 2*callTimeout)
			defer cancel()
			resp, err := invokeRaw(ctx, c.conn, c.cb.Token, b)
			var differs error
			if err == nil {
				differs = c.sameAsBaseline(c.k.judge(req, resp))
			}
			if err != nil || differs != nil {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					c.noteErr(err)
					fails = append(fails, describe(err))
				} else {
					fails = append(fails, differs.Error())
				}
			}
		}()
	}
	wg.Wait()
	return fails
}

// expirePayload is the size of the calls that end early: large enough that
// they end while the server is at work, and below gRPC's default 4 MiB
// receive limit, which payload/5MiB checks on its own, so that a server
// left at the default fails that clause and not this one by chance.
const expirePayload = 3 << 20

// expire sends calls that end early (a deadline or a cancellation), each
// carrying 3 MiB so that they end while the server is at work, then checks
// that the server still serves. A call may end early or be answered in
// time, whichever comes first; neither changes the verdict, which is that no
// call ends otherwise and that the server serves on.
func expire(ctx context.Context, c *checker, mk func(context.Context) (context.Context, context.CancelFunc), want codes.Code) result {
	b := bigRequest(c, expirePayload)
	counts := map[codes.Code]int{}
	var other []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := mk(ctx)
			defer cancel()
			_, err := invokeEnvelope(cctx, c.conn, b)
			mu.Lock()
			defer mu.Unlock()
			code := status.Code(err)
			counts[code]++
			if code != codes.OK && code != want {
				c.noteErr(err)
				other = append(other, describe(err))
			}
		}()
	}
	wg.Wait()
	ev := fmt.Sprintf("20 calls of 3 MiB: %d %s, %d answered in time", counts[want], want, counts[codes.OK])
	if len(other) > 0 {
		return failed("%s; others: %s", ev, other[0])
	}
	if err := c.alive(ctx); err != nil {
		return failed("%s; then the server did not answer: %s", ev, describe(err))
	}
	return passed("%s; then an ordinary call succeeded", ev)
}

// bigRequest encodes the envelope of a request whose properties hold one
// string of n bytes, in one buffer.
func bigRequest(c *checker, n int) []byte {
	if c.cb.Kind == kindStateMigration {
		return c.bigMigration(n)
	}
	head, err := proto.Marshal(c.request(nil, true))
	if err != nil {
		panic(err)
	}
	const key = "big"
	valueLen := 1 + protowire.SizeVarint(uint64(n)) + n // Value.string_value
	entryLen := 1 + protowire.SizeBytes(len(key)) + 1 + protowire.SizeVarint(uint64(valueLen)) + valueLen
	structLen := 1 + protowire.SizeVarint(uint64(entryLen)) + entryLen
	reqLen := len(head) + protowire.SizeTag(protowire.Number(c.k.propsField)) + protowire.SizeVarint(uint64(structLen)) + structLen
	b := make([]byte, 0, reqLen+len(c.cb.Token)+32)
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, c.cb.Token)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(reqLen))
	b = append(b, head...)
	b = protowire.AppendTag(b, protowire.Number(c.k.propsField), protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(structLen))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // Struct.fields entry
	b = protowire.AppendVarint(b, uint64(entryLen))
	b = protowire.AppendTag(b, 1, protowire.BytesType) // key
	b = protowire.AppendString(b, key)
	b = protowire.AppendTag(b, 2, protowire.BytesType) // value
	b = protowire.AppendVarint(b, uint64(valueLen))
	b = protowire.AppendTag(b, 3, protowire.BytesType) // string_value
	b = protowire.AppendVarint(b, uint64(n))
	start := len(b)
	b = b[:start+n]
	fill := b[start:]
	done := copy(fill, "conformance-kit-")
	for done < len(fill) {
		done += copy(fill[done:], fill[:done])
	}
	return b
}

// big sends a request with an n-byte property and checks the answer without
// decoding more than it must.
func big(ctx context.Context, c *checker, n int) result {
	b := bigRequest(c, n)
	ctx, cancel := context.WithTimeout(ctx, 4*callTimeout)
	defer cancel()
	start := time.Now()
	resp, err := c.callEnvelope(ctx, b)
	el := time.Since(start)
	b = nil
	defer runtime.GC()
	size := fmt.Sprintf("%d MiB", n>>20)
	if err != nil {
		if status.Code(err) == codes.Unavailable {
			c.target.dead = fmt.Sprintf("%s payload/%s", c.cb.Kind, strings.ReplaceAll(size, " ", ""))
		}
		return failed("%s: %s after %v", size, describe(err), el.Round(time.Millisecond))
	}
	if c.k.transform && len(resp) > 0 && len(resp) < n {
		return failed("%s: the answer (%d bytes) cannot hold the property", size, len(resp))
	}
	if !c.k.transform {
		if p := c.k.judge(nil, resp); len(p) > 0 {
			return failed("%s: %s", size, strings.Join(p, "; "))
		}
	}
	return passed("%s: answered in %v", size, el.Round(time.Millisecond))
}

// growth measures the program's threads and file descriptors around two
// rounds of 1,000 concurrent calls, after a first round that warms the
// server up.
func growth(ctx context.Context, c *checker) result {
	if runtime.GOOS != "linux" || c.pid == 0 {
		return notApplicable("needs Linux /proc and the program's process")
	}
	// One round to warm the server up (a runtime keeps the threads it
	// started under load), then the baseline.
	if fails := concurrent(ctx, c, 1000); len(fails) > 0 {
		return failed("%d calls failed, e.g. %s", len(fails), fails[0])
	}
	before, err := usage(c.pid)
	if err != nil {
		return notApplicable("reading /proc: %v", err)
	}
	for range 2 {
		if fails := concurrent(ctx, c, 1000); len(fails) > 0 {
			return failed("%d calls failed, e.g. %s", len(fails), fails[0])
		}
	}
	// Give the counts time to settle, as long as a call may take.
	var after procUsage
	deadline := time.Now().Add(callTimeout)
	for {
		after, err = usage(c.pid)
		if err != nil {
			return failed("the program's process went away: %v", err)
		}
		if after.threads <= before.threads+2 && after.fds <= before.fds || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ev := fmt.Sprintf("threads %d -> %d, fds %d -> %d over 2000 more calls", before.threads, after.threads, before.fds, after.fds)
	if after.threads > before.threads+2 || after.fds > before.fds {
		return failed("%s", ev)
	}
	return passed("%s", ev)
}

// clock measures how long the server works on a call. Where Linux tells
// it, it is the CPU time of the program's processes (the run time of each
// of their threads), which a busy machine does not stretch as it stretches
// the time on the wall; elsewhere it is the wall clock.
type clock struct {
	what string
	now  func() time.Duration
}

func newClock(pid int) clock {
	if runtime.GOOS == "linux" && pid != 0 {
		pids := append([]int{pid}, descendants(pid)...)
		if _, err := cpuTime(pids); err == nil {
			return clock{what: "server CPU time", now: func() time.Duration {
				d, _ := cpuTime(pids)
				return d
			}}
		}
	}
	start := time.Now()
	return clock{what: "wall time", now: func() time.Duration { return time.Since(start) }}
}

// cpuTime sums the run time of every thread of the processes pids, in
// /proc/PID/task/TID/schedstat (nanoseconds). It fails if the first
// process has none.
func cpuTime(pids []int) (time.Duration, error) {
	var total time.Duration
	for i, p := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", p))
		if len(tasks) == 0 && i == 0 {
			return 0, fmt.Errorf("no /proc/%d/task/*/schedstat", p)
		}
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // the thread has ended
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total, nil
}

type procUsage struct{ threads, fds int }

// usage sums the threads and open file descriptors of pid and its
// descendants (a program may be started through a wrapper).
func usage(pid int) (procUsage, error) {
	var u procUsage
	pids := append([]int{pid}, descendants(pid)...)
	for i, p := range pids {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			if i == 0 {
				return u, err
			}
			continue
		}
		for _, line := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				u.threads += n
			}
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p))
		if err == nil {
			u.fds += len(fds)
		}
	}
	return u, nil
}

func descendants(pid int) []int {
	entries, _ := filepath.Glob("/proc/[0-9]*/stat")
	children := map[int][]int{}
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(filepath.Dir(e)), "/"), "/"))
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, ch := range children[p] {
			out = append(out, ch)
			queue = append(queue, ch)
		}
	}
	slices.Sort(out)
	return out
}

// stackTrace matches the stack traces of the common runtimes.
var stackTrace = regexp.MustCompile(`goroutine \d+ \[|\.go:\d+|\n\s+at .+\(.+:\d+:\d+\)|Traceback \(most recent call last\)|\n\s+at [\w.<>$]+\(.*\) in .+:line \d+|\n\s+at [\w.$]+\([\w]+\.java:\d+\)`)

// stayedUp is the stays-up verdict: a pass only when every bad input
// selected was sent and the server answered after each.
func (c *checker) stayedUp(selected func(string) bool) result {
	if len(c.down) > 0 {
		return failed("%s", strings.Join(c.down, "; "))
	}
	var want, unsent []string
	for _, id := range badInputs {
		if !selected(id) {
			continue
		}
		name := strings.TrimPrefix(id, "request/")
		want = append(want, name)
		if !slices.Contains(c.upAfter, name) {
			unsent = append(unsent, name)
		}
	}
	switch {
	case len(want) == 0:
		return notApplicable("-run selected none of the bad inputs (%s)", strings.Join(badInputs, ", "))
	case len(unsent) > 0 && c.target.dead != "":
		return skippedResult("%s never sent: the server had stopped answering after %s", strings.Join(unsent, ", "), c.target.dead)
	case len(unsent) > 0:
		return skippedResult("%s never sent", strings.Join(unsent, ", "))
	}
	return passed("answered after %s", strings.Join(once(c.upAfter), ", "))
}

// once returns ss without repeats, in order (with -count, each bad input
// is sent several times).
func once(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (c *checker) noStackTrace() result {
	for _, m := range c.errors {
		if stackTrace.MatchString(m) {
			loc := stackTrace.FindStringIndex(m)
			from := max(loc[0]-60, 0)
			return failed("%q", strings.TrimSpace(m[from:min(loc[1]+40, len(m))]))
		}
	}
	if len(c.errors) == 0 {
		return notApplicable("the server sent no error message to look at")
	}
	return passed("%d error messages, none with a stack trace", len(c.errors))
}

// Deep nesting: the same number of nested lists, 40,000, sent once as 80
// values nested 500 deep and once as 10 values nested 4,000 deep. A server
// that works in time linear in the size of the request takes as long for
// both; one whose cost grows with the square of the depth takes 8 times
// longer for the deeper. Requests of equal size cancel what a server does
// per byte and per call, and the median of 7 rounds what a garbage
// collector or a busy machine adds to one of them.
const (
	shallowDepth, shallowValues = 500, 80
	deepDepth, deepValues       = 4000, 10
	nestingRounds               = 7
	// nestingLimit is the ratio above which the cost is not linear: 4,
	// twice what linear servers measured at most (a decoder's stack grows
	// with the depth: 0.9 to 2.3 for this module's JSON migrations) and
	// half the quadratic 8.
	nestingLimit = 4.0
	// nestingFloor is the least time the ratio is taken over, so that a
	// server too fast to measure is not judged by noise.
	nestingFloor = time.Millisecond
)

func deepNesting(ctx context.Context, c *checker) result {
	defer c.afterBadInput(ctx, "deep-nesting")
	clock := newClock(c.pid)
	// call sends values nested depth deep and says how long the server
	// worked on it.
	call := func(depth, values int) (time.Duration, error) {
		fields := map[string]*structpb.Value{}
		for i := range values {
			fields[fmt.Sprintf("deep%d", i)] = nested(depth)
		}
		req := c.request(&structpb.Struct{Fields: fields}, true)
		b, err := proto.Marshal(req)
		if err != nil {
			return 0, fmt.Errorf("kit: encoding the request: %w", err)
		}
		c.sentInput(fmt.Sprintf("deep-nesting %dx%d", values, depth), envelope(c.cb.Token, b))
		start := clock.now()
		p, err := c.callRaw(ctx, req, b)
		el := clock.now() - start
		if err != nil {
			return 0, fmt.Errorf("%d values %d deep: %s", values, depth, describe(err))
		}
		if p = about(p, "deep"); len(p) > 0 {
			return 0, fmt.Errorf("%d values %d deep: %s", values, depth, strings.Join(p, "; "))
		}
		return el, nil
	}
	// First what does not depend on time: the deepest values come back as
	// sent.
	if _, err := call(deepDepth, deepValues); err != nil {
		if r, ok := neverRan(err); ok && c.target.dead != "" {
			return r
		}
		return failed("%v", err)
	}
	var shallow, deep []time.Duration
	for range nestingRounds {
		s, err := call(shallowDepth, shallowValues)
		if err != nil {
			return failed("%v", err)
		}
		d, err := call(deepDepth, deepValues)
		if err != nil {
			return failed("%v", err)
		}
		shallow, deep = append(shallow, s), append(deep, d)
	}
	ms, md := median(shallow), median(deep)
	ratio := float64(md) / float64(max(ms, nestingFloor))
	ev := fmt.Sprintf("%s, medians of %d: %d values %d deep %v, %d values %d deep %v; ratio %.1f (linear ~1, quadratic ~%d; limit %.0f)",
		clock.what, nestingRounds, shallowValues, shallowDepth, ms.Round(time.Microsecond), deepValues, deepDepth,
		md.Round(time.Microsecond), ratio, deepDepth/shallowDepth, nestingLimit)
	if ratio > nestingLimit {
		return failed("%s", ev)
	}
	return passed("%s", ev)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
