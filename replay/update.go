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
// response and errors of each call's completing entry) with the answers
// of those calls, and keeps every other byte of file, writing a temporary
// file beside it and renaming it over file.
func rewrite(file string, answers map[int]*Call) (err error) {
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
	out := bufio.NewWriterSize(tmp, 64<<10) // its first error is Flush's
	lines := newLineReader(in)
	for {
		line, _, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if c, ok := answers[lines.line]; ok {
			if line, err = withAnswer(line, c); err != nil {
				return fmt.Errorf("log line %d: %w", lines.line, err)
			}
		}
		_, _ = out.Write(line)
		_, _ = out.WriteString(lines.end)
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
// replaced by c's answer, right after its request as the engine writes
// them, the other members kept in their order and bytes.
func withAnswer(body []byte, c *Call) ([]byte, error) {
	added, err := json.Marshal([]string{c.Err})
	added = append([]byte(`"errors":`), added...)
	if c.Err == "" {
		added, err = protojson.Marshal(&pulumirpc.CallbackInvokeResponse{Response: c.Response})
		added = append([]byte(`"response":`), added...)
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	b := bytes.NewBufferString("{")
	member := func(m []byte) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
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
		if key == "response" || key == "errors" {
			continue
		}
		k, _ := json.Marshal(key)
		member(append(append(k, ':'), val...))
		if key == "request" && added != nil {
			member(added)
			added = nil
		}
	}
	if added != nil {
		member(added)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
