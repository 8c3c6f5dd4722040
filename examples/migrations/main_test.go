package main

import (
	"bytes"
	"testing"
)

// TestMigrationOnTheSimulator runs the program the way `go run` does with
// no engine around, and pins what it prints.
func TestMigrationOnTheSimulator(t *testing.T) {
	var out bytes.Buffer
	if err := simulate(t.Context(), &out); err != nil {
		t.Fatalf("simulate: %v\n%s", err, out.String())
	}
	want := `version 1 of the program:
  pet  step create, keepers in the state map[owner:pets]
version 2 of the program:
  pet  State migration applied (state entries: 1 before, 1 after).
  pet  step same, keepers in the state map[team:pets]
`
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
