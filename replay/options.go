package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"google.golang.org/protobuf/proto"

	"github.com/langhost/callbacks"
)

// An Option changes what [Run] does: [IgnorePaths], [RequireSameResources].
type Option interface {
	apply(*settings)
}

// settings is what a Run's options ask for.
type settings struct {
	ignore        []*pattern
	errs          []error // patterns that do not parse
	sameResources bool
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// IgnorePaths makes [Run] pass a difference at any of the given property
// paths, for values that change on every run: a time a transform stamps,
// a random suffix, a build number. An ignored difference is still logged
// (t.Logf), with the path that ignored it; a call whose every difference
// is ignored passes, and in update mode its recorded answer is kept.
//
// A path is written as the differences are printed ([Change]):
// "properties.tags.deployedAt", "options.protect", "args.x",
// "state[0].outputs.x", "retry", "refusal" (a resource hook's refusal). A
// key that is not a plain name is quoted, properties["a.b"]; an index is
// in brackets, properties.items[0]. A "*", as .* or [*], stands for any one
// key or index: "properties.tags.*", "properties.items[*].id". A path also
// covers everything below the value it names: "properties.tags" ignores
// "properties.tags.team". A difference is ignored only at or below a path:
// if a whole object is new or gone, its own path is the one printed.
// Differences that have no path (an error now and none then) are never
// ignored.
//
// A path that does not parse fails the test before the program runs. A
// path that names no value in any answer the replay compared, recorded or
// current, fails the test after the replay, so that a misspelt path is
// seen rather than silently ignoring nothing.
func IgnorePaths(paths ...string) Option {
	return optionFunc(func(s *settings) {
		for _, p := range paths {
			segs, err := parsePath(p)
			if err != nil {
				s.errs = append(s.errs, fmt.Errorf("IgnorePaths(%q): %w", p, err))
				continue
			}
			s.ignore = append(s.ignore, &pattern{text: p, segs: segs})
		}
	})
}

// RequireSameResources makes [Run] fail the test when the program
// registers a resource the recording lacks, or no longer registers one it
// recorded (a rename without an alias, a resource added or removed).
// Without it, Run reports these with t.Logf.
func RequireSameResources() Option {
	return optionFunc(func(s *settings) { s.sameResources = true })
}

// segKind is what a segment of a property path is.
type segKind uint8

const (
	segKey   segKind = iota // a key of an object
	segIndex                // an index of an array
	segAny                  // "*": any one key or index
)

// segment is one step of a property path.
type segment struct {
	kind segKind
	text string // the key, or the index in decimal
}

// pattern is one path IgnorePaths was given.
type pattern struct {
	text string
	segs []segment
}

// covers reports whether the path path lies at or below p.
func (p *pattern) covers(path []segment) bool {
	if len(path) < len(p.segs) {
		return false
	}
	for i, s := range p.segs {
		if s.kind != segAny && s != path[i] {
			return false
		}
	}
	return true
}

// parsePath splits a property path, written as Change.Path writes it,
// into its segments: a name, then .name, [index], ["quoted key"], [*] or
// .*, and [raw text] (a migration's successors[URN]).
func parsePath(s string) ([]segment, error) {
	if s == "" {
		return nil, errors.New("the path is empty")
	}
	var segs []segment
	i := 0
	for {
		j := i
		for j < len(s) && s[j] != '.' && s[j] != '[' {
			j++
		}
		switch {
		case j == i && j == len(s):
			return nil, errors.New("the path ends with \".\"")
		case j == i:
			return nil, fmt.Errorf("a name is missing before %q (byte %d)", s[j], j+1)
		}
		name := s[i:j]
		if strings.ContainsAny(name, `]"*`) && name != "*" {
			return nil, fmt.Errorf("%q is not a name: quote a key that is not a plain name, as in [\"a.b\"], and write a wildcard as .* or [*]", name)
		}
		if name == "*" {
			segs = append(segs, segment{kind: segAny})
		} else {
			segs = append(segs, segment{kind: segKey, text: name})
		}
		i = j
		for i < len(s) && s[i] == '[' {
			seg, n, err := bracket(s[i:])
			if err != nil {
				return nil, fmt.Errorf("%w (byte %d)", err, i+1)
			}
			segs = append(segs, seg)
			i += n
		}
		if i == len(s) {
			return segs, nil
		}
		if s[i] != '.' {
			return nil, fmt.Errorf("%q after \"]\" (byte %d): a segment starts with \".\" or \"[\"", s[i], i+1)
		}
		i++
	}
}

// bracket reads the segment in brackets at the start of s, which starts
// with "[", and returns it and its length.
func bracket(s string) (segment, int, error) {
	if strings.HasPrefix(s, `["`) {
		q, err := strconv.QuotedPrefix(s[1:])
		if err != nil {
			return segment{}, 0, errors.New(`a quoted key is not closed: write it as Go quotes it, as in ["a.b"]`)
		}
		key, _ := strconv.Unquote(q)
		end := 1 + len(q)
		if end >= len(s) || s[end] != ']' {
			return segment{}, 0, errors.New(`a quoted key is not followed by "]"`)
		}
		return segment{kind: segKey, text: key}, end + 1, nil
	}
	// Raw text runs to a "]" that ends the path or starts the next
	// segment, so that a URN holding "]" stays whole.
	end := -1
	for k := 1; k < len(s); k++ {
		if s[k] == ']' && (k+1 == len(s) || s[k+1] == '.' || s[k+1] == '[') {
			end = k
			break
		}
	}
	if end < 0 {
		return segment{}, 0, errors.New(`a "[" is not closed`)
	}
	text := s[1:end]
	switch {
	case text == "":
		return segment{}, 0, errors.New(`"[]" is empty: write an index, [*], or a quoted key`)
	case text == "*":
		return segment{kind: segAny}, end + 1, nil
	case strings.Trim(text, "0123456789") == "":
		i, err := strconv.Atoi(text)
		if err != nil {
			return segment{}, 0, fmt.Errorf("the index %s is too large", text)
		}
		return segment{kind: segIndex, text: strconv.Itoa(i)}, end + 1, nil
	}
	return segment{kind: segKey, text: text}, end + 1, nil
}

// answerTree is an answer as the tree its differences' paths walk, from
// their first segment ("properties", "options", "args", "state",
// "successors", "retry", "refusal", "error"), or nil if the payloads do not
// decode as the kind's messages.
func answerTree(kind callbacks.Kind, request, response []byte) map[string]any {
	row := rowOf(kind)
	if row == nil {
		return nil
	}
	req, res := row.messages()
	if proto.Unmarshal(request, req) != nil || proto.Unmarshal(response, res) != nil {
		return nil
	}
	return row.tree(req, res)
}

// present reports whether segs name a value in v, a tree of decoded JSON.
// A secret, an asset, an archive or a resource reference is a value
// without parts; an output value is the value it holds.
func present(segs []segment, v any) bool {
	if len(segs) == 0 {
		return true
	}
	s, rest := segs[0], segs[1:]
	switch v := v.(type) {
	case map[string]any:
		if mark, ok := v[sig.Key].(string); ok {
			inner, has := v["value"]
			return mark == sig.OutputValue && has && present(segs, inner)
		}
		switch s.kind {
		case segKey:
			x, ok := v[s.text]
			return ok && present(rest, x)
		case segAny:
			for _, x := range v {
				if present(rest, x) {
					return true
				}
			}
		}
	case []any:
		switch s.kind {
		case segIndex:
			i, err := strconv.Atoi(s.text)
			return err == nil && i < len(v) && present(rest, v[i])
		case segAny:
			for _, x := range v {
				if present(rest, x) {
					return true
				}
			}
		}
	}
	return false
}
