package replay

import (
	"bytes"
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
)

// difference is one way a call's current outcome differs from the
// recorded one: at a property path, or, with path "", about the call as a
// whole (an error now and none then, or the reverse).
type difference struct {
	path string
	text string // the line that says it
}

// diffCall compares a call's recorded outcome with the current one and
// returns how they differ, nothing if they agree: the answers' differences
// by property path (old → new), or an error now and not then, or the
// reverse. token is the current registration's token, which may appear in
// an error in place of the recorded one.
func diffCall(c *Call, token string, current []byte, currentErr string) []difference {
	was := c.Err
	if c.Token != "" {
		was = strings.ReplaceAll(was, c.Token, token)
	}
	switch {
	case was == "" && currentErr != "":
		return []difference{{text: "an error now, none in the recording: " + currentErr}}
	case was != "" && currentErr == "":
		return []difference{{text: "no error now; the recording failed with: " + c.Err}}
	case was != "":
		if was != currentErr {
			return []difference{{text: "error: " + strconv.Quote(c.Err) + " → " + strconv.Quote(currentErr)}}
		}
		return nil
	}
	return diffAnswers(c, current)
}

// diffAnswers lists how the current answer differs from the recorded one,
// by property path, as the reader's Changes does between a request and its
// answer; answers that do not decode as the kind's response are compared as
// bytes.
func diffAnswers(c *Call, current []byte) []difference {
	if bytes.Equal(c.Response, current) {
		return nil
	}
	row := rowOf(c.Kind)
	var req, was, now proto.Message
	if row != nil {
		req, was = row.messages()
		now = row.res.New().Interface()
	}
	if row == nil || proto.Unmarshal(c.Request, req) != nil ||
		proto.Unmarshal(c.Response, was) != nil || proto.Unmarshal(current, now) != nil {
		return []difference{{text: fmt.Sprintf("answer: %d bytes → %d other bytes", len(c.Response), len(current))}}
	}
	var out []difference
	for _, ch := range diffResponses(req, was, now, false) {
		if ch.Path == "error" && row.refusal != "" {
			ch.Path = row.refusal
		}
		out = append(out, difference{path: ch.Path, text: fmt.Sprintf("%s: %s → %s", ch.Path, cmp.Or(ch.Old, absent), cmp.Or(ch.New, absent))})
	}
	return out
}

// absent stands for a value a side does not have.
const absent = "(absent)"
