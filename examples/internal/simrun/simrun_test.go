package simrun

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	var b bytes.Buffer
	Table(&b, [][]string{{"step create", "pet"}, {"hook before_create \"audit\"", "pet", "ok"}, {"alone"}, {}})
	want := "  step create" + strings.Repeat(" ", 17) + "pet\n" +
		"  hook before_create \"audit\"  pet  ok\n" +
		"  alone\n" +
		"\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestVerdict(t *testing.T) {
	var b bytes.Buffer
	if err := Verdict(&b, "example", nil); err != nil || b.Len() != 0 {
		t.Fatalf("no problems: got %v and %q", err, b.String())
	}
	err := Verdict(&b, "example", []string{"a", "b"})
	if err == nil || err.Error() != "2 expectation(s) not met" {
		t.Errorf("got error %v", err)
	}
	if want := "\nexample: FAILED\n  - a\n  - b\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestSetenv(t *testing.T) {
	t.Setenv("SIMRUN_SET", "before")
	t.Setenv("SIMRUN_UNSET", "")
	os.Unsetenv("SIMRUN_UNSET")
	restore := Setenv([]string{"SIMRUN_SET=during", "SIMRUN_UNSET=during=too"})
	if os.Getenv("SIMRUN_SET") != "during" || os.Getenv("SIMRUN_UNSET") != "during=too" {
		t.Fatalf("not set: %q, %q", os.Getenv("SIMRUN_SET"), os.Getenv("SIMRUN_UNSET"))
	}
	restore()
	if v := os.Getenv("SIMRUN_SET"); v != "before" {
		t.Errorf("SIMRUN_SET is %q after restore, want before", v)
	}
	if _, set := os.LookupEnv("SIMRUN_UNSET"); set {
		t.Error("SIMRUN_UNSET is set after restore")
	}
}
