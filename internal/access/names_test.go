package access

import (
	"errors"
	"strings"
	"testing"
)

func TestReserveName(t *testing.T) {
	t.Parallel()
	n := NewNames()
	if err := n.Reserve("h", 1); err != nil {
		t.Fatal(err)
	}
	err := n.Reserve("h", 2)
	if !errors.Is(err, ErrNameTaken) {
		t.Fatalf("second Reserve: %v, want ErrNameTaken", err)
	}
	if !strings.Contains(err.Error(), "names_test.go:") {
		t.Errorf("the error does not name the first registration's site: %v", err)
	}
	if v, ok := n.Get("h"); !ok || v != 1 {
		t.Errorf("Get = %v, %v; want 1, true", v, ok)
	}
	if got, existed := n.ReserveOrGet("h", 3); !existed || got != 1 {
		t.Errorf("ReserveOrGet = %v, %v; want 1, true", got, existed)
	}
	if err := n.Reserve("", 3); err == nil {
		t.Error("an empty name was reserved")
	}
	n.Release("h")
	if err := n.Reserve("h", 4); err != nil {
		t.Errorf("Reserve after Release: %v", err)
	}
}
