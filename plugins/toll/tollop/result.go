package tollop

import (
	"bytes"
	"fmt"
	"strconv"
)

// Result is what the operator outputs for one event: see the package
// documentation for its text.
type Result struct {
	// Committed tells whether the report's transaction committed.
	Committed bool
	// Average is the segment's average speed after a committed report;
	// its text has two decimals.
	Average float64
	// Vehicles is the segment's number of distinct vehicles after a
	// committed report.
	Vehicles int
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
	dst = append(dst, ' ')
	dst = strconv.AppendFloat(dst, r.Average, 'f', 2, 64)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, int64(r.Vehicles), 10)
}

// ParseResult parses a Result written by AppendResult.
func ParseResult(b []byte) (Result, error) {
	f := bytes.Fields(b)
	var r Result
	switch {
	case len(f) == 1 && string(f[0]) == wordAborted:
		return r, nil
	case len(f) != 3 || string(f[0]) != wordCommitted:
		return r, fmt.Errorf("toll result %q: want %q or %q", b, wordAborted, wordCommitted+" <average> <vehicles>")
	}
	r.Committed = true
	var err error
	if r.Average, err = strconv.ParseFloat(string(f[1]), 64); err != nil {
		return r, fmt.Errorf("toll result %q: average %q: %w", b, f[1], err)
	}
	if r.Vehicles, err = strconv.Atoi(string(f[2])); err != nil {
		return r, fmt.Errorf("toll result %q: vehicles %q: %w", b, f[2], err)
	}
	return r, nil
}
