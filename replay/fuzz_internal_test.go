package replay

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/langhost/callbacks/internal/redact"
)

// alnum maps fuzz bytes onto letters and digits, so that a secret can be
// looked for in JSON text and in protobuf bytes alike.
func alnum(b []byte) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = chars[int(c)%len(chars)]
	}
	return string(out)
}

// FuzzScrub writes random secrets into synthetic logs of every kind, in
// both forms, and checks that no trace of them survives Scrub: not in the
// text, not in a JSON string, not in a base64 payload once decoded. The
// scrubbed log must still read.
func FuzzScrub(f *testing.F) {
	f.Add([]byte("hunter2"), []byte("us-west-2"), uint8(0))
	f.Add([]byte(""), []byte(""), uint8(3))
	f.Add([]byte{0, 1, 2, 250}, []byte{9}, uint8(6))
	f.Add([]byte("tx"), []byte("length"), uint8(5))
	f.Fuzz(func(t *testing.T, secret, plain []byte, shape uint8) {
		o := synthetic{
			resources: int(shape/4)%3 + 1,
			oneEntry:  shape&1 != 0,
			every:     shape&2 == 0,
			secret:    "S3cr3t" + alnum(secret),
			plain:     "Pl41n" + alnum(plain),
		}
		var log, out bytes.Buffer
		if err := writeSynthetic(&log, o); err != nil {
			t.Fatal(err)
		}
		if len(leaks(log.Bytes(), o.secret, o.plain)) == 0 {
			t.Fatal("the synthetic log holds no secret: the test checks nothing")
		}
		if err := Scrub(&out, bytes.NewReader(log.Bytes())); err != nil {
			t.Fatal(err)
		}
		if found := leaks(out.Bytes(), o.secret, o.plain); len(found) > 0 {
			t.Fatalf("Scrub left secrets: %v", found)
		}
		for _, err := range Read(bytes.NewReader(out.Bytes())) {
			var le *LineError
			if err != nil && (!errors.As(err, &le) || le.Line <= 0) {
				t.Fatalf("not a *LineError with a line: %v", err)
			}
		}
	})
}

// FuzzRead feeds Read any bytes: it must not panic, and every error must be
// a *LineError naming a line; every call it yields must answer Messages,
// Changes and Outcome without panicking.
func FuzzRead(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.jsonl")
	for _, path := range seeds {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)*2/3])
	}
	for _, o := range []synthetic{
		{resources: 1, every: true, secret: "s3cret-value", plain: "plain"},
		{resources: 2, oneEntry: true, every: true, secret: "s3cret-value", plain: "plain"},
	} {
		var log bytes.Buffer
		if err := writeSynthetic(&log, o); err != nil {
			f.Fatal(err)
		}
		f.Add(log.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for c, err := range Read(bytes.NewReader(data)) {
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Line <= 0 {
					t.Fatalf("not a *LineError with a line: %v", err)
				}
				continue
			}
			if c == nil || c.Line <= 0 || c.Seq <= 0 {
				t.Fatalf("bad call %+v", c)
			}
			_, _, _ = c.Messages()
			c.Changes(HideSecrets)
			c.Changes(ShowSecrets)
			c.Outcome()
		}
		var out bytes.Buffer
		if err := Scrub(&out, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzScrubConfig writes a configuration value that is not secret into a
// synthetic log of any shape: in the program's configuration (both
// entries of its Run and GetDeploymentInfo), in every resource's inputs and
// callback payloads, and once more in a line chosen at random, as a member
// of its own, inside a longer string, or in an error. No trace of it
// survives Scrub of a log that can be read twice, nor of a log read once
// whose Run entry starts it (two entries per call); the scrubbed log still
// reads.
func FuzzScrubConfig(f *testing.F) {
	f.Add([]byte("west"), uint8(0), uint16(1), uint8(0))
	f.Add([]byte(""), uint8(1), uint16(0), uint8(1))
	f.Add([]byte("x"), uint8(3), uint16(2), uint8(2))
	f.Add([]byte{7, 200}, uint8(6), uint16(40), uint8(1))
	f.Fuzz(func(t *testing.T, value []byte, shape uint8, at uint16, how uint8) {
		o := synthetic{
			resources: int(shape/4)%3 + 1,
			oneEntry:  shape&1 != 0,
			every:     shape&2 == 0,
			secret:    "S3cr3t-fuzz",
			plain:     "C0nfig" + alnum(value),
		}
		var log bytes.Buffer
		if err := writeSynthetic(&log, o); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(log.String(), "\n"), "\n")
		i := int(at) % len(lines)
		v, ok := redact.Decode([]byte(lines[i]))
		entry, isObject := v.(map[string]any)
		if !ok || !isObject {
			t.Fatalf("line %d is not a JSON object: %s", i+1, lines[i])
		}
		body, _ := entry["request"].(map[string]any)
		if body == nil {
			body = map[string]any{}
			entry["request"] = body
		}
		switch how % 3 {
		case 0:
			body["note"] = o.plain
		case 1:
			body["note"] = "near " + o.plain + ", as a part"
		default:
			entry["errors"] = []any{"rpc error: code = Unknown desc = no " + o.plain + " here"}
		}
		placed, err := redact.Encode(entry)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(placed)
		in := []byte(strings.Join(lines, "\n") + "\n")

		check := func(src io.Reader, form string) {
			var out bytes.Buffer
			if err := Scrub(&out, src); err != nil {
				t.Fatal(err)
			}
			if found := leaks(out.Bytes(), o.plain, o.secret); len(found) > 0 {
				t.Fatalf("Scrub of a log %s, the value on line %d, left: %v", form, i+1, found)
			}
			for _, err := range Read(bytes.NewReader(out.Bytes())) {
				var le *LineError
				if err != nil && (!errors.As(err, &le) || le.Line <= 0) {
					t.Fatalf("not a *LineError with a line: %v", err)
				}
			}
		}
		check(bytes.NewReader(in), "read twice")
		if !o.oneEntry {
			check(struct{ io.Reader }{bytes.NewReader(in)}, "read once")
		}
	})
}
