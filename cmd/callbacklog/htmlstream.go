package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// The page's data, which its script draws the timeline from, is as large as
// the account: html/template would marshal it whole into one string and
// escape that into a second before writing either. Instead the template is
// run with a mark where the data goes, and the data is written in its place
// a resource at a time, so that what the page costs beyond the account is
// one resource's calls.

// dataMark is what the template writes where the page's data goes: a JSON
// string, which no string of the log can put in the page as it is, since
// html/template escapes a double quote everywhere outside the script.
const dataMark = `"callbacklog:timeline-data"`

// pageShell is the page as the template sees it: its fields, and dataMark
// for its data.
type pageShell struct{ *page }

func (pageShell) MarshalJSON() ([]byte, error) { return []byte(dataMark), nil }

// writePage writes the timeline of p to w. The data is JSON with <, > and &
// escaped, as html/template writes it into a script, so that no string of
// the log ends the script or opens a comment in it.
func writePage(w io.Writer, p *page) error {
	var shell bytes.Buffer
	if err := timeline.Execute(&shell, pageShell{p}); err != nil {
		return err
	}
	before, after, ok := bytes.Cut(shell.Bytes(), []byte(dataMark))
	if !ok || bytes.Contains(after, []byte(dataMark)) {
		return fmt.Errorf("the timeline's template does not hold one place for its data")
	}
	rest, err := json.Marshal(p) // everything but the groups, HTML escaped
	if err != nil {
		return err
	}
	if _, err := w.Write(before); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `{"Groups":[`); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	n := 0
	for g := range p.groups {
		if n > 0 {
			if _, err = io.WriteString(w, ","); err != nil {
				break
			}
		}
		if err = enc.Encode(g); err != nil {
			break
		}
		n++
	}
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, "],"); err != nil {
		return err
	}
	if _, err := w.Write(rest[1:]); err != nil { // rest is an object: its members, after its {
		return err
	}
	_, err = w.Write(after)
	return err
}
