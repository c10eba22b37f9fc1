package ledgerop

import (
	"bytes"
	"fmt"
	"strconv"
)

// Result is what the operator outputs for one event: see the package
// documentation for its text.
type Result struct {
	// Deposit tells a deposit from a transfer.
	Deposit bool
	// Committed tells whether the event's transaction committed.
	Committed bool
	// Balances are the balances the event read before changing them: a
	// deposit's account and book entry; a transfer's source account,
	// source book entry, destination account and destination book entry.
	Balances []Balance
}

// Balance is a balance an event read, or none (Read false) when the
// operation that reads it did not run.
type Balance struct {
	Value int64
	Read  bool
}

// Words of the text.
const (
	wordDeposit   = "deposit"
	wordTransfer  = "transfer"
	wordCommitted = "committed"
	wordAborted   = "aborted"
	wordUnread    = "-"
)

// AppendResult appends r's text to dst.
func AppendResult(dst []byte, r *Result) []byte {
	if r.Deposit {
		dst = append(dst, wordDeposit...)
	} else {
		dst = append(dst, wordTransfer...)
	}
	dst = append(dst, ' ')
	if r.Committed {
		dst = append(dst, wordCommitted...)
	} else {
		dst = append(dst, wordAborted...)
	}
	for _, b := range r.Balances {
		dst = append(dst, ' ')
		if !b.Read {
			dst = append(dst, wordUnread...)
			continue
		}
		dst = strconv.AppendInt(dst, b.Value, 10)
	}
	return dst
}

// ParseResult parses a Result written by AppendResult: a deposit with two
// balances or a transfer with four.
func ParseResult(b []byte) (Result, error) {
	f := bytes.Fields(b)
	var r Result
	if len(f) < 2 {
		return r, fmt.Errorf("ledger result %q: want a kind, an outcome and balances", b)
	}
	want := 4
	switch string(f[0]) {
	case wordDeposit:
		r.Deposit, want = true, 2
	case wordTransfer:
	default:
		return r, fmt.Errorf("ledger result %q: kind %q, want %s or %s", b, f[0], wordDeposit, wordTransfer)
	}
	switch string(f[1]) {
	case wordCommitted:
		r.Committed = true
	case wordAborted:
	default:
		return r, fmt.Errorf("ledger result %q: outcome %q, want %s or %s", b, f[1], wordCommitted, wordAborted)
	}
	if len(f)-2 != want {
		return r, fmt.Errorf("ledger result %q: %d balances, want %d for a %s", b, len(f)-2, want, f[0])
	}
	for _, w := range f[2:] {
		if string(w) == wordUnread {
			r.Balances = append(r.Balances, Balance{})
			continue
		}
		v, err := strconv.ParseInt(string(w), 10, 64)
		if err != nil {
			return r, fmt.Errorf("ledger result %q: balance %q: %w", b, w, err)
		}
		r.Balances = append(r.Balances, Balance{Value: v, Read: true})
	}
	return r, nil
}
