package redact

import (
	"encoding/json"
	"testing"
)

func TestTable(t *testing.T) {
	tb := New()
	tb.Names["dev"] = true
	checks := []struct{ got, want string }{
		{tb.Note("hunter2-pw", true), "[secret 1]"},
		{tb.Placeholder("us-west-2", false), "[config 1]"},
		{tb.Note(json.Number("2.50"), true), "[secret 2]"},
		{tb.Placeholder(2.5, true), "[secret 2]"}, // a number is its value, however it was read
		{tb.Note("dev", false), "[config 2]"},     // a name: given a placeholder, not noted
		{tb.Note("[secret 7]", true), "[secret 7]"},
		{tb.Replace("hunter2-pw"), "[secret 1]"},
		{tb.Replace("the pw is hunter2-pw."), "the pw is [secret 1]."},
		{tb.Replace("us-west-2"), "us-west-2"}, // given a placeholder only, not noted
		{tb.Replace("2.50"), "[secret 3]"},     // the number's text, noted as a string
		{tb.Replace("v2.50"), "v2.50"},         // shorter than MinSubstring: whole strings only
		{tb.Replace("dev"), "dev"},
		{tb.Replace("[secret]"), "[secret]"},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

func TestWalk(t *testing.T) {
	tb := New()
	v, ok := Decode([]byte(`{"a":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"s3cret-value"},
		"b":"says s3cret-value","c":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"s3cret-value\""},"d":7}`))
	if !ok {
		t.Fatal("the test's JSON does not decode")
	}
	changed := false
	leaf := func(v any) any {
		if s, ok := v.(string); ok {
			return tb.Replace(s)
		}
		return v
	}
	// Walked twice, as the scrubbers walk a line that noted a secret: the
	// second walk replaces it where it came before its envelope.
	v = tb.Walk(tb.Walk(v, leaf, &changed), leaf, &changed)
	out, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"[secret 1]"},"b":"says [secret 1]",` +
		`"c":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"[secret 1]\""},"d":7}`
	if string(out) != want || !changed {
		t.Errorf("walked (changed %v):\n%s\nwant\n%s", changed, out, want)
	}
	changed = false
	if tb.Walk(v, leaf, &changed); changed {
		t.Error("walking a scrubbed value changed it")
	}
}
