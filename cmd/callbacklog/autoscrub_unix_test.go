//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestScrubAutoLogFromAPipe: a log read from a named pipe (or a shell's
// <(...)), which cannot be opened again for the second reading, is
// scrubbed as the same log from a file.
func TestScrubAutoLogFromAPipe(t *testing.T) {
	src := filepath.Join("testdata", "autologs", "sdkprogram-3.260.0.jsonl")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var want, stderr bytes.Buffer
	if code := run([]string{"scrub", src}, nil, &want, &stderr); code != exitOK {
		t.Fatalf("scrub %s: exit %d: %s", src, code, stderr.String())
	}
	fifo := filepath.Join(t.TempDir(), "log.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipe here: %v", err)
	}
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			wrote <- err
			return
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		wrote <- err
	}()
	var got bytes.Buffer
	code := run([]string{"scrub", fifo}, nil, &got, &stderr)
	if err := <-wrote; err != nil {
		t.Fatalf("writing the pipe: %v", err)
	}
	if code != exitOK {
		t.Fatalf("scrub of a pipe: exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("scrub of a pipe wrote %d bytes, of the file %d:\n%s", got.Len(), want.Len(), lineDiff(want.String(), got.String()))
	}
}
