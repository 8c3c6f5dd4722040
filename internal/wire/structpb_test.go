package wire

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

// A Value with no kind set makes the SDK's decoder panic; it must come back
// as an error instead.
func TestUnmarshalValueWithoutKindIsAnError(t *testing.T) {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{"x": {}}}
	m, err := UnmarshalStruct(s)
	if err == nil {
		t.Fatalf("got %v and no error, want an error", m)
	}
}

func TestRoundTrip(t *testing.T) {
	in, err := structpb.NewStruct(map[string]any{"a": "b", "n": 1.0, "l": []any{true}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := UnmarshalStruct(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := MarshalStruct(m, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), in.String(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
