package join

import "errors"

var (
	// ErrSide is returned for a Side other than R and S.
	ErrSide = errors.New("join: side must be R or S")
	// ErrUnknown is returned by New for a name not in Algorithms.
	ErrUnknown = errors.New("join: unknown algorithm")
	// ErrOptions is returned by New for options a kernel cannot run with.
	ErrOptions = errors.New("join: invalid options")
)
