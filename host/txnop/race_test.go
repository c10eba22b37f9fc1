//go:build race

package txnop_test

// raceEnabled reports whether the tests run under the race detector, which
// slows them and changes allocation counts.
const raceEnabled = true
