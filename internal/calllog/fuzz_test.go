package calllog

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// secretMark starts every string inside a secret the generator makes, and
// nothing else it makes: no record may hold it.
const secretMark = "ZQX"

// gen makes property values from fuzz bytes: plain strings and keys are
// lowercase; inside a secret, every string and key starts with secretMark.
type gen struct {
	b  []byte
	i  int
	n  int  // strings made, to tell secrets apart
	rc bool // only values replay's differ reads as this package does
}

func (g *gen) next() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

func (g *gen) word(secret bool) string {
	g.n++
	if secret {
		return secretMark + strconv.Itoa(g.n)
	}
	w := []byte{'a' + g.next()%26}
	for range g.next() % 4 {
		w = append(w, 'a'+g.next()%26)
	}
	if g.next()%8 == 0 {
		w = append(w, '.', 'x') // a key to quote
	}
	return string(w)
}

func (g *gen) value(depth int, secret bool) any {
	c := g.next() % 12
	if depth > 5 {
		c %= 5
	}
	switch c {
	case 0:
		return nil
	case 1:
		return g.next()%2 == 0
	case 2:
		return float64(int(g.next()) - 100)
	case 3:
		return g.word(secret)
	case 4:
		if secret {
			return g.word(secret)
		}
		return unknownString
	case 5, 6:
		l := make([]any, g.next()%4)
		for i := range l {
			l[i] = g.value(depth+1, secret)
		}
		return l
	case 7, 8:
		return g.object(depth+1, secret)
	case 9:
		return secretOf(g.value(depth+1, true))
	case 10:
		if secret && g.rc {
			return g.word(true)
		}
		known := g.next()%3 != 0
		s := g.next()%2 == 0
		if !known && g.rc {
			s = false
		}
		return outputOf(g.value(depth+1, secret || s), known, s)
	default:
		if g.rc || secret {
			return g.word(secret)
		}
		return map[string]any{sigKey: sigByteString, "value": "Ynl0ZXM="}
	}
}

func (g *gen) object(depth int, secret bool) map[string]any {
	m := map[string]any{}
	for range g.next() % 5 {
		m[g.word(secret)] = g.value(depth, secret)
	}
	return m
}

// mutate returns a copy of v with some of its values changed, added or
// removed, so that the differ descends.
func (g *gen) mutate(v any, depth int) any {
	if g.next()%6 == 0 {
		return g.value(depth, false)
	}
	switch x := v.(type) {
	case map[string]any:
		if x[sigKey] != nil {
			return x
		}
		out := map[string]any{}
		for k, e := range x {
			if g.next()%7 != 0 {
				out[k] = g.mutate(e, depth+1)
			}
		}
		if g.next()%3 == 0 {
			out[g.word(false)] = g.value(depth+1, false)
		}
		return out
	case []any:
		out := make([]any, 0, len(x)+1)
		for _, e := range x {
			out = append(out, g.mutate(e, depth+1))
		}
		if g.next()%3 == 0 {
			out = append(out, g.value(depth+1, false))
		}
		return out
	}
	return v
}

// checkpoint writes v's secrets as a checkpoint does: their value as JSON
// text in plaintext.
func checkpoint(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x[sigKey] == sigSecret {
			text, _ := json.Marshal(x["value"])
			return map[string]any{sigKey: sigSecret, "plaintext": string(text)}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = checkpoint(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = checkpoint(e)
		}
		return out
	}
	return v
}

// FuzzRecordHidesSecrets makes a transform's, an invoke transform's or a
// migration's request and answer from random bytes, secrets anywhere in
// them, and checks that no record of the call, its changes and payloads
// included, holds any secret's text.
func FuzzRecordHidesSecrets(f *testing.F) {
	f.Add([]byte{0, 7, 3, 9, 1, 2, 3, 9, 3, 4, 5, 6})
	f.Add([]byte{1, 4, 3, 10, 2, 1, 8, 1, 7, 9, 9, 9, 3, 2, 1})
	f.Add([]byte{2, 3, 7, 3, 9, 10, 11, 5, 9, 3, 3, 3, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		kind := []string{"resource_transform", "invoke_transform", "state_migration"}[int(g.next())%3]
		before := g.object(0, false)
		after, _ := g.mutate(before, 0).(map[string]any)
		if after == nil {
			after = g.object(0, false)
		}
		var req, res proto.Message
		switch kind {
		case "resource_transform":
			req = &pulumirpc.TransformRequest{Name: "n", Properties: mustStruct(t, before)}
			res = &pulumirpc.TransformResponse{Properties: mustStruct(t, after)}
		case "invoke_transform":
			req = &pulumirpc.TransformInvokeRequest{Token: "t", Args: mustStruct(t, before)}
			res = &pulumirpc.TransformInvokeResponse{Args: mustStruct(t, after)}
		default:
			state := func(m map[string]any) []byte {
				b, err := json.Marshal([]any{map[string]any{"urn": "u", "outputs": checkpoint(m)}})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			req = &pulumirpc.StateMigrationRequest{Urn: "u", OldState: state(before)}
			res = &pulumirpc.StateMigrationResponse{NewState: state(after)}
		}
		e := &Exporter{limits: DefaultLimits, payloads: true}
		e.limits.Changes.Value = 40 // cuts values, where a secret must not show either
		for _, answer := range [][]byte{marshal(t, res), nil} {
			ev := event{call: Call{ID: "x-1", Kind: kind}, finished: true, answerEmpty: len(answer) == 0,
				end: End{}}
			ev.call.kept = &kept{request: marshal(t, req), answer: answer}
			r := e.record(&ev)
			for _, kv := range r.GetAttributes() {
				if s := kv.GetValue().GetStringValue(); strings.Contains(s, secretMark) {
					t.Fatalf("the record's %s holds a secret: %s", kv.GetKey(), s)
				}
			}
			if answer != nil && !hasAttr(r.GetAttributes(), AttrChanges) {
				t.Fatalf("no changes recorded: %v", r.GetAttributes())
			}
		}
	})
}

func hasAttr(a []*commonpb.KeyValue, k string) bool {
	for _, kv := range a {
		if kv.GetKey() == k {
			return true
		}
	}
	return false
}

// ReplayPair makes from random bytes, for the comparison with replay
// (replay_test.go), two property maps, the second the first changed:
// values replay's differ reads as this package does, no asset and no
// output value inside a secret.
func ReplayPair(data []byte) (before, after map[string]any) {
	g := &gen{b: data, rc: true}
	before = g.object(0, false)
	after, _ = g.mutate(before, 0).(map[string]any)
	if after == nil || after[sigKey] != nil {
		after = g.object(0, false)
	}
	return before, after
}
