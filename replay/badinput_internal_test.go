package replay

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadBadInput breaks one line of a good log in each way a log can be
// bad: the error names that line and says what is wrong, and every other
// call is still read.
func TestReadBadInput(t *testing.T) {
	t.Parallel()
	var good bytes.Buffer
	require.NoError(t, writeSynthetic(&good, synthetic{resources: 3}))
	lines := strings.Split(strings.TrimSuffix(good.String(), "\n"), "\n")
	goodCalls, goodErrs := readAll(t, good.Bytes())
	require.Empty(t, goodErrs)
	require.Len(t, goodCalls, 6)

	// The completing line of the second call (pet-0's hook).
	target := goodCalls[1].Line
	line := lines[target-1]
	req := `"request":"`
	for _, tc := range []struct {
		name    string
		replace string // the new text of the target line
		last    bool   // cut the log after the target line, without its newline
		want    string
		lost    int // calls lost besides the target's
	}{
		{name: "truncated", replace: line[:len(line)/2], last: true, want: "truncated entry: the log ends inside it", lost: 4},
		{name: "corrupt JSON", replace: strings.Replace(line, `":`, `"`, 1), want: "not a JSON entry"},
		{name: "not an object", replace: `[1,2]`, want: "not a log entry"},
		{name: "bad base64", replace: strings.Replace(line, req, req+"%%", 1), want: "a payload is not valid base64"},
		{name: "payload of the wrong type", replace: strings.Replace(line, `"token":`, `"request":7,"token":`, 1), want: "a payload is not a base64 string but a number"},
		{name: "token with no registration", replace: strings.Replace(line, "audit-hook", "nobody", 1), want: "token nobody was never registered before its call"},
		{name: "payload that does not decode", replace: strings.Replace(line, req, req+"////", 1), want: "the request of callback call 2 does not decode as a resource hook"},
		{name: "a scrubbed payload", replace: strings.Replace(line, req, req+"[scrubbed: payload of a callback kind this module does not know, registered by RegisterX]\",\"x\":\"", 1), want: "the payload was removed when the log was scrubbed: payload of a callback kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bad := append([]string{}, lines...)
			bad[target-1] = tc.replace
			text := strings.Join(bad, "\n") + "\n"
			if tc.last {
				text = strings.Join(bad[:target], "\n")
			}
			calls, errs := readAll(t, []byte(text))
			require.Len(t, errs, 1, "%v", errs)
			assert.Equal(t, target, errs[0].Line)
			assert.ErrorContains(t, errs[0], tc.want)
			assert.Len(t, calls, len(goodCalls)-1-tc.lost)
		})
	}
}

// TestReadUnregisteredInOldLog: in a log of one entry per call, a call whose
// token is never registered is reported at the end, and the calls after it
// are not lost.
func TestReadUnregisteredInOldLog(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	require.NoError(t, writeSynthetic(&log, synthetic{resources: 2, oneEntry: true}))
	text := ghost(log.String())
	calls, errs := readAll(t, []byte(text))
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0], "token ghost was never registered in this log")
	assert.Len(t, calls, 3)
}

// TestReadHoldsBounded: a call waiting for a registration that never comes
// is given up after a bounded number of calls, so memory does not grow with
// the log, and it is still reported.
func TestReadHoldsBounded(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	require.NoError(t, writeSynthetic(&log, synthetic{resources: 20, oneEntry: true}))
	text := ghost(log.String())
	rd := newReader(strings.NewReader(text))
	rd.hold = 3
	most, calls := 0, 0
	var errs []error
	rd.run(func(h *held) bool {
		most = max(most, len(rd.queue))
		switch {
		case h.err != nil:
			errs = append(errs, h.err)
		case h.call != nil:
			calls++
		}
		return true
	})
	assert.LessOrEqual(t, most, 3+1)
	require.Len(t, errs, 1)
	assert.ErrorContains(t, errs[0], "token ghost was never registered in this log")
	assert.Equal(t, 39, calls)
}

func TestReadStopsWhenAsked(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	require.NoError(t, writeSynthetic(&log, synthetic{resources: 5, oneEntry: true, every: true}))
	n := 0
	for range Read(&log) {
		n++
		if n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)
}

// ghost gives the first hook call of a log a token the log never registers.
func ghost(log string) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.Contains(l, invokeMethod) && strings.Contains(l, `"token":"audit-hook"`) {
			lines[i] = strings.Replace(l, `"token":"audit-hook"`, `"token":"ghost"`, 1)
			break
		}
	}
	return strings.Join(lines, "\n")
}

// readTokens reads log to its end, noting resources, and returns the
// reader.
func readTokens(log string) *reader {
	rd := newReader(strings.NewReader(log))
	rd.resources = true
	rd.run(func(*held) bool { return true })
	return rd
}

// TestReadRegisterResourceBadField: a RegisterResource entry whose request
// does not decode as the protocol's (protect holds a string) still notes
// its resource and teaches its Callbacks: its transforms, and those of a
// field this module does not know.
func TestReadRegisterResourceBadField(t *testing.T) {
	t.Parallel()
	const urn = "urn:pulumi:dev::p::t:m:T::a"
	rd := readTokens(`{"method":"/pulumirpc.ResourceMonitor/RegisterResource","request":{"type":"t:m:T","name":"a","protect":"yes",` +
		`"transforms":[{"target":"127.0.0.1:1","token":"tok1"}],"x":{"target":"127.0.0.1:1","token":"tok2"}},"response":{"urn":"` + urn + `"}}` + "\n")
	require.NotNil(t, rd.tokens["tok2"])
	assert.Equal(t, Registration{Method: registerRes, Resource: urn}, rd.tokens["tok2"].r)
	require.NotNil(t, rd.tokens["tok1"], "the transforms beside a field that does not decode")
	assert.Equal(t, Registration{Method: registerRes, Order: 1, Resource: urn}, rd.tokens["tok1"].r)
	var noted []resource.URN
	for _, r := range rd.cur.resources {
		noted = append(noted, r.urn)
	}
	assert.Equal(t, []resource.URN{urn}, noted)
}

// TestReadKnownTokenTakesCompletingURN: a resource's transform learned from
// the request_started entry of its RegisterResource, when the URN cannot be
// worked out yet, takes the URN of the entry that completes it.
func TestReadKnownTokenTakesCompletingURN(t *testing.T) {
	t.Parallel()
	const urn = "urn:pulumi:dev::p::t:m:T::a"
	req := `"request":{"type":"t:m:T","name":"a","transforms":[{"target":"127.0.0.1:1","token":"tok1"}]}`
	started := `{"method":"/pulumirpc.ResourceMonitor/RegisterResource","progress":"request_started",` + req + "}\n"
	completed := `{"method":"/pulumirpc.ResourceMonitor/RegisterResource","progress":"response_completed",` + req + `,"response":{"urn":"` + urn + `"}}` + "\n"
	rd := readTokens(started)
	require.NotNil(t, rd.tokens["tok1"])
	require.Equal(t, resource.URN(""), rd.tokens["tok1"].r.Resource)
	rd = readTokens(started + completed)
	require.NotNil(t, rd.tokens["tok1"])
	assert.Equal(t, Registration{Method: registerRes, Order: 1, Resource: urn}, rd.tokens["tok1"].r)
}
