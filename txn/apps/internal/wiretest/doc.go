// Package wiretest checks the properties every event codec built on wire
// must have, so that each codec's tests state them in one line: a
// truncated or extended input is refused with a *wire.FieldError wrapping
// wire.ErrMalformed, and arbitrary bytes never make a decoder panic.
package wiretest
