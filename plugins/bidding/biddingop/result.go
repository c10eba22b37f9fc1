package biddingop

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/txn/apps/bidding/event"
)

// Result is what the operator outputs for one event: see the package
// documentation for its text.
type Result struct {
	// Kind is the event's kind.
	Kind event.Kind
	// Committed tells whether the event's transaction committed.
	Committed bool
	// Paid is what a committed buy paid; 0 for anything else.
	Paid int64
}

// Words of the text.
const (
	wordCommitted = "committed"
	wordAborted   = "aborted"
)

// AppendResult appends r's text to dst.
func AppendResult(dst []byte, r *Result) []byte {
	dst = append(dst, r.Kind.String()...)
	if !r.Committed {
		return append(append(dst, ' '), wordAborted...)
	}
	dst = append(append(dst, ' '), wordCommitted...)
	if r.Kind == event.Buy {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, r.Paid, 10)
	}
	return dst
}

// ParseResult parses a Result written by AppendResult.
func ParseResult(b []byte) (Result, error) {
	f := bytes.Fields(b)
	var r Result
	if len(f) < 2 {
		return r, fmt.Errorf("bidding result %q: want a kind and an outcome", b)
	}
	switch k := string(f[0]); k {
	case event.Buy.String():
		r.Kind = event.Buy
	case event.Alert.String():
		r.Kind = event.Alert
	case event.TopUp.String():
		r.Kind = event.TopUp
	default:
		return r, fmt.Errorf("bidding result %q: kind %q, want %s, %s or %s", b, k, event.Buy, event.Alert, event.TopUp)
	}
	switch string(f[1]) {
	case wordCommitted:
		r.Committed = true
	case wordAborted:
	default:
		return r, fmt.Errorf("bidding result %q: outcome %q, want %s or %s", b, f[1], wordCommitted, wordAborted)
	}
	want := 2
	if r.Committed && r.Kind == event.Buy {
		want = 3
	}
	if len(f) != want {
		return r, fmt.Errorf("bidding result %q: %d words, want %d", b, len(f), want)
	}
	if want == 3 {
		var err error
		if r.Paid, err = strconv.ParseInt(string(f[2]), 10, 64); err != nil {
			return r, fmt.Errorf("bidding result %q: amount paid %q: %w", b, f[2], err)
		}
	}
	return r, nil
}
