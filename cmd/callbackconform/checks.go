package main

import (
	"bytes"
	"context"
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
// machine answers in time on a busy one.
const callTimeout = 30 * time.Second

// registered is a callback the program registered with the engine.
type registered struct {
	Kind              string `json:"kind"`
	Name              string `json:"name,omitempty"`
	Target            string `json:"target"`
	Token             string `json:"token"`
	AcceptsByteString bool   `json:"acceptsByteString"`
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
}

// target is one callbacks server.
type target struct {
	// dead names the bad input after which the server stopped answering.
	dead string
	// growth is the resource clause's result, measured once per server.
	growth *result
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

func (c *checker) noteErr(err error) {
	if s, ok := status.FromError(err); ok {
		c.errors = append(c.errors, s.Message())
	}
}

// fullRequest is the engine's request with every kind of value and every
// option field; small, for the liveness probe and the concurrent calls.
func (c *checker) fullRequest() proto.Message {
	return c.k.request(zooProperties(false), true)
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
	// phase orders the runs: every callback goes through phase 0 (ordinary
	// requests) before any goes through phase 1 (bad inputs, which may
	// bring a server down for every callback it serves), then phase 2 (the
	// largest payload).
	phase int
}

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
	{ID: "round-trip/properties", Level: must,
		Title: "an identity transform returns the properties as sent: secrets, unknowns, output values with dependencies, resource references, assets, archives",
		Why:   "the engine replaces the inputs with what comes back: a lost secret is disclosed, a lost dependency reorders the deployment",
		run: func(ctx context.Context, c *checker) result {
			if !c.k.transform {
				return notApplicable("hooks return no properties")
			}
			p, err := c.call(ctx, c.k.request(zooProperties(false), true))
			return fromCall("properties", only(p, "properties: ", "args: "), err)
		}},
	{ID: "round-trip/options", Level: must,
		Title: "an identity transform returns every option field as sent (or none)",
		Why:   "the engine replaces the options wholesale with the answer's: a dropped field is lost for good",
		run: func(ctx context.Context, c *checker) result {
			if !c.k.transform {
				return notApplicable("hooks return no options")
			}
			p, err := c.call(ctx, c.k.request(&structpb.Struct{}, true))
			return fromCall("every option", only(p, "options: "), err)
		}},
	{ID: "round-trip/byte-strings", Level: must,
		Title: "a callback registered with accepts_byte_string returns byte strings as sent",
		Why:   "strings that are not UTF-8 reach the callback only in that encoding; altering them corrupts the resource",
		run: func(ctx context.Context, c *checker) result {
			if !c.k.transform {
				return notApplicable("hooks return no properties")
			}
			if !c.cb.AcceptsByteString {
				return notApplicable("registered without accepts_byte_string")
			}
			p, err := c.call(ctx, c.k.request(zooProperties(true), true))
			return fromCall("byte string", only(p, "properties: byteString", "args: byteString"), err)
		}},
	{ID: "request/no-options", Level: must,
		Title: "a request with no options (and only the required fields) gets the identity answer",
		Why:   "the engine leaves unset what the program did not set; an older engine sends no hook options at all",
		run: func(ctx context.Context, c *checker) result {
			p, err := c.call(ctx, c.k.request(&structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStringValue("b")}}, false))
			r := fromCall("no options", p, err)
			c.afterBadInput(ctx, "no-options")
			return r
		}},
	{ID: "unknown-token", Level: should, phase: 1,
		Title: "a call with an unknown token fails with NotFound",
		Why:   "the engine's message then says the callback is gone, not that it failed",
		run: func(ctx context.Context, c *checker) result {
			cc := *c
			cc.cb.Token = "00000000-0000-4000-8000-00000000c0f0"
			_, err := cc.call(ctx, c.fullRequest())
			c.errors = cc.errors
			defer c.afterBadInput(ctx, "unknown-token")
			switch code := status.Code(err); {
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
			_, err := c.callRaw(ctx, c.fullRequest(), []byte{0x0a, 0x05, 0x61})
			defer c.afterBadInput(ctx, "bad-payload")
			switch s, _ := status.FromError(err); {
			case err == nil:
				return failed("a payload that does not decode was answered")
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
			req := c.k.request(&structpb.Struct{Fields: map[string]*structpb.Value{"bad": structpb.NewStringValue(placeholder)}}, true)
			b, err := proto.Marshal(req)
			if err != nil {
				return failed("kit: %v", err)
			}
			i := bytes.Index(b, []byte(placeholder))
			copy(b[i:], bad)
			ctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			resp, err := invokeRaw(ctx, c.conn, c.cb.Token, b)
			if err != nil {
				c.noteErr(err)
				if code := status.Code(err); code == codes.DeadlineExceeded {
					return failed("no answer within %v", callTimeout)
				}
				return passed("refused: %s", describe(err))
			}
			switch {
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
		run: func(ctx context.Context, c *checker) result {
			defer c.afterBadInput(ctx, "deep-nesting")
			const d1, d2 = 1000, 4000
			depths := []int{1, d1, d2}
			// call sends one nested value and says how long the server
			// worked on it.
			clock := newClock(c.pid)
			call := func(depth int) (time.Duration, error) {
				// Ten such values, so that the work stands out from what
				// the server does for any call.
				fields := map[string]*structpb.Value{}
				for i := range 10 {
					fields[fmt.Sprintf("deep%d", i)] = nested(depth)
				}
				req := c.k.request(&structpb.Struct{Fields: fields}, true)
				b, err := proto.Marshal(req)
				if err != nil {
					return 0, fmt.Errorf("kit: encoding the request: %w", err)
				}
				start := clock.now()
				p, err := c.callRaw(ctx, req, b)
				el := clock.now() - start
				if err != nil {
					return 0, fmt.Errorf("depth %d: %s", depth, describe(err))
				}
				if p = about(p, "deep"); len(p) > 0 {
					return 0, fmt.Errorf("depth %d: %s", depth, strings.Join(p, "; "))
				}
				return el, nil
			}
			// First what does not depend on time: the deepest value comes
			// back as sent.
			if _, err := call(d2); err != nil {
				return failed("%v", err)
			}
			// Then the growth, as a ratio of times measured side by side
			// (the best of 5 rounds of every depth), so that a machine
			// that is slower or busier slows every depth alike.
			best := make([]time.Duration, len(depths))
			for round := range 5 {
				for i, depth := range depths {
					el, err := call(depth)
					if err != nil {
						return failed("%v", err)
					}
					if round == 0 || el < best[i] {
						best[i] = el
					}
				}
			}
			t0, t1, t2 := best[0], best[1], best[2]
			a, b := max(t1-t0, time.Microsecond*50), max(t2-t0, time.Microsecond*50)
			ratio := float64(b) / float64(a)
			ev := fmt.Sprintf("%s: depth 1: %v, %d: %v, %d: %v; growth %.1fx for %dx the depth (linear: ~%d, quadratic: ~%d)",
				clock.what, t0.Round(time.Microsecond), d1, t1.Round(time.Microsecond), d2, t2.Round(time.Microsecond),
				ratio, d2/d1, d2/d1, (d2/d1)*(d2/d1))
			if ratio > 3*float64(d2/d1) {
				return failed("%s", ev)
			}
			return passed("%s", ev)
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
			return expire(ctx, c, "deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, time.Millisecond)
			}, codes.DeadlineExceeded)
		}},
	{ID: "cancellation", Level: must,
		Title: "calls the engine cancels end with Canceled and leave the server serving",
		Why:   "Ctrl-C cancels every call in flight; the server must survive to serve the next deployment step",
		run: func(ctx context.Context, c *checker) result {
			return expire(ctx, c, "cancellation", func(ctx context.Context) (context.Context, context.CancelFunc) {
				cctx, cancel := context.WithCancel(ctx)
				time.AfterFunc(2*time.Millisecond, cancel)
				return cctx, cancel
			}, codes.Canceled)
		}},
	{ID: "payload/64MiB", Level: must,
		Title: "a request with a 64 MiB property gets the identity answer",
		Why:   "programs put large documents (policies, templates, archives) in properties",
		run: func(ctx context.Context, c *checker) result {
			return big(ctx, c, 64<<20)
		}},
	{ID: "resources/no-growth", Level: should,
		Title: "serving leaves no threads or file descriptors behind",
		Why:   "a long deployment calls callbacks hundreds of thousands of times",
		run: func(ctx context.Context, c *checker) result {
			if c.target.growth == nil {
				r := growth(ctx, c)
				c.target.growth = &r
				return r
			}
			r := *c.target.growth
			r.evidence = "measured once per server: " + r.evidence
			return r
		}},
	{ID: "payload/300MiB", Level: should, phase: 2,
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

// expire sends calls that end early (a deadline or a cancellation), each
// carrying 4 MiB so that they end while the server is at work, then checks
// that the server still serves.
func expire(ctx context.Context, c *checker, what string, mk func(context.Context) (context.Context, context.CancelFunc), want codes.Code) result {
	b := bigRequest(c, 4<<20)
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
	ev := fmt.Sprintf("20 calls: %d %s, %d answered in time", counts[want], want, counts[codes.OK])
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
	head, err := proto.Marshal(c.k.request(nil, true))
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
	resp, err := invokeEnvelope(ctx, c.conn, b)
	el := time.Since(start)
	b = nil
	defer runtime.GC()
	size := fmt.Sprintf("%d MiB", n>>20)
	if err != nil {
		c.noteErr(err)
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

// finalVerdicts computes the clauses that summarise the others.
func (c *checker) stayedUp() result {
	if len(c.down) > 0 {
		return failed("%s", strings.Join(c.down, "; "))
	}
	if len(c.upAfter) == 0 {
		return notApplicable("no bad input was sent (see -run)")
	}
	return passed("answered after %s", strings.Join(c.upAfter, ", "))
}

func (c *checker) noStackTrace() result {
	for _, m := range c.errors {
		if stackTrace.MatchString(m) {
			loc := stackTrace.FindStringIndex(m)
			from := max(loc[0]-60, 0)
			return failed("%q", strings.TrimSpace(m[from:min(loc[1]+40, len(m))]))
		}
	}
	return passed("%d error messages, none with a stack trace", len(c.errors))
}
