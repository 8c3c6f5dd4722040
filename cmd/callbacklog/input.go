package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// notLogError is an input that is not an engine gRPC log, or cannot be
// read as one: its message says what it is and what to do.
type notLogError struct{ msg string }

func (e *notLogError) Error() string { return e.msg }

func notLog(format string, args ...any) error {
	return &notLogError{fmt.Sprintf(format, args...)}
}

// input is a log being read: the reader counts the entries that pass
// through it.
type input struct {
	*counter
	source string // the log's name in messages: the file's base name, or "standard input"
	close  func()
	auto   bool // a decrypted automatic log, not an engine gRPC log
}

// encryptedMagic starts an automatic log as Pulumi writes it, encrypted
// (pkg engine/encryptedlog: "PLOG", a version, then the ciphertext).
const encryptedMagic = "PLOG"

// checkAuto says, once a whole automatic log was read and no callback call
// was in it, whether it was a log of a deployment: nil if it was.
func (in *input) checkAuto(info autoInfo) error {
	switch {
	case info.entries == 0:
		return in.check()
	case !info.deployment:
		cmd := "a command"
		if info.command != "" {
			cmd = info.command
		}
		return notLog("%s is Pulumi's automatic log of %s, which ran no deployment: decrypt the log of an update or preview instead (pulumi logs list shows them)", in.source, cmd)
	}
	return nil
}

// sniffSize is how much of the input is looked at before it is read as a
// log: enough to tell a compressed or binary file.
const sniffSize = 512

// openLog opens the log name ("-" for stdin) and refuses what cannot be a
// log before reading it: a directory, an empty input, a compressed or binary
// file. Its error is a *notLogError, or the error opening the file.
func openLog(name string, stdin io.Reader) (*input, error) {
	in := &input{source: "standard input", close: func() {}}
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			f.Close()
			return nil, notLog("%s is a directory, not a log: name the file PULUMI_DEBUG_GRPC named", name)
		}
		r, in.source, in.close = f, filepath.Base(name), func() { f.Close() }
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(sniffSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		in.close()
		return nil, fmt.Errorf("reading %s: %w", in.source, err)
	}
	switch {
	case len(bytes.TrimSpace(head)) == 0 && len(head) < sniffSize:
		in.close()
		return nil, emptyLog(in.source)
	case bytes.HasPrefix(head, []byte(encryptedMagic)):
		in.close()
		return nil, notLog("%s is one of Pulumi's automatic logs, still encrypted: decrypt it first, in the stack's project directory and with its passphrase or key: pulumi logs decrypt %s | callbacklog show -", in.source, in.source)
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		in.close()
		return nil, notLog("%s is gzip-compressed: gunzip it first, then read the log it holds (if it is one of Pulumi's automatic logs, pulumi logs decrypt %s prints it)", in.source, in.source)
	case bytes.IndexByte(head, 0) >= 0:
		in.close()
		return nil, notLog("%s is not text, so not an engine gRPC log (which is JSON Lines); is it compressed?", in.source)
	}
	// The source is told by its first entry, which the buffer holds unless
	// lines before it fill it.
	if full, err := br.Peek(br.Size()); len(full) > 0 && (err == nil || errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull)) {
		in.auto = isAutoLog(full)
	}
	in.counter = &counter{r: br}
	return in, nil
}

func emptyLog(source string) error {
	return notLog("%s is empty: was PULUMI_DEBUG_GRPC set for the CLI? (PULUMI_DEBUG_GRPC=$PWD/up.jsonl pulumi up)", source)
}

// check says, once the whole input was read and no callback call was in
// it, whether it was a log at all: nil if some line was an entry of one.
func (in *input) check() error {
	switch {
	case !in.text:
		return emptyLog(in.source)
	case in.entries == 0:
		return notLog("%s is not an engine gRPC log: no line of it is a log entry ({\"method\": …}, one a line, as PULUMI_DEBUG_GRPC writes them)", in.source)
	}
	return nil
}

// entryPrefix is how the engine starts every entry of its log.
const entryPrefix = `{"method":"`

// counter passes a log through, counting the lines that start as the
// engine's entries do, and noting whether it held anything but white space.
type counter struct {
	r       io.Reader
	entries int
	text    bool // a byte other than white space was read
	pos     int  // how much of entryPrefix the current line matched; -1 for none
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	b := p[:n]
	if !c.text && len(bytes.TrimSpace(b)) > 0 {
		c.text = true
	}
	for len(b) > 0 {
		if c.pos >= 0 && c.pos < len(entryPrefix) {
			k := min(len(b), len(entryPrefix)-c.pos)
			if string(b[:k]) == entryPrefix[c.pos:c.pos+k] {
				c.pos += k
				b = b[k:]
				if c.pos == len(entryPrefix) {
					c.entries++
				}
				continue
			}
			c.pos = -1
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		b, c.pos = b[i+1:], 0
	}
	return n, err
}
