package wire

import (
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// DecodeFrom decodes a property map, sharing its bytes (see [DecodeShared])
// when shared is set because they are never written again.
func DecodeFrom(b []byte, shared bool) (resource.PropertyMap, error) {
	if shared {
		return DecodeShared(b)
	}
	return Decode(b)
}

// Lazy is a property map that stays encoded until it is read: the
// properties of a resource transform or the arguments of an invoke
// transform. Its zero value is an empty map.
type Lazy struct {
	sent   bool // the request carried the map, or Set was given one
	m      resource.PropertyMap
	raw    []byte // the encoded map, while unread
	unread bool   // raw holds a map not decoded yet
	shared bool   // raw is never written again: decoded strings may share it
	err    error  // why raw did not decode
}

// Check checks the encoded map b and keeps it, to be decoded on first use;
// encodings that only a decode can judge are decoded now. With shared, b is
// never written again, and decoded strings may share it.
func (l *Lazy) Check(b []byte, shared bool) error {
	l.sent, l.shared = true, shared
	switch err := Validate(b); {
	case err == nil:
		l.raw, l.unread = b, true
		return nil
	case errors.Is(err, ErrMerged):
		l.m, err = DecodeFrom(b, shared)
		return err
	default:
		return err
	}
}

// Map returns the map, decoding it on the first call. Never nil.
func (l *Lazy) Map() resource.PropertyMap {
	if l.unread {
		l.unread = false
		l.m, l.err = DecodeFrom(l.raw, l.shared)
		l.raw = nil
	}
	if l.m == nil {
		l.m = resource.PropertyMap{}
	}
	return l.m
}

// Set replaces the map with m.
func (l *Lazy) Set(m resource.PropertyMap) { l.sent, l.unread, l.raw, l.m = m != nil, false, nil, m }

// Sent reports whether the request carried the map, or Set was given one.
func (l *Lazy) Sent() bool { return l.sent }

// Unread returns the encoded map and true while it has not been read.
func (l *Lazy) Unread() ([]byte, bool) { return l.raw, l.unread }

// Err is why the map did not decode when it was read, if it did not.
func (l *Lazy) Err() error { return l.err }
