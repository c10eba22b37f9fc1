package grepsumop

import (
	"bytes"
	"fmt"
	"strconv"
)

// Result is what the operator outputs for one event: see the package
// documentation for its text.
type Result struct {
	// Committed tells whether the event's transaction committed.
	Committed bool
	// Writes are a committed event's writes, in operation order; an
	// aborted event has none.
	Writes []Write
}

// Write is one key written and its new value.
type Write struct {
	Key   uint32
	Value int64
}

// Words of the text.
const (
	wordCommitted = "committed"
	wordAborted   = "aborted"
)

// AppendResult appends r's text to dst.
func AppendResult(dst []byte, r *Result) []byte {
	if !r.Committed {
		return append(dst, wordAborted...)
	}
	dst = append(dst, wordCommitted...)
	for _, w := range r.Writes {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, uint64(w.Key), 10)
		dst = append(dst, '=')
		dst = strconv.AppendInt(dst, w.Value, 10)
	}
	return dst
}

// ParseResult parses a Result written by AppendResult.
func ParseResult(b []byte) (Result, error) {
	f := bytes.Fields(b)
	var r Result
	if len(f) == 0 {
		return r, fmt.Errorf("grepsum result %q: empty, want an outcome", b)
	}
	switch string(f[0]) {
	case wordAborted:
		if len(f) > 1 {
			return r, fmt.Errorf("grepsum result %q: writes after %s", b, wordAborted)
		}
		return r, nil
	case wordCommitted:
		r.Committed = true
	default:
		return r, fmt.Errorf("grepsum result %q: outcome %q, want %s or %s", b, f[0], wordCommitted, wordAborted)
	}
	for _, w := range f[1:] {
		k, v, ok := bytes.Cut(w, []byte("="))
		if !ok {
			return r, fmt.Errorf("grepsum result %q: write %q, want key=value", b, w)
		}
		key, err := strconv.ParseUint(string(k), 10, 32)
		if err != nil {
			return r, fmt.Errorf("grepsum result %q: key %q: %w", b, k, err)
		}
		val, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return r, fmt.Errorf("grepsum result %q: value %q: %w", b, v, err)
		}
		r.Writes = append(r.Writes, Write{Key: uint32(key), Value: val})
	}
	return r, nil
}
