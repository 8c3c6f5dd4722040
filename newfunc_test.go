package callbacks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/langhost/callbacks"
)

// thing is a request of a language host's own: "NAME" or "NAME!" for one
// whose answer does not encode.
type thing struct{ name string }

func decodeThing(_ context.Context, payload []byte, _ bool, info *callbacks.CallInfo) (thing, error) {
	name := string(payload)
	info.Type, info.ResourceName = "pkg:index:Thing", strings.TrimSuffix(name, "!")
	info.URN = "urn:pulumi:dev::p::pkg:index:Thing::" + info.ResourceName
	info.Kind, info.Name = callbacks.KindErrorHook, "renamed" // ignored: not the decoder's to say
	switch name {
	case "panic":
		panic("decode exploded")
	case "":
		return thing{}, errors.New("no name")
	}
	return thing{name}, nil
}

func encodeThing(_ context.Context, req thing, res string) ([]byte, error) {
	switch {
	case strings.HasSuffix(req.name, "!"):
		return nil, errors.New("cannot say it")
	case res == "invalid":
		return nil, fmt.Errorf("%w: no such answer", callbacks.ErrInvalidResult)
	case res == "unread":
		return nil, fmt.Errorf("%w: the part read late does not decode", callbacks.ErrInvalidRequest)
	}
	return []byte(res), nil
}

// NewFunc is the one adapter: its decoder runs before the function, on the
// goroutine the call arrived on, so a panic there only fails the call and a
// refusal never runs the function; what the decoder learned labels the
// call; and an encoder's failure says which rule it broke.
func TestNewFunc(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t, callbacks.WithLogger(discardLogger()))
	var seen callbacks.CallInfo
	ran := 0
	tok, err := reg.Register(callbacks.NewFunc(callbacks.KindRaw, decodeThing,
		func(ctx context.Context, req thing) (string, error) {
			ran++
			seen, _ = callbacks.CallInfoFrom(ctx)
			if req.name == "invalid" || req.name == "unread" {
				return req.name, nil
			}
			return "hello " + req.name, nil
		}, encodeThing), callbacks.Name("things"))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		payload  string
		code     codes.Code
		sentinel error
		msg      string
		runs     bool
	}{
		{payload: "panic", code: codes.Internal, sentinel: callbacks.ErrPanicked, msg: "decode exploded"},
		{payload: "", code: codes.InvalidArgument, sentinel: callbacks.ErrInvalidRequest,
			msg: `callbacks: raw callback "things" for urn:pulumi:dev::p::pkg:index:Thing::: request does not decode: no name`},
		{payload: "b!", code: codes.Internal, sentinel: callbacks.ErrEncode, runs: true,
			msg: `raw callback "things" for urn:pulumi:dev::p::pkg:index:Thing::b: response does not encode: cannot say it`},
		{payload: "invalid", code: codes.Internal, sentinel: callbacks.ErrInvalidResult, runs: true, msg: "no such answer"},
		{payload: "unread", code: codes.InvalidArgument, sentinel: callbacks.ErrInvalidRequest, runs: true, msg: "read late"},
	} {
		before := ran
		_, err := reg.Invoke(t.Context(), tok, []byte(tc.payload))
		ce, ok := errors.AsType[*callbacks.Error](err)
		if !ok || ce.Code != tc.code || !errors.Is(err, tc.sentinel) || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("payload %q: got %v, want %v wrapping %v with %q", tc.payload, err, tc.code, tc.sentinel, tc.msg)
		}
		if got := ran > before; got != tc.runs {
			t.Errorf("payload %q: the function ran: %v, want %v", tc.payload, got, tc.runs)
		}
	}

	out, err := reg.Invoke(t.Context(), tok, []byte("a"))
	if err != nil || string(out) != "hello a" {
		t.Fatalf("got %q, %v; want \"hello a\"", out, err)
	}
	if seen.Kind != callbacks.KindRaw || seen.Name != "things" || seen.Token != tok ||
		seen.ResourceName != "a" || seen.Type != "pkg:index:Thing" || seen.URN != "urn:pulumi:dev::p::pkg:index:Thing::a" {
		t.Errorf("the function saw %+v, want the registration's kind, name and token and what the decoder found", seen)
	}
}

// A Func missing any of its parts is refused at registration.
func TestNewFuncWithoutAPart(t *testing.T) {
	t.Parallel()
	reg := newTestRegistry(t)
	fn := func(context.Context, thing) (string, error) { return "", nil }
	for name, f := range map[string]callbacks.Func{
		"decode": callbacks.NewFunc(callbacks.KindRaw, nil, fn, encodeThing),
		"fn":     callbacks.NewFunc[thing, string](callbacks.KindRaw, decodeThing, nil, encodeThing),
		"encode": callbacks.NewFunc(callbacks.KindRaw, decodeThing, fn, nil),
	} {
		if _, err := reg.Register(f); !errors.Is(err, callbacks.ErrNilFunc) {
			t.Errorf("without %s: got %v, want ErrNilFunc", name, err)
		}
	}
}
