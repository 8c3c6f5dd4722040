package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/encoding/protojson"
)

// rewrite replaces the recorded answers of the lines in answers (the
// response and errors of each call's completing entry) and keeps every
// other byte of file, writing a temporary file beside it and renaming it
// over file.
func rewrite(file string, answers map[int]answer) (err error) {
	in, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	out := bufio.NewWriterSize(tmp, 64<<10)
	lines := newLineReader(in)
	for {
		line, _, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if a, ok := answers[lines.line]; ok {
			if line, err = withAnswer(line, a); err != nil {
				return fmt.Errorf("log line %d: %w", lines.line, err)
			}
		}
		if _, err := out.Write(line); err != nil {
			return err
		}
		if _, err := out.WriteString(lines.end); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// withAnswer returns the log entry body with its "response" and "errors"
// replaced by a, the other members kept in their order and bytes.
func withAnswer(body []byte, a answer) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	type member struct {
		key string
		val json.RawMessage
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if key != "response" && key != "errors" {
			members = append(members, member{key, val})
		}
	}
	var added []member
	if a.err == "" {
		res, err := protojson.Marshal(&pulumirpc.CallbackInvokeResponse{Response: a.response})
		if err != nil {
			return nil, err
		}
		added = append(added, member{"response", res})
	} else {
		errs, _ := json.Marshal([]string{a.err})
		added = append(added, member{"errors", errs})
	}
	// The engine writes response and errors right after the request.
	at := len(members)
	for i, m := range members {
		if m.key == "request" {
			at = i + 1
			break
		}
	}
	members = append(members[:at], append(added, members[at:]...)...)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
