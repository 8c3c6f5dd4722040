package callbacks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
)

// The check of a typed registration runs before its function, on the
// goroutine the call arrived on: a panic there still only fails the call,
// a refusal there never runs the function, and the function sees what the
// check recorded.
func TestPreparedRegistration(t *testing.T) {
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	var seen CallInfo
	tok, err := reg.Register(preparedAs(KindResourceTransform, func(ctx context.Context, payload []byte) (func(context.Context) ([]byte, error), error) {
		switch string(payload) {
		case "panic":
			panic("check exploded")
		case "refuse":
			return nil, &Error{Code: codes.InvalidArgument, Err: ErrInvalidRequest, Msg: "refused by the check"}
		}
		setCallResource(ctx, "urn:pulumi:dev::p::pkg:index:Thing::a", "pkg:index:Thing", "a")
		return func(ctx context.Context) ([]byte, error) {
			ran = true
			seen, _ = CallInfoFrom(ctx)
			return []byte("answer"), nil
		}, nil
	}), Name("prepared"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = reg.Invoke(ctx, tok, []byte("panic"))
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != codes.Internal || !errors.Is(err, ErrPanicked) || !strings.Contains(ce.Msg, "check exploded") {
		t.Fatalf("a panicking check: %v, want Internal wrapping ErrPanicked with the panic's value", err)
	}
	_, err = reg.Invoke(ctx, tok, []byte("refuse"))
	if !errors.As(err, &ce) || ce.Code != codes.InvalidArgument || ran {
		t.Fatalf("a refusing check: %v (function ran: %v), want InvalidArgument and no call", err, ran)
	}
	out, err := reg.Invoke(ctx, tok, []byte("fine"))
	if err != nil || string(out) != "answer" || !ran {
		t.Fatalf("a passing check: %q, %v (function ran: %v)", out, err, ran)
	}
	if seen.Name != "prepared" || seen.ResourceName != "a" || seen.Type != "pkg:index:Thing" {
		t.Errorf("the function saw CallInfo %+v, want the name and what the check recorded", seen)
	}
}
