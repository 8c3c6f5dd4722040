package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/langhost/callbacks/replay"
)

// minSecret is the length in bytes from which a secret value is also looked
// for inside longer strings. A shorter secret ("dev", "1", "on") is hidden
// only where a whole string equals it: looked for inside longer strings, it
// would blank out parts of names, URNs and messages that merely contain it.
// replay.Scrub draws the same line.
const minSecret = 6

// hidden is what a secret value is printed as.
const hidden = "[secret]"

// secretSet is the secret values a log holds: every string (and number)
// inside a value the log marks secret, in any call's payloads.
type secretSet map[string]bool

// collect adds the secret values of c's payloads: transform properties and
// invoke arguments, hook inputs and outputs, migration states, and whatever
// the protocol adds, found by walking the decoded messages.
func (s secretSet) collect(c *replay.Call) {
	req, res, err := c.Messages()
	if err != nil {
		return // the call is shown as a payload that does not decode
	}
	if req != nil {
		s.message(req.ProtoReflect())
	}
	if res != nil {
		s.message(res.ProtoReflect())
	}
}

func (s secretSet) message(m protoreflect.Message) {
	switch v := m.Interface().(type) {
	case *structpb.Struct:
		s.json(v.AsMap(), false)
		return
	case *structpb.Value:
		s.json(v.AsInterface(), false)
		return
	case *structpb.ListValue:
		s.json(v.AsSlice(), false)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				s.field(fd, l.Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				s.field(fd.MapValue(), mv)
				return true
			})
		default:
			s.field(fd, v)
		}
		return true
	})
}

func (s secretSet) field(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		s.message(v.Message())
	case protoreflect.BytesKind:
		// A migration's state is JSON in bytes.
		var x any
		if json.Unmarshal(v.Bytes(), &x) == nil {
			s.json(x, false)
		}
	}
}

// json adds the values inside v's secrets; under a secret (inSecret), every
// string and number is one.
func (s secretSet) json(v any, inSecret bool) {
	switch v := v.(type) {
	case map[string]any:
		if !inSecret {
			switch v[sig.Key] {
			case sig.Secret: // a property value's envelope, or a checkpoint's
				if p, ok := v["plaintext"].(string); ok {
					var x any
					if json.Unmarshal([]byte(p), &x) == nil {
						s.json(x, true)
					} else {
						s.add(p)
					}
				}
				s.json(v["value"], true)
				return
			case sig.OutputValue:
				if secret, _ := v["secret"].(bool); secret {
					s.json(v["value"], true)
					return
				}
			}
		}
		for k, x := range v {
			if k != sig.Key {
				s.json(x, inSecret)
			}
		}
	case []any:
		for _, x := range v {
			s.json(x, inSecret)
		}
	case string:
		if inSecret {
			s.add(v)
		}
	case float64:
		if inSecret {
			s.add(strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
}

func (s secretSet) add(v string) {
	if v != "" {
		s[v] = true
	}
}

// redactor hides a log's secret values in the strings of its account.
type redactor struct {
	exact map[string]bool // strings that are a secret whole
	long  []string        // the forms of the secrets of minSecret bytes or more, longest first
}

// redactor returns what hides s's values: each as it is, and as the account
// may print it quoted (strconv.Quote, as a changed property's value) or in
// JSON (an option's or a migration state's value).
func (s secretSet) redactor() *redactor {
	r := &redactor{exact: map[string]bool{}}
	seen := map[string]bool{}
	for v := range s {
		forms := []string{v, quoteInner(v), jsonInner(v, true), jsonInner(v, false)}
		for _, f := range forms {
			r.exact[f] = true
			r.exact[`"`+f+`"`] = true
			if len(v) >= minSecret && f != "" && !seen[f] {
				seen[f] = true
				r.long = append(r.long, f)
			}
		}
	}
	slices.SortFunc(r.long, func(a, b string) int { return len(b) - len(a) })
	return r
}

func quoteInner(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}

func jsonInner(v string, escapeHTML bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	if enc.Encode(v) != nil {
		return v
	}
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

// str returns s with every secret in it replaced by "[secret]": s whole if
// it is a secret, and each stretch of it that a long secret covers.
func (r *redactor) str(s string) string {
	if s == "" || s == hidden {
		return s
	}
	if r.exact[s] {
		return hidden
	}
	var cover []bool
	for _, v := range r.long {
		if len(v) > len(s) {
			continue
		}
		for i := 0; ; {
			j := strings.Index(s[i:], v)
			if j < 0 {
				break
			}
			if cover == nil {
				cover = make([]bool, len(s))
			}
			for k := i + j; k < i+j+len(v); k++ {
				cover[k] = true
			}
			i += j + 1
		}
	}
	if cover == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !cover[i] {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(hidden)
		for i < len(s) && cover[i] {
			i++
		}
	}
	return b.String()
}

// redact hides the secrets in every string of the account that came from
// the log. The words of the account's own (a kind, an outcome) are left.
func (r *redactor) redact(recs []*record, problems []problem) {
	for _, rec := range recs {
		for _, p := range []*string{&rec.Registration, &rec.Method, &rec.HookName, &rec.URN, &rec.Type,
			&rec.Name, &rec.Invoke, &rec.Err, &rec.Message, &rec.Op, &rec.Note, &rec.Given, &rec.Provider} {
			*p = r.str(*p)
		}
		for i := range rec.Changes {
			ch := &rec.Changes[i]
			ch.Path, ch.Old, ch.New = r.str(ch.Path), r.str(ch.Old), r.str(ch.New)
			ch.OldValue, ch.NewValue = r.value(ch.OldValue), r.value(ch.NewValue)
		}
		if p := rec.Payload; p != nil {
			rec.Payload = &exchange{Request: r.value(p.Request), Answer: r.value(p.Answer),
				RequestMissing: p.RequestMissing, AnswerMissing: p.AnswerMissing}
		}
	}
	for i := range problems {
		problems[i].Reason = r.str(problems[i].Reason)
	}
}

// deployment hides the secrets in what the account says of the deployment
// around the calls: who ran it, and its runs' errors.
func (r *redactor) deployment(d *deployment) {
	for _, p := range []*string{&d.Project, &d.Stack, &d.Organization, &d.CLI, &d.SDK} {
		*p = r.str(*p)
	}
	for _, run := range d.Runs {
		run.Err, run.Program = r.str(run.Err), r.str(run.Program)
	}
	for _, rp := range d.Plans {
		for i := range rp.Unbound {
			rp.Unbound[i] = r.str(rp.Unbound[i])
		}
		for _, p := range rp.Resources {
			for _, s := range []*string{&p.URN, &p.Type, &p.Name, &p.Why, &p.CannotTell} {
				*s = r.str(*s)
			}
			for i := range p.Hooks {
				h := &p.Hooks[i]
				h.Name, h.Step, h.Note = r.str(h.Name), r.str(h.Step), r.str(h.Note)
			}
		}
	}
}

// value returns v with the secrets hidden in a copy: a string or number
// that is a secret whole becomes a hidden secret, a longer string has each
// secret in it replaced by "[secret]", and so has every key. A value is
// copied rather than changed, since a change's values are also inside the
// call's request and answer, and hiding twice is not hiding once.
func (r *redactor) value(v *value) *value {
	if v == nil {
		return nil
	}
	switch v.kind {
	case vString, vNumber:
		if r.exact[v.text] {
			return &value{kind: vSecret}
		}
		if v.kind == vString {
			return strValue(r.str(v.text))
		}
		return v
	case vNull, vBool, vUnknown, vSecret:
		// A secret here is hidden: the redactor runs only without -secrets.
		return v
	}
	out := &value{kind: v.kind}
	seen := map[string]int{}
	for i, k := range v.keys {
		k = r.str(k)
		if seen[k]++; seen[k] > 1 {
			k += " #" + strconv.Itoa(seen[k]) // two keys that hide the same way
		}
		out.keys = append(out.keys, k)
		out.elems = append(out.elems, r.value(v.elems[i]))
	}
	for _, e := range v.elems[len(v.keys):] {
		out.elems = append(out.elems, r.value(e))
	}
	return out
}
