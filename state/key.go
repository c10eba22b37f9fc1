package state

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"
)

// Key is a namespaced state key: the routing key that picks the key group
// (KeyGroup(Route, n)) and owns the entry, a namespace that separates the
// tables, windows and timers kept for one routing key, and the user key
// within that namespace.
//
// Key{Route: k} (namespace and user key empty) is the plain key k, the one
// Session.Get, Put and Delete use. Every key of one routing key lives in
// that routing key's key group, whatever its namespace and user key, so a
// key group moves with all of it.
type Key struct {
	Route     []byte
	Namespace []byte
	User      []byte
}

// plain reports whether k is a plain key.
func (k Key) plain() bool { return len(k.Namespace) == 0 && len(k.User) == 0 }

// String returns k in the form the state dumps use for namespaced keys:
// route, namespace and user key quoted with Go syntax and joined by "/".
func (k Key) String() string {
	return fmt.Sprintf("%q/%q/%q", k.Route, k.Namespace, k.User)
}

// The key encoding, used in memory for namespaced keys and in Pebble for
// every key (doc.go): route and namespace are escaped (0x00 becomes
// 0x00 0xff) and each is followed by the terminator 0x00 0x01; the user key
// follows as is. Comparing encodings byte by byte orders keys by (route,
// namespace, user), and the encodings of one route, or of one route and
// namespace, share a prefix.
const (
	escByte  = 0x00
	escZero  = 0xff // 0x00 0xff: a zero byte of the route or namespace
	escTerm  = 0x01 // 0x00 0x01: the end of the route or namespace
	minTuple = 4    // the encoding of Key{}: two terminators
)

// errBadKey is the cause of a key encoding that cannot be decoded.
var errBadKey = errors.New("malformed key encoding")

// appendEscaped appends b with its zero bytes escaped.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, escByte)
		if i < 0 {
			return append(dst, b...)
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, escZero)
		b = b[i+1:]
	}
}

// appendComponent appends b escaped and terminated.
func appendComponent(dst, b []byte) []byte {
	return append(appendEscaped(dst, b), escByte, escTerm)
}

// appendKey appends the encoding of (route, namespace, user).
func appendKey(dst, route, namespace, user []byte) []byte {
	dst = appendComponent(dst, route)
	dst = appendComponent(dst, namespace)
	return append(dst, user...)
}

// appendRouteKey appends the encoding of the plain key route.
func appendRouteKey(dst []byte, route string) []byte {
	return appendKey(dst, unsafe.Slice(unsafe.StringData(route), len(route)), nil, nil)
}

// splitComponent returns the first component of enc, unescaped, and the
// rest after its terminator. The component aliases enc unless it holds an
// escaped zero byte.
func splitComponent(enc []byte) (comp, rest []byte, err error) {
	escaped := false
	for i := 0; ; {
		j := bytes.IndexByte(enc[i:], escByte)
		if j < 0 || i+j+1 >= len(enc) {
			return nil, nil, errBadKey
		}
		i += j
		switch enc[i+1] {
		case escTerm:
			comp = enc[:i:i]
			if escaped {
				comp = unescape(comp)
			}
			return comp, enc[i+2:], nil
		case escZero:
			escaped = true
			i += 2
		default:
			return nil, nil, errBadKey
		}
	}
}

// unescape returns a copy of b with its escaped zero bytes restored.
func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for {
		k := bytes.IndexByte(b, escByte)
		if k < 0 {
			return append(out, b...)
		}
		out = append(out, b[:k+1]...)
		b = b[k+2:]
	}
}

// decodeKey splits a key encoding into route, namespace and user key. The
// parts alias enc unless they hold escaped bytes.
func decodeKey(enc []byte) (Key, error) {
	route, rest, err := splitComponent(enc)
	if err != nil {
		return Key{}, fmt.Errorf("key %x: %w", enc, err)
	}
	ns, user, err := splitComponent(rest)
	if err != nil {
		return Key{}, fmt.Errorf("key %x: %w", enc, err)
	}
	return Key{Route: route, Namespace: ns, User: user}, nil
}

// bytesOf returns the bytes of s without copying; they must not be
// modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
