package replay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader reads a log line by line with no limit on a line's length: a
// callback payload can be hundreds of megabytes. It holds one line at a
// time.
type lineReader struct {
	r    *bufio.Reader
	buf  []byte
	line int
	end  string // the end of the last line read: "\n", "\r\n" or ""
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line without its end ("\n" or "\r\n"), whether it
// ended with "\n" (false for a last line the log cut short), and io.EOF
// after the last line. The line is valid until the next call. A read error
// other than EOF is returned as is.
func (l *lineReader) next() (line []byte, ended bool, err error) {
	// A huge line's buffer is not kept for the lines after it.
	if cap(l.buf) > 4<<20 {
		l.buf = nil
	}
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		switch {
		case err == nil:
			l.line++
			if len(l.buf) == 0 {
				return l.trimEnd(chunk), true, nil
			}
			l.buf = append(l.buf, chunk...)
			return l.trimEnd(l.buf), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			l.buf = append(l.buf, chunk...)
		case errors.Is(err, io.EOF):
			l.buf = append(l.buf, chunk...)
			if len(l.buf) == 0 {
				return nil, false, io.EOF
			}
			l.line++
			l.end = ""
			return l.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

func (l *lineReader) trimEnd(b []byte) []byte {
	l.end = "\n"
	if b = bytes.TrimSuffix(b, []byte("\n")); bytes.HasSuffix(b, []byte("\r")) {
		b, l.end = b[:len(b)-1], "\r\n"
	}
	return b
}
